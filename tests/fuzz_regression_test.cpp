// fuzz_regression_test.cpp — one regression test per defect the libFuzzer targets (fuzz/) found in src/. Each
// names the target and what it found; each failed before its fix (the undefined-behaviour ones under the
// sanitizer build, make test-san, which is where the fuzzers saw them), except where a test says it guards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "txops/txops.h"

namespace {

using txops::DType;
using txops::Status;
using txops::StatusCode;
using txops::TensorView;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f * scale;
  return v;
}

// --- fuzz_interleave_rope: a dim of size 1 with a huge stride --------------------------------------------------
// The stride of a size-1 dim addresses nothing, so any value is a valid view; the RoPE row loops stepped by it
// past the last row and prefetched 8 strides ahead: 8 * (2^62 - 1) overflowed int64 (UBSan, kernels_rows-inl.h).
// The plan now steps 0 along size-1 dims.
constexpr int64_t kHugeStride = (int64_t{1} << 62) - 1;

TEST(FuzzRegression, InterleaveRopeSizeOneDimWithHugeStride) {
  const int64_t B = 2, N = 3, S = 1, D = 64;
  std::vector<float> x = ramp(B * N * S * D, 2.0f), cos = ramp(S * D, 1.0f), sin = ramp(S * D, 1.5f);
  std::vector<float> out(x.size()), want(x.size());
  const TensorView cs(cos.data(), DType::kF32, {1, 1, S, D}), sn(sin.data(), DType::kF32, {1, 1, S, D});
  ASSERT_TRUE(txops::interleave_rope(TensorView(x.data(), DType::kF32, {B, N, S, D}), cs, sn,
                                     TensorView(want.data(), DType::kF32, {B, N, S, D}))
                  .ok());
  for (int isa = 0; isa <= 2; ++isa) {
    txops::set_max_isa(static_cast<txops::Isa>(isa));
    std::fill(out.begin(), out.end(), 0.0f);
    const TensorView xv(x.data(), DType::kF32, {B, N, S, D}, {N * D, D, kHugeStride, 1});
    const TensorView ov(out.data(), DType::kF32, {B, N, S, D}, {N * D, D, kHugeStride, 1});
    const Status st = txops::interleave_rope(xv, cs, sn, ov);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(std::memcmp(out.data(), want.data(), out.size() * sizeof(float)), 0) << "isa " << isa;
  }
  txops::set_max_isa(txops::Isa::kAvx512);
}

// The same plan rule for the fused grad's member dims (no defect seen there: this guards the plan change).
TEST(FuzzRegression, ApplyRotaryPosEmbGradSizeOneMemberDimWithHugeStride) {
  // BSND with cos B = 1: B is a member dim of the fused grad's groups; here B = 1 with a huge stride.
  const int64_t B = 1, S = 3, N = 2, D = 8;
  const size_t n = B * S * N * D, nc = S * D;
  std::vector<float> q = ramp(n, 1.0f), k = ramp(n, 0.5f), gq = ramp(n, 1.5f), gk = ramp(n, 2.0f);
  std::vector<float> cos = ramp(nc, 1.0f), sin = ramp(nc, 0.7f);
  std::vector<float> dq(n), dk(n), dc(nc), ds(nc), dq0(n), dk0(n), dc0(nc), ds0(nc);
  auto act = [&](std::vector<float>& v, bool huge) {
    return huge ? TensorView(v.data(), DType::kF32, {B, S, N, D}, {kHugeStride, N * D, D, 1})
                : TensorView(v.data(), DType::kF32, {B, S, N, D});
  };
  auto cs = [&](std::vector<float>& v) { return TensorView(v.data(), DType::kF32, {1, S, 1, D}); };
  for (bool huge : {false, true}) {
    const TensorView qv = act(q, huge), kv = act(k, huge), dcv = cs(huge ? dc : dc0), dsv = cs(huge ? ds : ds0);
    const Status st = txops::apply_rotary_pos_emb_grad(act(gq, huge), act(gk, huge), cs(cos), cs(sin), &qv, &kv,
                                                       txops::RotaryMode::kHalf, txops::Layout::kBSND,
                                                       act(huge ? dq : dq0, huge), act(huge ? dk : dk0, huge), &dcv,
                                                       &dsv);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  EXPECT_EQ(dq, dq0);
  EXPECT_EQ(dk, dk0);
  EXPECT_EQ(dc, dc0);
  EXPECT_EQ(ds, ds0);
}

// --- fuzz_runtime, fuzz_apply_rotary_pos_emb_grad: data not aligned to its element size -------------------------
// An fp32 tensor 1 byte into its aclrtMalloc block was accepted and the kernels loaded floats through a
// misaligned pointer (UBSan, simd_convert-inl.h). Phase one now refuses it (161002), for every op (the shared
// check_view_extent), for aclnn tensors and C++ views alike.
TEST(FuzzRegression, MisalignedDataIsRefusedInPhaseOne) {
  const int64_t dims[4] = {1, 1, 2, 64}, cdims[4] = {1, 1, 1, 64};
  void* block = nullptr;
  void* cs = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 2 * 64 * 4 + 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&cs, 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::memset(block, 0, 2 * 64 * 4 + 64);
  std::memset(cs, 0, 64 * 4);
  aclTensor* x = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 4, static_cast<char*>(block) + 1);
  aclTensor* c = aclCreateTensor(cdims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, cdims, 4, cs);
  ASSERT_NE(x, nullptr) << aclGetRecentErrMsg();
  ASSERT_NE(c, nullptr) << aclGetRecentErrMsg();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x, c, c, x, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("aclnnInterleaveRope: x data must be aligned to its element size (4 bytes, fp32)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(ex, nullptr);
  aclDestroyTensor(x);
  aclDestroyTensor(c);

  // The C++ API, the gated delta rule: query (T, Nk, Dk) bf16 one byte off.
  std::vector<uint16_t> act(64 + 1), state(16 * 16);
  std::vector<int32_t> lens = {1};
  auto* odd = reinterpret_cast<uint16_t*>(reinterpret_cast<char*>(act.data()) + 1);
  const TensorView q(odd, DType::kBF16, {1, 1, 16}), v(act.data(), DType::kBF16, {1, 1, 16});
  const TensorView beta(act.data(), DType::kBF16, {1, 1}), s(state.data(), DType::kBF16, {1, 1, 16, 16});
  const TensorView l(lens.data(), DType::kI32, {1});
  std::vector<uint16_t> o(16), s1(16 * 16);
  const Status st = txops::chunk_gated_delta_rule(q, v, v, beta, s, l, nullptr, 1.0f,
                                                  TensorView(o.data(), DType::kBF16, {1, 1, 16}),
                                                  TensorView(s1.data(), DType::kBF16, {1, 1, 16, 16}));
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("query data must be aligned to its element size (2 bytes, bf16)"), std::string::npos)
      << st.message();
  aclrtFree(block);
  aclrtFree(cs);
}

