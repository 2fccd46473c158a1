// rope_family_aclnn_test.cpp — the aclnn two-phase path of aclnnRotaryPositionEmbedding (V1, V2 with a rotate
// matrix), aclnnRotaryPositionEmbeddingGrad (with and without xOptional, empty dcos/dsin placeholders as CANN's
// example passes them), aclnnApplyRotaryPosEmb (V1) and aclnnRopeWithSinCosCache (V1, V2 with an mropeSection
// aclIntArray): aclCreateTensor views, phase one then phase two, results against the fp64 reference; the codes
// of null required arguments; positions outside the cache refused in phase one, and by a run they changed before.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_apply_rotary_pos_emb.h"
#include "aclnnop/aclnn_rope_with_sin_cos_cache.h"
#include "aclnnop/aclnn_rope_with_sin_cos_cache_v2.h"
#include "aclnnop/aclnn_rotary_position_embedding.h"
#include "aclnnop/aclnn_rotary_position_embedding_grad.h"
#include "aclnnop/aclnn_rotary_position_embedding_v2.h"
#include "core/tolerance.h"
#include "ops/rope/reference.h"
#include "support/rope_acl_util.h"
#include "support/rope_test_util.h"

namespace txops {
namespace {

using namespace txops::testing;

// Runs phase two of an executor phase one returned.
void run_phase_two(aclnnStatus (*phase_two)(void*, uint64_t, aclOpExecutor*, aclrtStream), uint64_t ws,
                   aclOpExecutor* exec) {
  std::vector<uint8_t> workspace(ws + 64);
  ASSERT_EQ(phase_two(workspace.data(), ws, exec, nullptr), 0) << aclGetRecentErrMsg();
}

void expect_close(const TensorView& y, const std::vector<double>& ref, const char* row, const char* what) {
  const CompareReport r = compare_with_reference(y, ref, tolerance_for(row, y.dtype));
  EXPECT_TRUE(r.passed) << what << ": " << r.describe(y);
}

TEST(RopeFamilyAclnn, RotaryPositionEmbeddingV1AndV2) {
  std::mt19937 rng(11);
  // V1: interleave-half, x (2, 4, 3, 32) bf16 padded view, cos (1, 4, 1, 32) bf16.
  GuardedTensor x(&rng, DType::kBF16, {2, 4, 3, 32}, ViewStyle::kPadded);
  GuardedTensor cos(&rng, DType::kBF16, {1, 4, 1, 32}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kBF16, {1, 4, 1, 32}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor out(&rng, DType::kBF16, {2, 4, 3, 32}, ViewStyle::kContiguous);
  std::vector<double> ref;
  reference::rotary_position_embedding(x.view(), cos.view(), sin.view(), RotaryMode::kInterleaveHalf, nullptr, &ref);
  AclTensorPtr xt = to_acl_tensor(x.view()), ct = to_acl_tensor(cos.view()), st = to_acl_tensor(sin.view());
  AclTensorPtr ot = to_acl_tensor(out.view());
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnRotaryPositionEmbeddingGetWorkspaceSize(xt.get(), ct.get(), st.get(), 3, ot.get(), &ws, &exec), 0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRotaryPositionEmbedding, ws, exec);
  expect_close(out.view(), ref, "rope", "RotaryPositionEmbedding out");
  EXPECT_EQ(aclnnRotaryPositionEmbeddingGetWorkspaceSize(nullptr, ct.get(), st.get(), 0, ot.get(), &ws, &exec),
            161001);
  EXPECT_EQ(aclnnRotaryPositionEmbeddingGetWorkspaceSize(xt.get(), ct.get(), st.get(), 7, ot.get(), &ws, &exec),
            561002);

  // V2 with CANN's example matrix: ones at (i, i+1) and (i+1, i) for even i, so rot(x) swaps pairs, no sign.
  const int64_t d = 16;
  OwnedTensor xv(DType::kF32, {1, 1, 2, d}), cv(DType::kF32, {1, 1, 2, d}), sv(DType::kF32, {1, 1, 2, d});
  OwnedTensor rotate(DType::kF32, {d, d}), y(DType::kF32, {1, 1, 2, d});
  float* xp = static_cast<float*>(xv.view().data);
  float* cp = static_cast<float*>(cv.view().data);
  float* sp = static_cast<float*>(sv.view().data);
  float* rp = static_cast<float*>(rotate.view().data);
  for (int64_t i = 0; i < 2 * d; ++i) xp[i] = static_cast<float>(i % 7 + 1), cp[i] = 2.0f, sp[i] = 3.0f;
  for (int64_t i = 0; i + 1 < d; i += 2) rp[i * d + i + 1] = rp[(i + 1) * d + i] = 1.0f;
  ASSERT_EQ(aclnnRotaryPositionEmbeddingV2GetWorkspaceSize(xv.acl(), cv.acl(), sv.acl(), 1, rotate.acl(), y.acl(), &ws,
                                                           &exec),
            0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRotaryPositionEmbeddingV2, ws, exec);
  const float* yp = static_cast<const float*>(y.view().data);
  for (int64_t i = 0; i < 2 * d; ++i) {
    const float partner = xp[i % 2 == 0 ? i + 1 : i - 1];
    EXPECT_EQ(yp[i], xp[i] * 2.0f + partner * 3.0f) << "element " << i;
  }
  // V2 without rotate is V1.
  ASSERT_EQ(aclnnRotaryPositionEmbeddingV2GetWorkspaceSize(xv.acl(), cv.acl(), sv.acl(), 1, nullptr, y.acl(), &ws,
                                                           &exec),
            0);
  run_phase_two(aclnnRotaryPositionEmbeddingV2, ws, exec);
  for (int64_t i = 0; i < 2 * d; ++i) {
    const float partner = i % 2 == 0 ? -xp[i + 1] : xp[i - 1];
    EXPECT_EQ(yp[i], xp[i] * 2.0f + partner * 3.0f) << "element " << i;
  }
}

TEST(RopeFamilyAclnn, RotaryPositionEmbeddingGrad) {
  std::mt19937 rng(12);
  GuardedTensor dy(&rng, DType::kF32, {2, 3, 4, 16}, ViewStyle::kOffset);
  GuardedTensor x(&rng, DType::kF32, {2, 3, 4, 16}, ViewStyle::kContiguous);
  GuardedTensor cos(&rng, DType::kF32, {1, 3, 1, 16}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kF32, {1, 3, 1, 16}, ViewStyle::kContiguous, -1, 1);
  OwnedTensor dx(DType::kF32, {2, 3, 4, 16}), dcos(DType::kF32, {1, 3, 1, 16}), dsin(DType::kF32, {1, 3, 1, 16});
  OwnedTensor empty_dcos(DType::kF32, {1, 1, 1, 0}), empty_dsin(DType::kF32, {1, 1, 1, 0});
  std::vector<double> ref_dx, ref_dcos, ref_dsin;
  reference::rotary_position_embedding_grad(dy.view(), cos.view(), sin.view(), x.ptr(), RotaryMode::kHalf, &ref_dx,
                                            &ref_dcos, &ref_dsin);
  AclTensorPtr dyt = to_acl_tensor(dy.view()), xt = to_acl_tensor(x.view());
  AclTensorPtr ct = to_acl_tensor(cos.view()), st = to_acl_tensor(sin.view());
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  // Without xOptional (CANN's example passes empty dcos/dsin placeholders): dx only.
  ASSERT_EQ(aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(dyt.get(), ct.get(), st.get(), nullptr, 0, dx.acl(),
                                                             empty_dcos.acl(), empty_dsin.acl(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRotaryPositionEmbeddingGrad, ws, exec);
  expect_close(dx.view(), ref_dx, "rope", "dx without x");
  // With xOptional: dx, dcos, dsin.
  ASSERT_EQ(aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(dyt.get(), ct.get(), st.get(), xt.get(), 0, dx.acl(),
                                                             dcos.acl(), dsin.acl(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRotaryPositionEmbeddingGrad, ws, exec);
  expect_close(dx.view(), ref_dx, "rope", "dx");
  expect_close(dcos.view(), ref_dcos, "rope_grad_cos_sin", "dcos");
  expect_close(dsin.view(), ref_dsin, "rope_grad_cos_sin", "dsin");
  // dcosOut / dsinOut are required arguments.
  EXPECT_EQ(aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(dyt.get(), ct.get(), st.get(), nullptr, 0, dx.acl(),
                                                             nullptr, dsin.acl(), &ws, &exec),
            161001);
}

TEST(RopeFamilyAclnn, ApplyRotaryPosEmbV1IsHalfMode) {
  std::mt19937 rng(13);
  GuardedTensor q(&rng, DType::kF16, {2, 3, 4, 64}, ViewStyle::kContiguous);
  GuardedTensor k(&rng, DType::kF16, {2, 3, 1, 64}, ViewStyle::kContiguous);
  GuardedTensor cos(&rng, DType::kF16, {2, 3, 1, 64}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kF16, {2, 3, 1, 64}, ViewStyle::kContiguous, -1, 1);
  std::vector<double> ref_q, ref_k;
  reference::apply_rotary_pos_emb(q.view(), k.view(), cos.view(), sin.view(), Layout::kBSND, RotaryMode::kHalf,
                                  &ref_q, &ref_k);
  AclTensorPtr qt = to_acl_tensor(q.view()), kt = to_acl_tensor(k.view());
  AclTensorPtr ct = to_acl_tensor(cos.view()), st = to_acl_tensor(sin.view());
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnApplyRotaryPosEmbGetWorkspaceSize(qt.get(), kt.get(), ct.get(), st.get(), 1, &ws, &exec), 0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnApplyRotaryPosEmb, ws, exec);
  expect_close(q.view(), ref_q, "rope", "query");
  expect_close(k.view(), ref_k, "rope", "key");
  EXPECT_EQ(aclnnApplyRotaryPosEmbGetWorkspaceSize(qt.get(), kt.get(), ct.get(), st.get(), 9, &ws, &exec), 161002);
  EXPECT_EQ(aclnnApplyRotaryPosEmbGetWorkspaceSize(qt.get(), nullptr, ct.get(), st.get(), 1, &ws, &exec), 161001);
}

TEST(RopeFamilyAclnn, RopeWithSinCosCacheV1AndV2) {
  std::mt19937 rng(14);
  const int64_t tokens = 5, head = 32, rotary = 24;
  GuardedTensor q(&rng, DType::kBF16, {tokens, 3 * head}, ViewStyle::kContiguous);
  GuardedTensor k(&rng, DType::kBF16, {tokens, head}, ViewStyle::kContiguous);
  GuardedTensor cache(&rng, DType::kBF16, {9, rotary}, ViewStyle::kContiguous, -1, 1);
  OwnedTensor qo(DType::kBF16, {tokens, 3 * head}), ko(DType::kBF16, {tokens, head});
  std::vector<int64_t> pos = {8, 0, 3, 3, 1};
  TensorView pv(pos.data(), DType::kI64, {tokens});
  AclTensorPtr pt = to_acl_tensor(pv), qt = to_acl_tensor(q.view()), kt = to_acl_tensor(k.view());
  AclTensorPtr ct = to_acl_tensor(cache.view());
  std::vector<double> ref_q, ref_k;
  reference::rope_with_sin_cos_cache(pv, q.view(), k.view(), cache.view(), nullptr, 0, head, false, 0, &ref_q, &ref_k);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnRopeWithSinCosCacheGetWorkspaceSize(pt.get(), qt.get(), kt.get(), ct.get(), nullptr, head, false,
                                                     qo.acl(), ko.acl(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRopeWithSinCosCache, ws, exec);
  expect_close(qo.view(), ref_q, "rope", "queryOut (GPT-J)");
  expect_close(ko.view(), ref_k, "rope", "keyOut (GPT-J)");

  // V2, mrope [4, 4, 4] with cacheMode 1 (interleaved), positions (3, T).
  std::vector<int64_t> pos3 = {8, 0, 3, 3, 1, 2, 2, 7, 0, 5, 6, 1, 4, 4, 8};
  TensorView p3(pos3.data(), DType::kI64, {3, tokens});
  AclTensorPtr p3t = to_acl_tensor(p3);
  const int64_t section_values[3] = {4, 4, 4};
  AclIntArrayPtr section(aclCreateIntArray(section_values, 3));
  reference::rope_with_sin_cos_cache(p3, q.view(), k.view(), cache.view(), section_values, 3, head, true, 1, &ref_q,
                                     &ref_k);
  ASSERT_EQ(aclnnRopeWithSinCosCacheV2GetWorkspaceSize(p3t.get(), qt.get(), kt.get(), ct.get(), section.get(), head,
                                                       true, 1, qo.acl(), ko.acl(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  run_phase_two(aclnnRopeWithSinCosCacheV2, ws, exec);
  expect_close(qo.view(), ref_q, "rope", "queryOut (mrope interleaved)");
  expect_close(ko.view(), ref_k, "rope", "keyOut (mrope interleaved)");
  EXPECT_EQ(aclnnRopeWithSinCosCacheV2GetWorkspaceSize(p3t.get(), qt.get(), kt.get(), ct.get(), section.get(), head,
                                                       true, 3, qo.acl(), ko.acl(), &ws, &exec),
            161002);
  EXPECT_EQ(aclnnRopeWithSinCosCacheGetWorkspaceSize(nullptr, qt.get(), kt.get(), ct.get(), nullptr, head, true,
                                                     qo.acl(), ko.acl(), &ws, &exec),
            161001);
  // Positions are host-visible integers: phase one refuses one outside the cache (no executor is made) ...
  pos[3] = 9;
  EXPECT_EQ(aclnnRopeWithSinCosCacheGetWorkspaceSize(pt.get(), qt.get(), kt.get(), ct.get(), nullptr, head, false,
                                                     qo.acl(), ko.acl(), &ws, &exec),
            161002);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("positions values must be in [0, 9) (cosSinCache dim 0), got 9 at positions[3]"),
            std::string::npos)
      << aclGetRecentErrMsg();
  // ... and a run whose positions were changed after phase one refuses them before writing anything.
  pos[3] = 3;
  ASSERT_EQ(aclnnRopeWithSinCosCacheGetWorkspaceSize(pt.get(), qt.get(), kt.get(), ct.get(), nullptr, head, false,
                                                     qo.acl(), ko.acl(), &ws, &exec),
            0);
  pos[3] = -5;
  const std::vector<uint16_t> before(static_cast<const uint16_t*>(qo.view().data),
                                     static_cast<const uint16_t*>(qo.view().data) + qo.view().numel());
  std::vector<uint8_t> workspace(ws + 64);
  EXPECT_EQ(aclnnRopeWithSinCosCache(workspace.data(), ws, exec, nullptr), 161002);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), static_cast<const uint16_t*>(qo.view().data)));
}

}  // namespace
}  // namespace txops
