/* aclnn_rotary_position_embedding.h — RotaryPositionEmbedding: out = x * cos + rot(x) * sin (torch_npu.npu_rotary_mul; mode 0 half, 1 interleave, 2 quarter, 3 interleave-half). */
#ifndef TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_H_
#define TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRotaryPositionEmbeddingGetWorkspaceSize(const aclTensor* x, const aclTensor* cos,
                                                                   const aclTensor* sin, int64_t mode, aclTensor* out,
                                                                   uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRotaryPositionEmbedding(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
