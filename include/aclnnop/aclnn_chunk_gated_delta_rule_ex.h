/* aclnn_chunk_gated_delta_rule_ex.h — ChunkGatedDeltaRuleEx: ChunkGatedDeltaRule for serving. A txops extension:
 * CANN has no counterpart. Same two-phase call, status codes and message conventions as aclnnChunkGatedDeltaRule
 * (docs/gated_delta_rule.md, "Serving: state pools and snapshots").
 *
 * Inputs as aclnnChunkGatedDeltaRule, plus:
 *   stateIndicesOptional (B,) int32: sequence b reads initialState[idx[b]] and writes finalState[idx[b]]; the two
 *     are then pools (P, Nv, Dv, Dk) (pass the same tensor for in place); indices in [0, P), distinct. Null: both
 *     (B, Nv, Dv, Dk), sequence b uses row b.
 *   hasInitialStateOptional (B,) int32 or bool: 0 = sequence b starts from the zero state. Null: all read.
 *   checkpointStartsOptional (B + 1,) int64: where each sequence's snapshots start in checkpointsOptional
 *     (increments L_b / checkpointEvery); null = the running sum from 0.
 *   checkpointEvery: 0, or a multiple of 64: the state after every checkpointEvery tokens of each sequence is
 *     written to checkpointsOptional (R, Nv, Dv, Dk) fp32 or bf16, the j-th of sequence b at row
 *     checkpointStartsOptional[b] + j - 1 (j = 1 .. L_b / checkpointEvery).
 *   kernelMode: 0 auto, 1 chunked (a restart from an fp32 snapshot with fp32 states then gives the rest of the
 *     output and the final state bit for bit), 2 recurrent (no snapshots, no corrected values).
 *   correctedValuesOptional (T, Nv, Dv) fp32 (an output) or null: the corrected values V' of every token (fla's
 *     v_new), what aclnnChunkGatedDeltaRuleGradEx reads with the fp32 snapshots every 64 tokens (training). */
#ifndef TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_EX_H_
#define TXOPS_ACLNNOP_CHUNK_GATED_DELTA_RULE_EX_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleExGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* beta,
    const aclTensor* initialState, const aclTensor* actualSeqLengths, const aclTensor* gOptional,
    const aclTensor* stateIndicesOptional, const aclTensor* hasInitialStateOptional,
    const aclTensor* checkpointStartsOptional, float scaleValue, int64_t checkpointEvery, int64_t kernelMode,
    aclTensor* out, aclTensor* finalState, aclTensor* checkpointsOptional, aclTensor* correctedValuesOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnChunkGatedDeltaRuleEx(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
