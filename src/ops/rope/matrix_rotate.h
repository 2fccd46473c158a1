// matrix_rotate.h — aclnnRotaryPositionEmbeddingV2 with its `rotate` matrix: y = x * cos + (x @ rotate) * sin
// per row, for any (D, D) matrix the caller builds (a signed permutation for half / interleave, block-diagonal
// ones for split heads). Planned after validation (prepare_general.cpp); the kernel is matrix_rotate.cpp.
#ifndef TXOPS_OPS_ROPE_MATRIX_ROTATE_H_
#define TXOPS_OPS_ROPE_MATRIX_ROTATE_H_

#include "core/prepared_op.h"
#include "ops/rope/args.h"

namespace txops {
namespace rope {

// Rows of `stream` (x -> out with cos/sin broadcast, as for the row kernels) rotated through `rotate`
// (D, D, any strides, dtype of x). The matrix is read at run time (phase two), like every input.
Status plan_matrix_rows(const RotationConfig& config, const RowStream& stream, const TensorView& rotate,
                        const TensorView& shape_of, PreparedOp* op);

}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_MATRIX_ROTATE_H_
