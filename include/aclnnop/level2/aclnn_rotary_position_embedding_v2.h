/* level2/aclnn_rotary_position_embedding_v2.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_ROTARY_POSITION_EMBEDDING_V2_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_ROTARY_POSITION_EMBEDDING_V2_H_
#include "aclnnop/aclnn_rotary_position_embedding_v2.h"
#endif
