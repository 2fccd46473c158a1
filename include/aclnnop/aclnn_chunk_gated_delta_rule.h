/* aclnn_chunk_gated_delta_rule.h — ChunkGatedDeltaRule (Gated DeltaNet prefill over variable-length sequences); see docs/gated_delta_rule.md. */
#ifndef TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_H_
#define TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
    aclTensor* out, aclTensor* finalState, uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnChunkGatedDeltaRule(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
