/* aclnn_rotary_position_embedding_grad.h — RotaryPositionEmbeddingGrad: dx of RotaryPositionEmbedding, and dcos / dsin reduced over the broadcast axes when xOptional is given. */
#ifndef TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_GRAD_H_
#define TXOPS_ACLNNOP_ROTARY_POSITION_EMBEDDING_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(
    const aclTensor* dy, const aclTensor* cos, const aclTensor* sin, const aclTensor* xOptional, int64_t mode,
    const aclTensor* dxOut, const aclTensor* dcosOut, const aclTensor* dsinOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRotaryPositionEmbeddingGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
