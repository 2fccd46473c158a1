/* aclnn_rope_with_sin_cos_cache_v2.h — RopeWithSinCosCacheV2: RopeWithSinCosCache with cacheMode (0: mrope sections, 1: interleaved mrope sections of Qwen3-VL). */
#ifndef TXOPS_ACLNNOP_ROPE_WITH_SIN_COS_CACHE_V2_H_
#define TXOPS_ACLNNOP_ROPE_WITH_SIN_COS_CACHE_V2_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

TXOPS_API aclnnStatus aclnnRopeWithSinCosCacheV2GetWorkspaceSize(
    const aclTensor* positions, const aclTensor* queryIn, const aclTensor* keyIn, const aclTensor* cosSinCache,
    const aclIntArray* mropeSection, int64_t headSize, bool isNeoxStyle, int64_t cacheMode, aclTensor* queryOut,
    aclTensor* keyOut, uint64_t* workspaceSize, aclOpExecutor** executor);
TXOPS_API aclnnStatus aclnnRopeWithSinCosCacheV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
