/* aclnn_rope_with_sin_cos_cache.h — RopeWithSinCosCache: query / key rotated by the cos/sin rows of a cache indexed by positions (vLLM rotary_embedding; mrope when mropeSection is given). */
#ifndef TXOPS_ACLNNOP_ROPE_WITH_SIN_COS_CACHE_H_
#define TXOPS_ACLNNOP_ROPE_WITH_SIN_COS_CACHE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRopeWithSinCosCacheGetWorkspaceSize(
    const aclTensor* positions, const aclTensor* queryIn, const aclTensor* keyIn, const aclTensor* cosSinCache,
    const aclIntArray* mropeSection, int64_t headSize, bool isNeoxStyle, aclTensor* queryOut, aclTensor* keyOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRopeWithSinCosCache(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
