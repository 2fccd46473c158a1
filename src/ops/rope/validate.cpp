// validate.cpp — the shared RoPE rule checks (see validate.h): one rule, one code, one message each.
#include "ops/rope/validate.h"

#include <utility>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/dtype.h"
#include "core/status.h"
#include "core/view_extent.h"
#include "ops/rope/args.h"

namespace txops {
namespace rope {

Status check_data(const TensorView& v, const char* name) {
  ROPE_CHECK(check_view_extent(v, name));  // first: every later rule does arithmetic on shape and strides
  if (v.data != nullptr || has_zero_extent(v)) return Status();
  return fail(StatusCode::kNullptr, "%s data must not be null, got nullptr for shape %s", name,
              v.shape_string().c_str());
}

Status check_float_dtype(const TensorView& v, const char* name) {
  if (is_float_dtype(v.dtype)) return Status();
  return fail(StatusCode::kParamInvalid, "%s dtype must be fp32, fp16 or bf16, got %s", name, dtype_name(v.dtype));
}

Status check_dtype_equals(const TensorView& v, const char* name, DType want, const char* want_name) {
  if (v.dtype == want) return Status();
  return fail(StatusCode::kParamInvalid, "%s dtype must equal %s dtype (%s), got %s", name, want_name,
              dtype_name(want), dtype_name(v.dtype));
}

Status check_rank(const TensorView& v, const char* name, int rank, StatusCode code) {
  if (v.ndim == rank) return Status();
  return fail(code, "%s rank must be %d, got %d", name, rank, v.ndim);
}

Status check_shape_equals(const TensorView& v, const char* name, const TensorView& ref, const char* ref_name,
                          StatusCode code) {
  bool same = v.ndim == ref.ndim;
  for (int d = 0; same && d < v.ndim; ++d) same = v.shape[d] == ref.shape[d];
  if (same) return Status();
  return fail(code, "%s shape must equal %s shape %s, got %s", name, ref_name, ref.shape_string().c_str(),
              v.shape_string().c_str());
}

Status check_dim(const TensorView& v, const char* name, int dim, const char* dim_name, int64_t want,
                 StatusCode code) {
  if (v.shape[dim] == want) return Status();
  return fail(code, "%s dim %d (%s) must be %lld, got %lld", name, dim, dim_name, static_cast<long long>(want),
              static_cast<long long>(v.shape[dim]));
}

Status check_dim_one_or(const TensorView& v, const char* name, int dim, const char* dim_name, int64_t full,
                        StatusCode code) {
  if (v.shape[dim] == 1 || v.shape[dim] == full) return Status();
  return fail(code, "%s dim %d (%s) must be 1 or %lld, got %lld", name, dim, dim_name, static_cast<long long>(full),
              static_cast<long long>(v.shape[dim]));
}

Status check_head_dim(const TensorView& v, const char* name, int dim, StatusCode code) {
  const int64_t d = v.shape[dim];
  if (d >= 2 && d <= kMaxWidth && d % 2 == 0) return Status();
  return fail(code, "%s dim %d (D) must be even and in [2, %lld], got %lld", name, dim,
              static_cast<long long>(kMaxWidth), static_cast<long long>(d));
}

bool has_zero_extent(const TensorView& v) {
  for (int d = 0; d < v.ndim; ++d) {
    if (v.shape[d] == 0) return true;
  }
  return false;
}

Status check_writable(const TensorView& out, const char* name) {
  if (has_zero_extent(out)) return Status();
  // Dims of size > 1 sorted by |stride|: each stride must step past everything the smaller dims span.
  int order[kMaxDims];
  int n = 0;
  for (int d = 0; d < out.ndim; ++d) {
    if (out.shape[d] > 1) order[n++] = d;
  }
  for (int i = 1; i < n; ++i) {  // insertion sort by |stride| (at most kMaxDims entries)
    for (int j = i; j > 0 && std::llabs(out.strides[order[j]]) < std::llabs(out.strides[order[j - 1]]); --j) {
      std::swap(order[j], order[j - 1]);
    }
  }
  int64_t span = 0;  // elements covered by the smaller dims, minus one
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    const int64_t stride = std::llabs(out.strides[d]);
    if (stride == 0) {
      return fail(StatusCode::kParamInvalid, "%s dim %d must not broadcast (stride 0) in an output, got size %lld",
                  name, d, static_cast<long long>(out.shape[d]));
    }
    if (stride <= span) {
      return fail(StatusCode::kParamInvalid,
                  "%s dim %d stride must exceed the span of the smaller dims (%lld) in an output, got %lld", name, d,
                  static_cast<long long>(span), static_cast<long long>(out.strides[d]));
    }
    span += stride * (out.shape[d] - 1);
  }
  return Status();
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.shape[d] != b.shape[d]) return false;
    if (a.shape[d] > 1 && a.strides[d] != b.strides[d]) return false;
  }
  return true;
}

ViewSpan span_of(const TensorView& v) {
  ViewSpan span;
  if (has_zero_extent(v)) return span;
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < v.ndim; ++d) {
    const int64_t reach = v.strides[d] * (v.shape[d] - 1);
    if (reach < 0) lo += reach; else hi += reach;
  }
  const int64_t size = v.dtype == DType::kF32 ? 4 : v.dtype == DType::kF64 ? 8 : 2;  // validated float dtypes
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data);
  span.first = base + static_cast<uintptr_t>(lo * size);
  span.last = base + static_cast<uintptr_t>(hi * size + size - 1);
  span.empty = false;
  return span;
}

Status check_no_overlap(const TensorView& out, const ViewSpan& out_span, const char* out_name, const TensorView& in,
                        const ViewSpan& in_span, const char* in_name, bool alias_ok) {
  if (out_span.empty || in_span.empty) return Status();
  if (out_span.last < in_span.first || in_span.last < out_span.first) return Status();  // the common case
  if (same_view(out, in)) {
    if (alias_ok) return Status();
    return fail(StatusCode::kParamInvalid, "%s must not alias %s, got the same memory", out_name, in_name);
  }
  // Only dense views are judged (their address ranges are exactly their elements); see validate.h.
  if (!(out.is_contiguous() && in.is_contiguous())) return Status();
  return fail(StatusCode::kParamInvalid, "%s must not partially overlap %s, got memory offset %lld bytes", out_name,
              in_name, static_cast<long long>(static_cast<intptr_t>(out_span.first - in_span.first)));
}

Status check_contiguous(const TensorView& v, const char* name) {
  if (v.is_contiguous()) return Status();
  std::string strides = "(";
  for (int d = 0; d < v.ndim; ++d) strides += (d ? ", " : "") + std::to_string(v.strides[d]);
  strides += ")";
  return fail(StatusCode::kParamInvalid, "%s must be contiguous under TXOPS_COMPAT=cann, got strides %s", name,
              strides.c_str());
}

}  // namespace rope
}  // namespace txops
