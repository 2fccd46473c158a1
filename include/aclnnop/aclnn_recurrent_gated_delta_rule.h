/* aclnn_recurrent_gated_delta_rule.h — RecurrentGatedDeltaRule (Gated DeltaNet decode on a pool of states, with speculative-decoding slots). */
#ifndef TXOPS_ACLNNOP_RECURRENT_GATED_DELTA_RULE_H_
#define TXOPS_ACLNNOP_RECURRENT_GATED_DELTA_RULE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta, aclTensor* stateRef,
    const aclTensor* actualSeqLengths, const aclTensor* ssmStateIndices, const aclTensor* g, const aclTensor* gk,
    const aclTensor* numAcceptedTokens, float scaleValue, aclTensor* out, uint64_t* workspaceSize,
    aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRecurrentGatedDeltaRule(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
