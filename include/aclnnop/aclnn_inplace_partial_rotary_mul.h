/* aclnn_inplace_partial_rotary_mul.h — InplacePartialRotaryMul: rotate the slice [start, end) of the last axis of xRef in place. */
#ifndef TXOPS_ACLNNOP_INPLACE_PARTIAL_ROTARY_MUL_H_
#define TXOPS_ACLNNOP_INPLACE_PARTIAL_ROTARY_MUL_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnInplacePartialRotaryMulGetWorkspaceSize(aclTensor* xRef, const aclTensor* cos,
                                                                   const aclTensor* sin, int64_t rotaryMode,
                                                                   const aclIntArray* partialSlice,
                                                                   uint64_t* workspaceSize,
                                                                   aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnInplacePartialRotaryMul(void* workspace, uint64_t workspaceSize,
                                                   aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
