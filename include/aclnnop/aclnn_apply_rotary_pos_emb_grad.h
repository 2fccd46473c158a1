/* aclnn_apply_rotary_pos_emb_grad.h — ApplyRotaryPosEmbGrad: fused backward of ApplyRotaryPosEmb for query and key, with gradCos/gradSin when query and key are given. */
#ifndef TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_GRAD_H_
#define TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnApplyRotaryPosEmbGradGetWorkspaceSize(
    const aclTensor* gradQueryEmbed, const aclTensor* gradKeyEmbed, const aclTensor* cos, const aclTensor* sin,
    const aclTensor* queryOptional, const aclTensor* keyOptional, char* rotaryModeOptional, int64_t layout,
    const aclTensor* gradQueryOut, const aclTensor* gradKeyOut, const aclTensor* gradCosOut,
    const aclTensor* gradSinOut, uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnApplyRotaryPosEmbGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
