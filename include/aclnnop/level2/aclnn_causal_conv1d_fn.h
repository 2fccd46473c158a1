/* level2/aclnn_causal_conv1d_fn.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_CAUSAL_CONV1D_FN_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_CAUSAL_CONV1D_FN_H_
#include "aclnnop/aclnn_causal_conv1d_fn.h"
#endif
