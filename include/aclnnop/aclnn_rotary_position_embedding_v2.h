/* aclnn_rotary_position_embedding_v2.h — RotaryPositionEmbeddingV2: as RotaryPositionEmbedding, or with rot(x) = x @ rotate when a (D, D) rotate matrix is given. */
#ifndef TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_V2_H_
#define TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRotaryPositionEmbeddingV2GetWorkspaceSize(const aclTensor* x, const aclTensor* cos,
                                                                     const aclTensor* sin, int64_t mode,
                                                                     const aclTensor* rotate, aclTensor* out,
                                                                     uint64_t* workspaceSize,
                                                                     aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRotaryPositionEmbeddingV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
