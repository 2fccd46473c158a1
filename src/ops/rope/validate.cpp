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

Status check_cos_dtype(const TensorView& cos, const char* cos_name, const TensorView& x, const char* x_name) {
  ROPE_CHECK(check_float_dtype(cos, cos_name));
  if (cos.dtype == x.dtype) return Status();
  if (compat_mode() == Compat::kCann) return check_dtype_equals(cos, cos_name, x.dtype, x_name);
  if (cos.dtype == DType::kF32) return Status();
  return fail(StatusCode::kParamInvalid, "%s dtype must be fp32 or equal %s dtype (%s), got %s", cos_name, x_name,
              dtype_name(x.dtype), dtype_name(cos.dtype));
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
