// rope_aclnn_test.cpp — the aclnn two-phase path of the RoPE ops: tensors made with aclCreateTensor (strides,
// offset, storage dims), phase one then phase two, results against the fp64 reference; a workspace smaller
// than asked -> 161002; an executor run twice -> an error, not a crash; null workspaceSize / executor -> 161001.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "aclnnop/aclnn_apply_rotary_pos_emb_grad.h"
#include "aclnnop/aclnn_apply_rotary_pos_emb_v2.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "core/tolerance.h"
#include "ops/rope/reference.h"
#include "support/rope_acl_util.h"
#include "support/rope_test_util.h"

namespace txops {
namespace {

using namespace txops::testing;

// x (B, N, S, D) = (2, 3, 4, 32) fp16 as a view with offset 7 and rows padded to 40 elements inside a
// larger storage; cos/sin (1, 1, 4, 32) fp32 contiguous; out contiguous.
TEST(RopeAclnn, InterleaveRopeTwoPhasesOnAStridedView) {
  std::mt19937 rng(3);
  const int64_t B = 2, N = 3, S = 4, D = 32, row = 40, offset = 7;
  const int64_t storage_elems = offset + B * N * S * row;
  GuardedTensor storage(&rng, DType::kF16, {storage_elems}, ViewStyle::kContiguous);
  const int64_t x_dims[4] = {B, N, S, D}, x_strides[4] = {N * S * row, S * row, row, 1};
  aclTensor* x = aclCreateTensor(x_dims, 4, ACL_FLOAT16, x_strides, offset, ACL_FORMAT_ND, &storage_elems, 1,
                                 storage.view().data);
  ASSERT_NE(x, nullptr) << aclGetRecentErrMsg();
  GuardedTensor cos(&rng, DType::kF32, {1, 1, S, D}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kF32, {1, 1, S, D}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor out(&rng, DType::kF16, {B, N, S, D}, ViewStyle::kContiguous);
  AclTensorPtr cos_t = to_acl_tensor(cos.view()), sin_t = to_acl_tensor(sin.view()), out_t = to_acl_tensor(out.view());

  const TensorView x_view = TensorView::make(static_cast<uint16_t*>(storage.view().data) + offset, DType::kF16, 4,
                                             x_dims, x_strides);
  std::vector<double> ref;
  reference::interleave_rope(x_view, cos.view(), sin.view(), &ref);

  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x, cos_t.get(), sin_t.get(), out_t.get(), &ws, &exec), 0)
      << aclGetRecentErrMsg();
  std::vector<uint8_t> workspace(ws + 64);
  ASSERT_EQ(aclnnInterleaveRope(workspace.data(), ws, exec, nullptr), 0) << aclGetRecentErrMsg();
  const CompareReport r = compare_with_reference(out.view(), ref, tolerance_for("rope", DType::kF16));
  EXPECT_TRUE(r.passed) << r.describe(out.view());
  EXPECT_TRUE(out.guards_intact());