// --- fuzz_chunk_gated_delta_rule (and the other targets): a data pointer one past its block ------------------
// A tensor whose data pointer is the end of its aclrtMalloc block (block + size) was not matched to the block
// (blocks held [base, base + size)), so it counted as foreign memory and was not checked: the op read
// actualSeqLengths past the block (ASan heap-buffer-overflow in validate.cpp). The end now belongs to the block,
// with 0 bytes left in it.
TEST(FuzzRegression, DataPointerAtTheEndOfItsBlockIsChecked) {
  const int64_t dims[4] = {1, 1, 2, 64}, cdims[4] = {1, 1, 1, 64};
  void* block = nullptr;
  void* cs = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 2 * 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&cs, 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::memset(cs, 0, 64 * 4);
  aclTensor* x = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 4,
                                 static_cast<char*>(block) + 2 * 64 * 4);
  aclTensor* c = aclCreateTensor(cdims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, cdims, 4, cs);
  ASSERT_NE(x, nullptr) << aclGetRecentErrMsg();
  ASSERT_NE(c, nullptr) << aclGetRecentErrMsg();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x, c, c, x, &ws, &ex), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("x storage needs 512 bytes (128 elements of fp32) but its aclrtMalloc block has 0 bytes from "
                     "the data pointer on"),
            std::string::npos)
      << msg;
  EXPECT_EQ(ex, nullptr);
  // aclrtMemset / aclrtMemcpy at the end of the block: nothing may be written there
  EXPECT_NE(aclrtMemset(static_cast<char*>(block) + 2 * 64 * 4, 4, 0, 4), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(static_cast<char*>(block) + 2 * 64 * 4, 0, 0, 0), ACL_SUCCESS);
  aclDestroyTensor(x);
  aclDestroyTensor(c);
  aclrtFree(block);
  aclrtFree(cs);
}

