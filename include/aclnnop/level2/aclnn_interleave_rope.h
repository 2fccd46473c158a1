/* level2/aclnn_interleave_rope.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_INTERLEAVE_ROPE_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_INTERLEAVE_ROPE_H_
#include "aclnnop/aclnn_interleave_rope.h"
#endif
