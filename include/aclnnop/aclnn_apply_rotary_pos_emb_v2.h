/* aclnn_apply_rotary_pos_emb_v2.h — ApplyRotaryPosEmbV2: rotate query and key in place (half / interleave / quarter; BSND, SBND, BNSD, TND). */
#ifndef TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_V2_H_
#define TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnApplyRotaryPosEmbV2GetWorkspaceSize(aclTensor* queryRef, aclTensor* keyRef,
                                                               const aclTensor* cos, const aclTensor* sin,
                                                               int64_t layout, char* rotaryMode,
                                                               uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnApplyRotaryPosEmbV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
