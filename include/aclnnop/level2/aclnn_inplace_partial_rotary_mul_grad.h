/* level2/aclnn_inplace_partial_rotary_mul_grad.h — CANN also installs its operator headers under aclnnop/level2/: the same declarations. */
#ifndef TXOPS_ACLNNOP_LEVEL2_ACLNN_INPLACE_PARTIAL_ROTARY_MUL_GRAD_H_
#define TXOPS_ACLNNOP_LEVEL2_ACLNN_INPLACE_PARTIAL_ROTARY_MUL_GRAD_H_
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#endif