// --- every target: an empty view with a huge offset ---------------------------------------------------------------
// An empty view reaches no element, so aclCreateTensor accepts any offset for it; phase one then formed the data
// pointer as offset * element size, which overflowed int64 for offsets near 2^63 (UBSan, acl_tensor.cpp). An
// empty view's data pointer is now its storage's.
TEST(FuzzRegression, EmptyViewWithAHugeOffset) {
  const int64_t dims[4] = {1, 0, 1, 64}, storage[1] = {64}, cdims[4] = {1, 1, 1, 64};
  std::vector<float> mem(64, 1.0f), cmem(64, 0.5f);
  aclTensor* x = aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, INT64_MAX, ACL_FORMAT_ND, storage, 1, mem.data());
  aclTensor* c = aclCreateTensor(cdims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, cdims, 4, cmem.data());
  ASSERT_NE(x, nullptr) << aclGetRecentErrMsg();
  ASSERT_NE(c, nullptr) << aclGetRecentErrMsg();
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = aclnnInterleaveRopeGetWorkspaceSize(x, c, c, x, &ws, &ex);
  if (st == ACLNN_SUCCESS) {
    EXPECT_EQ(aclnnInterleaveRope(nullptr, 0, ex, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  } else {
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnInterleaveRope"), std::string::npos);
  }
  EXPECT_TRUE(std::all_of(mem.begin(), mem.end(), [](float v) { return v == 1.0f; }));
  aclDestroyTensor(x);
  aclDestroyTensor(c);
}

// --- fuzz_chunk_gated_delta_rule: a NaN gate on the scalar chunked kernel --------------------------------------
// The chunked kernel forms exp(G_i - G_j) with Highway's Exp, whose SCALAR version converts its argument to int:
// a NaN in g (any caller data) was a NaN-to-int conversion, undefined behaviour (UBSan). NaN now maps to NaN.
TEST(FuzzRegression, ChunkedKernelScalarNaNGate) {
  const int64_t T = 8, D = 16;
  std::vector<float> q = ramp(T * D, 1.0f), k = ramp(T * D, 0.8f), v = ramp(T * D, 1.2f), beta(T, 0.5f), g(T, -0.1f);
  std::vector<float> s0(D * D, 0.0f), s1(D * D), out(T * D);
  std::vector<int32_t> lens = {static_cast<int32_t>(T)};
  g[3] = NAN;
  setenv("TXOPS_GDR_KERNEL", "chunked", 1);
  txops::set_max_isa(txops::Isa::kScalar);
  const TensorView gv(g.data(), DType::kF32, {T, 1});
  const Status st = txops::chunk_gated_delta_rule(
      TensorView(q.data(), DType::kF32, {T, 1, D}), TensorView(k.data(), DType::kF32, {T, 1, D}),
      TensorView(v.data(), DType::kF32, {T, 1, D}), TensorView(beta.data(), DType::kF32, {T, 1}),
      TensorView(s0.data(), DType::kF32, {1, 1, D, D}), TensorView(lens.data(), DType::kI32, {1}), &gv, 0.25f,
      TensorView(out.data(), DType::kF32, {T, 1, D}), TensorView(s1.data(), DType::kF32, {1, 1, D, D}));
  txops::set_max_isa(txops::Isa::kAvx512);
  unsetenv("TXOPS_GDR_KERNEL");
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(std::isnan(out[(T - 1) * D])) << "the NaN gate propagates";
}

// --- fuzz_recurrent_gated_delta_rule: the start-state snapshot of a pool with a negative stride ------------------
// Decode with conflicting slots copies the start states first (GdrSnapshot); its byte offsets were
// (r * stride + c * stride) * size_t: a negative stride became a wrapping unsigned offset (UBSan pointer overflow).
TEST(FuzzRegression, DecodeSnapshotOfANegativeStridePool) {
  const int64_t T = 2, D = 16, slots = 2;
  std::vector<float> q = ramp(T * D, 1.0f), k = ramp(T * D, 0.8f), v = ramp(T * D, 1.2f), beta(T, 0.5f);
  std::vector<int32_t> lens = {static_cast<int32_t>(T)}, idx = {0, 0};  // both tokens write slot 0: a conflict
  std::vector<float> pool = ramp(slots * D * D, 0.3f), flipped(pool.size()), out(T * D), out_flipped(T * D);
  for (int64_t s = 0; s < slots; ++s)  // the same logical pool, each row stored reversed
    for (int64_t r = 0; r < D; ++r)
      for (int64_t c = 0; c < D; ++c) flipped[(s * D + r) * D + (D - 1 - c)] = pool[(s * D + r) * D + c];
  auto run = [&](float* state, const std::vector<int64_t>& strides, std::vector<float>* o) {
    const TensorView sv(state, DType::kF32, {slots, 1, D, D}, {strides[0], strides[1], strides[2], strides[3]});
    return txops::recurrent_gated_delta_rule(
        TensorView(q.data(), DType::kF32, {T, 1, D}), TensorView(k.data(), DType::kF32, {T, 1, D}),
        TensorView(v.data(), DType::kF32, {T, 1, D}), TensorView(beta.data(), DType::kF32, {T, 1}), sv,
        TensorView(lens.data(), DType::kI32, {1}), TensorView(idx.data(), DType::kI32, {T}), nullptr, nullptr,
        nullptr, 0.25f, TensorView(o->data(), DType::kF32, {T, 1, D}));
  };
  Status st = run(pool.data(), {D * D, D * D, D, 1}, &out);
  ASSERT_TRUE(st.ok()) << st.message();
  st = run(flipped.data() + (D - 1), {D * D, D * D, D, -1}, &out_flipped);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out, out_flipped);
  for (int64_t s = 0; s < slots; ++s)
    for (int64_t r = 0; r < D; ++r)
      for (int64_t c = 0; c < D; ++c)
        ASSERT_EQ(flipped[(s * D + r) * D + (D - 1 - c)], pool[(s * D + r) * D + c]) << s << " " << r << " " << c;
}

}  // namespace
