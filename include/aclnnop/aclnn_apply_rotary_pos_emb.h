/* aclnn_apply_rotary_pos_emb.h — ApplyRotaryPosEmb (V1): rotate query and key in place, half mode (layouts 1 BSND, 2 SBND, 3 BNSD, 4 TND). */
#ifndef TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_H_
#define TXOPS_ACLNNOP_APPLY_ROTARY_POS_EMB_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnApplyRotaryPosEmbGetWorkspaceSize(aclTensor* queryRef, aclTensor* keyRef,
                                                             const aclTensor* cos, const aclTensor* sin,
                                                             int64_t layout, uint64_t* workspaceSize,
                                                             aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnApplyRotaryPosEmb(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
