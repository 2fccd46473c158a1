/* level2/aclnn_chunk_gated_delta_rule_ex.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_CHUNK_GATED_DELTA_RULE_EX_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_CHUNK_GATED_DELTA_RULE_EX_H_
#include "aclnnop/aclnn_chunk_gated_delta_rule_ex.h"
#endif
