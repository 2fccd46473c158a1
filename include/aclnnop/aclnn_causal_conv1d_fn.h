/* aclnn_causal_conv1d_fn.h — CausalConv1dFn (the depthwise causal conv of Mamba / Gated DeltaNet layers, prefill:
   fixed batch or varlen, conv states in a cache indexed per sequence); see docs/causal_conv1d.md. */
#ifndef TXOPS_ACLNNOP_CAUSAL_CONV1D_FN_H_
#define TXOPS_ACLNNOP_CAUSAL_CONV1D_FN_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnCausalConv1dFnGetWorkspaceSize(
    const aclTensor* x, const aclTensor* weight, aclTensor* convStatesRef, const aclTensor* biasOptional,
    const aclTensor* queryStartLocOptional, const aclTensor* cacheIndicesOptional,
    const aclTensor* initialStateModeOptional, const aclTensor* blockIdxFirstScheduledTokenOptional,
    const aclTensor* blockIdxLastScheduledTokenOptional, const aclTensor* initialStateIdxOptional,
    const aclTensor* numComputedTokensOptional, const char* activation, int64_t nullBlockId, int64_t blockSizeToAlign,
    aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnCausalConv1dFn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
