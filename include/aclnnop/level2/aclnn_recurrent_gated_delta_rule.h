/* level2/aclnn_recurrent_gated_delta_rule.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_RECURRENT_GATED_DELTA_RULE_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_RECURRENT_GATED_DELTA_RULE_H_
#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"
#endif
