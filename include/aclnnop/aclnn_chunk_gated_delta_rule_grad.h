/* aclnn_chunk_gated_delta_rule_grad.h — ChunkGatedDeltaRuleGrad: the backward of ChunkGatedDeltaRule. A txops
 * extension: CANN has no counterpart. Same two-phase call, status codes and message conventions as the forward
 * (docs/gated_delta_rule.md, "Backward").
 *
 * Inputs: the forward's inputs (query, key, value, beta, initialState, actualSeqLengths, gOptional, scaleValue),
 * gradOut (T, Nv, Dv) in the activation dtype, gradFinalStateOptional (B, Nv, Dv, Dk) in the state dtype or null
 * (zero). Outputs: gradQuery, gradKey (T, Nk, Dk) — summed over the value heads of each key head — gradValue
 * (T, Nv, Dv), gradBeta (T, Nv) in the activation dtype; gradGOptional (T, Nv) fp32 or null (not computed; must be
 * null when gOptional is); gradInitialState (B, Nv, Dv, Dk) in the state dtype (may be gradFinalStateOptional).
 *
 * aclnnChunkGatedDeltaRuleGradEx adds, after gradFinalStateOptional, forwardCheckpointsOptional (R, Nv, Dv, Dk)
 * fp32 or null: the snapshots aclnnChunkGatedDeltaRuleEx wrote with checkpointEvery = 64 and
 * checkpointStartsOptional null (R >= the sum of L_b / 64), and forwardCorrectedValuesOptional (T, Nv, Dv) fp32 or
 * null (only with the snapshots): its correctedValuesOptional. Given, the backward reads the state before each
 * chunk (and each chunk's corrected values) instead of recomputing them; both null is aclnnChunkGatedDeltaRuleGrad. */
#ifndef TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_GRAD_H_
#define TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
    const aclTensor* gradOut, const aclTensor* gradFinalStateOptional, aclTensor* gradQuery, aclTensor* gradKey,
    aclTensor* gradValue, aclTensor* gradBeta, aclTensor* gradGOptional, aclTensor* gradInitialState,
    uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);
TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleGradExGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional, float scaleValue,
    const aclTensor* gradOut, const aclTensor* gradFinalStateOptional, const aclTensor* forwardCheckpointsOptional,
    const aclTensor* forwardCorrectedValuesOptional, aclTensor* gradQuery, aclTensor* gradKey, aclTensor* gradValue,
    aclTensor* gradBeta, aclTensor* gradGOptional, aclTensor* gradInitialState, uint64_t* workspaceSize,
    aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleGradEx(void* workspace, uint64_t workspaceSize,
                                                     aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