  // The same executor a second time: an error code, no crash, no double free.
  EXPECT_NE(aclnnInterleaveRope(workspace.data(), ws, exec, nullptr), 0);
  EXPECT_NE(std::string(aclGetRecentErrMsg()), "");
  aclDestroyTensor(x);
}

TEST(RopeAclnn, NullWorkspaceSizeOrExecutorIsNullptrError) {
  OwnedTensor x(DType::kF32, {1, 2, 3, 8}), cos(DType::kF32, {1, 1, 3, 8}), sin(DType::kF32, {1, 1, 3, 8});
  OwnedTensor out(DType::kF32, {1, 2, 3, 8});
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x.acl(), cos.acl(), sin.acl(), out.acl(), nullptr, &exec),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x.acl(), cos.acl(), sin.acl(), out.acl(), &ws, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  const int64_t slice_values[2] = {0, 8};
  AclIntArrayPtr slice(aclCreateIntArray(slice_values, 2));
  OwnedTensor xp(DType::kF32, {1, 3, 2, 8}), cp(DType::kF32, {1, 3, 1, 8}), sp(DType::kF32, {1, 3, 1, 8});
  EXPECT_EQ(aclnnInplacePartialRotaryMulGetWorkspaceSize(xp.acl(), cp.acl(), sp.acl(), 1, slice.get(), nullptr,
                                                         &exec),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnInplacePartialRotaryMulGradGetWorkspaceSize(xp.acl(), cp.acl(), sp.acl(), 1, slice.get(), &ws,
                                                             nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  OwnedTensor q(DType::kF32, {1, 3, 2, 8}), k(DType::kF32, {1, 3, 1, 8});
  char half[] = "half";
  EXPECT_EQ(aclnnApplyRotaryPosEmbV2GetWorkspaceSize(q.acl(), k.acl(), cp.acl(), sp.acl(), 1, half, &ws, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
}

// Runs the grad of ApplyRotaryPosEmb (the op with a reduction, the likeliest to need a workspace) and the
// partial forward through both phases; where a workspace is needed, one byte less is refused with 161002.
TEST(RopeAclnn, ApplyGradTwoPhasesAndWorkspaceTooSmall) {
  std::mt19937 rng(4);
  const int64_t B = 3, S = 4, Nq = 5, Nk = 2, D = 16;
  GuardedTensor gqe(&rng, DType::kF32, {B, S, Nq, D}, ViewStyle::kPadded);
  GuardedTensor gke(&rng, DType::kF32, {B, S, Nk, D}, ViewStyle::kContiguous);
  GuardedTensor q(&rng, DType::kF32, {B, S, Nq, D}, ViewStyle::kOffset);
  GuardedTensor k(&rng, DType::kF32, {B, S, Nk, D}, ViewStyle::kContiguous);
  GuardedTensor cos(&rng, DType::kF32, {1, S, 1, D}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kF32, {1, S, 1, D}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor gq(&rng, DType::kF32, {B, S, Nq, D}, ViewStyle::kContiguous);
  GuardedTensor gk(&rng, DType::kF32, {B, S, Nk, D}, ViewStyle::kLastStride2);
  GuardedTensor gcos(&rng, DType::kF32, {1, S, 1, D}, ViewStyle::kContiguous);
  GuardedTensor gsin(&rng, DType::kF32, {1, S, 1, D}, ViewStyle::kOffset);
  std::vector<AclTensorPtr> t;
  for (const GuardedTensor* g : {&gqe, &gke, &cos, &sin, &q, &k, &gq, &gk, &gcos, &gsin})
    t.push_back(to_acl_tensor(g->view()));
  std::vector<double> ref_gq, ref_gk, ref_gcos, ref_gsin;
  reference::apply_rotary_pos_emb_grad(gqe.view(), gke.view(), cos.view(), sin.view(), q.ptr(), k.ptr(),
                                       RotaryMode::kHalf, Layout::kBSND, &ref_gq, &ref_gk, &ref_gcos, &ref_gsin);
  char half[] = "half";
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnApplyRotaryPosEmbGradGetWorkspaceSize(t[0].get(), t[1].get(), t[2].get(), t[3].get(), t[4].get(),
                                                       t[5].get(), half, 1, t[6].get(), t[7].get(), t[8].get(),
                                                       t[9].get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  std::vector<uint8_t> workspace(ws + 64);
  if (ws > 0) {
    EXPECT_EQ(aclnnApplyRotaryPosEmbGrad(workspace.data(), ws - 1, exec, nullptr), ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(std::string(aclGetRecentErrMsg()).rfind("aclnnApplyRotaryPosEmbGrad: ", 0), 0u) << aclGetRecentErrMsg();
  } else {
    std::printf("note: ApplyRotaryPosEmbGrad needs no workspace here; the too-small check has nothing to refuse\n");
  }
  ASSERT_EQ(aclnnApplyRotaryPosEmbGrad(workspace.data(), ws, exec, nullptr), 0) << aclGetRecentErrMsg();
  const std::pair<const GuardedTensor*, const std::vector<double>*> outputs[] = {
      {&gq, &ref_gq}, {&gk, &ref_gk}, {&gcos, &ref_gcos}, {&gsin, &ref_gsin}};
  for (size_t i = 0; i < 4; ++i) {
    const char* row = i < 2 ? "rope" : "rope_grad_cos_sin";
    const CompareReport r = compare_with_reference(outputs[i].first->view(), *outputs[i].second,
                                                   tolerance_for(row, DType::kF32));
    EXPECT_TRUE(r.passed) << "output " << i << ": " << r.describe(outputs[i].first->view());
    EXPECT_TRUE(outputs[i].first->guards_intact()) << "output " << i;
  }
  EXPECT_NE(aclnnApplyRotaryPosEmbGrad(workspace.data(), ws, exec, nullptr), 0);  // consumed
}

TEST(RopeAclnn, PartialAndApplyForwardTwoPhases) {
  std::mt19937 rng(6);
  // InplacePartialRotaryMul, interleave-half on [2, 18) of D = 24, x (2, 3, 5, 24) bf16, cos (1, 3, 5, 16) bf16.
  GuardedTensor x(&rng, DType::kBF16, {2, 3, 5, 24}, ViewStyle::kPadded);
  GuardedTensor cos(&rng, DType::kBF16, {1, 3, 5, 16}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor sin(&rng, DType::kBF16, {1, 3, 5, 16}, ViewStyle::kContiguous, -1, 1);
  std::vector<double> ref;
  reference::inplace_partial_rotary_mul(x.view(), cos.view(), sin.view(), RotaryMode::kInterleaveHalf, 2, 18, false,
                                        &ref);
  AclTensorPtr xt = to_acl_tensor(x.view()), ct = to_acl_tensor(cos.view()), st = to_acl_tensor(sin.view());
  const int64_t slice_values[2] = {2, 18};
  AclIntArrayPtr slice(aclCreateIntArray(slice_values, 2));
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnInplacePartialRotaryMulGetWorkspaceSize(xt.get(), ct.get(), st.get(), 3, slice.get(), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  std::vector<uint8_t> workspace(ws + 64);
  ASSERT_EQ(aclnnInplacePartialRotaryMul(workspace.data(), ws, exec, nullptr), 0) << aclGetRecentErrMsg();
  CompareReport r = compare_with_reference(x.view(), ref, tolerance_for("rope", DType::kBF16));
  EXPECT_TRUE(r.passed) << r.describe(x.view());

  // ApplyRotaryPosEmbV2, quarter, SBND, q (4, 2, 3, 32) fp16, k (4, 2, 1, 32), cos (4, 1, 1, 32) fp32.
  GuardedTensor q(&rng, DType::kF16, {4, 2, 3, 32}, ViewStyle::kOffset);
  GuardedTensor k(&rng, DType::kF16, {4, 2, 1, 32}, ViewStyle::kLastStride2);
  GuardedTensor c2(&rng, DType::kF32, {4, 1, 1, 32}, ViewStyle::kContiguous, -1, 1);
  GuardedTensor s2(&rng, DType::kF32, {4, 1, 1, 32}, ViewStyle::kContiguous, -1, 1);
  std::vector<double> ref_q, ref_k;
  reference::apply_rotary_pos_emb(q.view(), k.view(), c2.view(), s2.view(), Layout::kSBND, RotaryMode::kQuarter,
                                  &ref_q, &ref_k);
  AclTensorPtr qt = to_acl_tensor(q.view()), kt = to_acl_tensor(k.view());
  AclTensorPtr c2t = to_acl_tensor(c2.view()), s2t = to_acl_tensor(s2.view());
  char quarter[] = "quarter";
  ASSERT_EQ(aclnnApplyRotaryPosEmbV2GetWorkspaceSize(qt.get(), kt.get(), c2t.get(), s2t.get(), 2, quarter, &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  workspace.resize(ws + 64);
  ASSERT_EQ(aclnnApplyRotaryPosEmbV2(workspace.data(), ws, exec, nullptr), 0) << aclGetRecentErrMsg();
  r = compare_with_reference(q.view(), ref_q, tolerance_for("rope", DType::kF16));
  EXPECT_TRUE(r.passed) << "query: " << r.describe(q.view());
  r = compare_with_reference(k.view(), ref_k, tolerance_for("rope", DType::kF16));
  EXPECT_TRUE(r.passed) << "key: " << r.describe(k.view());
}

}  // namespace
}  // namespace txops
