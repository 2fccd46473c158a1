// validate.h — the rule checks the RoPE operators share. Each check is one rule with one status code and one
// message "<param> <rule>, got <value>"; the op files (prepare_*.cpp) list their rules in spec order.
#ifndef TXOPS_OPS_ROPE_VALIDATE_H_
#define TXOPS_OPS_ROPE_VALIDATE_H_

#include <cstdint>

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

// An output must not write one element twice: no stride-0 (broadcast) or self-overlapping dims -> 161002.
Status check_writable(const TensorView& out, const char* name);
// The bytes a view touches, computed once per tensor for the overlap checks (empty views touch nothing).
struct ViewSpan {
  uintptr_t first = 0, last = 0;
  bool empty = true;
};
ViewSpan span_of(const TensorView& v);

// `out` and `in` are either the exact same view (allowed when `alias_ok`), or disjoint. Partial overlap is
// detected for dense (contiguous) views, where it is exactly an address-range intersection; strided views
// sharing memory are trusted (slices of a fused qkv buffer interleave legally) and not checked.
Status check_no_overlap(const TensorView& out, const ViewSpan& out_span, const char* out_name, const TensorView& in,
                        const ViewSpan& in_span, const char* in_name, bool alias_ok);
inline Status check_no_overlap(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                               bool alias_ok) {
  return check_no_overlap(out, span_of(out), out_name, in, span_of(in), in_name, alias_ok);
}
// TXOPS_COMPAT=cann: CANN's kernels take contiguous tensors only -> 161002.
Status check_contiguous(const TensorView& v, const char* name);

bool same_view(const TensorView& a, const TensorView& b);
bool has_zero_extent(const TensorView& v);

}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_VALIDATE_H_
