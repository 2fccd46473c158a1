// aclnn_rope_with_sin_cos_cache.cpp — aclnnRopeWithSinCosCache and aclnnRopeWithSinCosCacheV2 (cacheMode; V1 is
// cacheMode 0): aclTensor / aclIntArray -> views and values, then phase one.
#include "aclnnop/aclnn_rope_with_sin_cos_cache.h"
#include "aclnnop/aclnn_rope_with_sin_cos_cache_v2.h"

#include "core/executor.h"
#include "ops/rope/prepare.h"
#include "runtime/acl_tensor.h"

using namespace txops;

static constexpr const char* kV1 = "aclnnRopeWithSinCosCache";
static constexpr const char* kV2 = "aclnnRopeWithSinCosCacheV2";

static aclnnStatus phase_one(const char* api, const aclTensor* positions, const aclTensor* queryIn,
                             const aclTensor* keyIn, const aclTensor* cosSinCache, const aclIntArray* mropeSection,
                             int64_t headSize, bool isNeoxStyle, int64_t cacheMode, aclTensor* queryOut,
                             aclTensor* keyOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  TensorView pv, qv, kv, cv, qov, kov;
  const int64_t* section = nullptr;
  uint64_t section_count = 0;
  Status st = tensor_to_view(positions, "positions", &pv);
  if (st.ok()) st = tensor_to_view(queryIn, "queryIn", &qv);
  if (st.ok()) st = tensor_to_view(keyIn, "keyIn", &kv);
  if (st.ok()) st = tensor_to_view(cosSinCache, "cosSinCache", &cv);
  if (st.ok() && mropeSection != nullptr) st = int_array_to_values(mropeSection, "mropeSection", &section, &section_count);
  if (st.ok()) st = tensor_to_view(queryOut, "queryOut", &qov);
  if (st.ok()) st = tensor_to_view(keyOut, "keyOut", &kov);
  if (st.ok()) st = check_phase_one_outputs(workspaceSize, executor);
  PreparedOp op;
  if (st.ok()) {
    st = prepare_rope_with_sin_cos_cache(pv, qv, kv, cv, section, section_count, headSize, isNeoxStyle, cacheMode,
                                         qov, kov, &op);
  }
  if (!st.ok()) return report(api, st);
  return make_executor(api, op.workspace_bytes, std::move(op.run), workspaceSize, executor);
}

aclnnStatus aclnnRopeWithSinCosCacheGetWorkspaceSize(const aclTensor* positions, const aclTensor* queryIn,
                                                     const aclTensor* keyIn, const aclTensor* cosSinCache,
                                                     const aclIntArray* mropeSection, int64_t headSize,
                                                     bool isNeoxStyle, aclTensor* queryOut, aclTensor* keyOut,
                                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  return phase_one(kV1, positions, queryIn, keyIn, cosSinCache, mropeSection, headSize, isNeoxStyle, 0, queryOut,
                   keyOut, workspaceSize, executor);
}

aclnnStatus aclnnRopeWithSinCosCache(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream /*stream*/) {
  return run_executor(kV1, workspace, workspaceSize, executor);
}

aclnnStatus aclnnRopeWithSinCosCacheV2GetWorkspaceSize(const aclTensor* positions, const aclTensor* queryIn,
                                                       const aclTensor* keyIn, const aclTensor* cosSinCache,
                                                       const aclIntArray* mropeSection, int64_t headSize,
                                                       bool isNeoxStyle, int64_t cacheMode, aclTensor* queryOut,
                                                       aclTensor* keyOut, uint64_t* workspaceSize,
                                                       aclOpExecutor** executor) {
  return phase_one(kV2, positions, queryIn, keyIn, cosSinCache, mropeSection, headSize, isNeoxStyle, cacheMode,
                   queryOut, keyOut, workspaceSize, executor);
}

aclnnStatus aclnnRopeWithSinCosCacheV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream /*stream*/) {
  return run_executor(kV2, workspace, workspaceSize, executor);
}
