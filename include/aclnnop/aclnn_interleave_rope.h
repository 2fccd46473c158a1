/* aclnn_interleave_rope.h — InterleaveRope (DeepSeek MLA RoPE): out = interleave-half rotation of x; see docs/rope.md. */
#ifndef TXOPS_ACLNNOP_INTERLEAVE_ROPE_H_
#define TXOPS_ACLNNOP_INTERLEAVE_ROPE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnInterleaveRopeGetWorkspaceSize(const aclTensor* x, const aclTensor* cos, const aclTensor* sin,
                                                          aclTensor* out, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnInterleaveRope(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
