// plan.h — phase one's planning step for the RoPE operators, after validation: rows and cos/sin broadcast
// strides (args.h), the kernel for the active ISA, the thread count, non-temporal stores or not, and the
// closure PreparedOp::run that executes the plan (captured by value) and logs it under TXOPS_VERBOSE.
#ifndef TXOPS_OPS_ROPE_PLAN_H_
#define TXOPS_OPS_ROPE_PLAN_H_

#include "core/prepared_op.h"
#include "ops/rope/args.h"

namespace txops {
namespace rope {

// Rows of `in` -> `out` (same shape; all dims but the last are row coordinates, at most three), rotating
// channels [first, first + width) of each row; cos/sin (same rank) broadcast along their size-1 dims and
// start at their own channel 0.
void fill_row_stream(const TensorView& in, const TensorView& out, const TensorView& cos, const TensorView& sin,
                     int64_t first, RowStream* stream);

// The grouping of the fused backward (gradCos/gradSin): group dims are cos's dims of size > 1, member dims
// the others; `side` 0 is (grad_query_embed, grad_query, query), 1 the key triple.
void fill_grad_side(const TensorView& in, const TensorView& out, const TensorView& x, const TensorView& cos,
                    int side, GradJob* job);
void fill_grad_groups(const TensorView& cos, const TensorView& sin, const TensorView& dcos, const TensorView& dsin,
                      GradJob* job);

// Completes `job` (kernel, threads, streaming; updated in place) and sets op->run, which holds a copy.
// `out_of_place_bytes` is the size of the outputs written out of place (0 in place): large ones get
// non-temporal stores. `shape_of` is shown by verbose logs.
Status plan_rows(const char* op_name, RowJob& job, uint64_t out_of_place_bytes, const TensorView& shape_of,
                 PreparedOp* op);
Status plan_grad_groups(const char* op_name, GradJob& job, uint64_t out_of_place_bytes, const TensorView& shape_of,
                        PreparedOp* op);
// A validated call with nothing to do (start == end, empty tensors).
void plan_nothing(PreparedOp* op);

}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_PLAN_H_
