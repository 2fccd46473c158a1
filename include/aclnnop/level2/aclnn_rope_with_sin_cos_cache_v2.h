/* level2/aclnn_rope_with_sin_cos_cache_v2.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_ROPE_WITH_SIN_COS_CACHE_V2_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_ROPE_WITH_SIN_COS_CACHE_V2_H_
#include "aclnnop/aclnn_rope_with_sin_cos_cache_v2.h"
#endif
