// view_checks.cpp — output writability and input/output overlap rules (see view_checks.h).
#include "core/view_checks.h"

#include <cstdlib>
#include <utility>

#include "core/status.h"

namespace txops {

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
  const int64_t size = static_cast<int64_t>(dtype_size(v.dtype));
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
  // Only dense views are judged (their address ranges are exactly their elements); see view_checks.h.
  if (!(out.is_contiguous() && in.is_contiguous())) return Status();
  return fail(StatusCode::kParamInvalid, "%s must not partially overlap %s, got memory offset %lld bytes", out_name,
              in_name, static_cast<long long>(static_cast<intptr_t>(out_span.first - in_span.first)));
}

}  // namespace txops
