/* level2/aclnn_apply_rotary_pos_emb.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_APPLY_ROTARY_POS_EMB_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_APPLY_ROTARY_POS_EMB_H_
#include "aclnnop/aclnn_apply_rotary_pos_emb.h"
#endif
