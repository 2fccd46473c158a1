/* aclnn_inplace_partial_rotary_mul_grad.h — InplacePartialRotaryMulGrad: the exact adjoint of InplacePartialRotaryMul, in place on dyRef. */
#ifndef TXOPS_ACLNNOP_INPLACE_PARTIAL_ROTARY_MUL_GRAD_H_
#define TXOPS_ACLNNOP_INPLACE_PARTIAL_ROTARY_MUL_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnInplacePartialRotaryMulGradGetWorkspaceSize(aclTensor* dyRef, const aclTensor* cos,
                                                                       const aclTensor* sin, int64_t rotaryMode,
                                                                       const aclIntArray* partialSlice,
                                                                       uint64_t* workspaceSize,
                                                                       aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnInplacePartialRotaryMulGrad(void* workspace, uint64_t workspaceSize,
                                                       aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
