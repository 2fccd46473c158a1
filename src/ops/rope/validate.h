// validate.h — the rule checks the RoPE operators share. Each check is one rule with one status code and one
// message "<param> <rule>, got <value>"; the op files (prepare_*.cpp) list their rules in spec order.
#ifndef TXOPS_OPS_ROPE_VALIDATE_H_
#define TXOPS_OPS_ROPE_VALIDATE_H_

#include <cstdint>

#include "core/view_checks.h"
#include "txops/txops.h"

// Returns the failed Status of a check from the enclosing function.
#define ROPE_CHECK(expr)                              \
  do {                                                \
    ::txops::Status rope_check_status_ = (expr);      \
    if (!rope_check_status_.ok()) return rope_check_status_; \
  } while (0)

namespace txops {
namespace rope {

// A view with elements must have data -> else 161001.
Status check_data(const TensorView& v, const char* name);
// dtype in {fp32, fp16, bf16} -> else 161002.
Status check_float_dtype(const TensorView& v, const char* name);
// v.dtype == want (the dtype of `want_name`) -> else 161002.
Status check_dtype_equals(const TensorView& v, const char* name, DType want, const char* want_name);
// cos/sin dtype: fp32 or x's dtype (txops); x's dtype only under TXOPS_COMPAT=cann -> else 161002.
Status check_cos_dtype(const TensorView& cos, const char* cos_name, const TensorView& x, const char* x_name);
// v.ndim == rank -> else `code`.
Status check_rank(const TensorView& v, const char* name, int rank, StatusCode code);
// Same shape as `ref` -> else `code`.
Status check_shape_equals(const TensorView& v, const char* name, const TensorView& ref, const char* ref_name,
                          StatusCode code);
// v.shape[dim] == want -> else `code` ("cos dim 1 (N) must be 1, got 4").
Status check_dim(const TensorView& v, const char* name, int dim, const char* dim_name, int64_t want,
                 StatusCode code);
// v.shape[dim] in {1, full} -> else `code`.
Status check_dim_one_or(const TensorView& v, const char* name, int dim, const char* dim_name, int64_t full,
                        StatusCode code);
// Head dim: even, 2 <= d <= 1024 -> else `code`.
Status check_head_dim(const TensorView& v, const char* name, int dim, StatusCode code);

// TXOPS_COMPAT=cann: CANN's kernels take contiguous tensors only -> 161002.
Status check_contiguous(const TensorView& v, const char* name);


}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_VALIDATE_H_
