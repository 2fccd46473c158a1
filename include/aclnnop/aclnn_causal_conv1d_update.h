/* aclnn_causal_conv1d_update.h — CausalConv1dUpdate (the causal conv of a decode step, speculative tokens
   included, on conv states in a cache indexed per sequence); see docs/causal_conv1d.md. */
#ifndef TXOPS_ACLNNOP_CAUSAL_CONV1D_UPDATE_H_
#define TXOPS_ACLNNOP_CAUSAL_CONV1D_UPDATE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnCausalConv1dUpdateGetWorkspaceSize(
    const aclTensor* x, const aclTensor* weight, aclTensor* convStatesRef, const aclTensor* biasOptional,
    const aclTensor* queryStartLocOptional, const aclTensor* cacheIndicesOptional,
    const aclTensor* numAcceptedTokensOptional, const aclTensor* blockIdxLastScheduledTokenOptional,
    const aclTensor* initialStateIdxOptional, const char* activation, int64_t nullBlockId, int64_t maxQueryLen,
    aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnCausalConv1dUpdate(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                              aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
