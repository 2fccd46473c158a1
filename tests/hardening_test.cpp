// hardening_test.cpp — regression tests for defects found from outside (issue 8): a tensor whose storage claims
// more bytes than its aclrtMalloc block (was: SIGSEGV in phase two), shapes whose element count or strides
// overflow int64 (was: accepted, undefined behaviour), InplacePartialRotaryMul(Grad) with an empty slice and any
// cos/sin last dim (was: 561002). Each test failed before its fix.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul.h"
#include "aclnnop/aclnn_inplace_partial_rotary_mul_grad.h"
#include "aclnnop/aclnn_interleave_rope.h"
#include "txops/txops.h"

namespace {

std::string recent() { return aclGetRecentErrMsg(); }

// A device block of `bytes`, freed at scope exit.
struct DeviceBlock {
  explicit DeviceBlock(size_t bytes) : size(bytes) {
    EXPECT_EQ(aclrtMalloc(&ptr, bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    std::memset(ptr, 0, bytes);
  }
  ~DeviceBlock() { aclrtFree(ptr); }
  void* ptr = nullptr;
  size_t size;
};

aclTensor* contiguous(const std::vector<int64_t>& dims, aclDataType dtype, void* data) {
  return aclCreateTensor(dims.data(), dims.size(), dtype, nullptr, 0, ACL_FORMAT_ND, dims.data(), dims.size(), data);
}

// --- defect 1: storage larger than its aclrtMalloc block -------------------------------------------------------

TEST(Hardening, StorageLargerThanItsMallocBlockIsRefusedInPhaseOne) {
  DeviceBlock small(4096), cs(64 * 64 * 4), out(64 * 64 * 64 * 4);
  // x claims 64x64x64 fp32 (1 MiB) on a 4 KiB block.
  aclTensor* x = contiguous({1, 64, 64, 64}, ACL_FLOAT, small.ptr);
  aclTensor* cos = contiguous({1, 1, 64, 64}, ACL_FLOAT, cs.ptr);
  aclTensor* sin = contiguous({1, 1, 64, 64}, ACL_FLOAT, cs.ptr);
  aclTensor* o = contiguous({1, 64, 64, 64}, ACL_FLOAT, out.ptr);
  ASSERT_NE(x, nullptr) << recent();
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(x, cos, sin, o, &ws, &exec), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = recent();
  EXPECT_NE(msg.find("x storage needs 1048576 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aclrtMalloc block has 4096 bytes"), std::string::npos) << msg;
  EXPECT_EQ(exec, nullptr);
  for (aclTensor* t : {x, cos, sin, o}) aclDestroyTensor(t);
}

TEST(Hardening, InteriorPointerIsCheckedAgainstTheRestOfItsBlock) {
  DeviceBlock block(64 * 64 * 4 + 256);
  // 64x64 fp32 fits from the block's start, but not from 512 bytes in.
  char* base = static_cast<char*>(block.ptr);
  aclTensor* fits = contiguous({1, 1, 64, 64}, ACL_FLOAT, base);
  aclTensor* late = contiguous({1, 1, 64, 64}, ACL_FLOAT, base + 512);
  DeviceBlock cs(64 * 4);
  aclTensor* cos = contiguous({1, 1, 1, 64}, ACL_FLOAT, cs.ptr);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnInterleaveRopeGetWorkspaceSize(fits, cos, cos, fits, &ws, &exec), ACLNN_SUCCESS) << recent();
  EXPECT_EQ(aclnnInterleaveRope(nullptr, ws, exec, nullptr), ACLNN_SUCCESS) << recent();
  exec = nullptr;
  EXPECT_EQ(aclnnInterleaveRopeGetWorkspaceSize(late, cos, cos, late, &ws, &exec), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("from the data pointer on"), std::string::npos) << recent();
  for (aclTensor* t : {fits, late, cos}) aclDestroyTensor(t);
}

TEST(Hardening, MallocHostBlocksAreCheckedAndForeignMemoryIsNot) {
  void* host = nullptr;
  ASSERT_EQ(aclrtMallocHost(&host, 1024), ACL_SUCCESS);
  DeviceBlock lens(4), state(2 * 16 * 16 * 4);
  // ChunkGatedDeltaRule with query claiming 64 tokens x 2 heads x 16 fp32 (8 KiB) in a 1 KiB host block.
  aclTensor* q = contiguous({64, 2, 16}, ACL_FLOAT, host);
  std::vector<float> k(64 * 2 * 16), v(64 * 2 * 16), b(64 * 2), o(64 * 2 * 16);
  aclTensor* kt = contiguous({64, 2, 16}, ACL_FLOAT, k.data());
  aclTensor* vt = contiguous({64, 2, 16}, ACL_FLOAT, v.data());
  aclTensor* bt = contiguous({64, 2}, ACL_FLOAT, b.data());
  aclTensor* ot = contiguous({64, 2, 16}, ACL_FLOAT, o.data());
  const int32_t len = 64;
  std::memcpy(lens.ptr, &len, 4);
  aclTensor* lt = contiguous({1}, ACL_INT32, lens.ptr);
  aclTensor* s0 = contiguous({1, 2, 16, 16}, ACL_FLOAT, state.ptr);
  std::vector<float> s1(2 * 16 * 16);
  aclTensor* s1t = contiguous({1, 2, 16, 16}, ACL_FLOAT, s1.data());
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  EXPECT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(q, kt, vt, bt, s0, lt, nullptr, 0.25f, ot, s1t, &ws, &exec),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("query storage needs 8192 bytes"), std::string::npos) << recent();
  EXPECT_NE(recent().find("aclrtMallocHost block has 1024 bytes"), std::string::npos) << recent();
  for (aclTensor* t : {q, kt, vt, bt, ot, lt, s0, s1t}) aclDestroyTensor(t);
  EXPECT_EQ(aclrtFreeHost(host), ACL_SUCCESS);
}

TEST(Hardening, FreedBlockIsNoLongerKnown) {
  void* p = nullptr;
  ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(p), ACL_SUCCESS);
  EXPECT_NE(aclrtFree(p), ACL_SUCCESS);  // the record is gone with the block
}

// --- defect 2: overflow at creation --------------------------------------------------------------------------

TEST(Hardening, OverflowingShapesAreRefusedAtCreation) {
  std::vector<float> buf(64);
  const int64_t big = int64_t{1} << 40;
  const int64_t dims[4] = {big, big, big, 64};
  EXPECT_EQ(aclCreateTensor(dims, 4, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 4, buf.data()), nullptr);
  EXPECT_NE(recent().find("aclCreateTensor: viewDims overflow int64"), std::string::npos) << recent();
  // Explicit strides whose span overflows.
  const int64_t d2[2] = {1 << 20, 4}, s2[2] = {int64_t{1} << 50, 1}, storage = 64;
  EXPECT_EQ(aclCreateTensor(d2, 2, ACL_FLOAT, s2, 0, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  EXPECT_NE(recent().find("overflows"), std::string::npos) << recent();
  // A negative stride reaching INT64_MIN.
  const int64_t d3[1] = {3}, s3[1] = {INT64_MIN / 2};
  EXPECT_EQ(aclCreateTensor(d3, 1, ACL_FLOAT, s3, 0, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  // Storage dims whose product overflows, and a negative storage dim.
  const int64_t d4[1] = {4}, st4[2] = {int64_t{1} << 40, int64_t{1} << 40}, neg[1] = {-4};
  EXPECT_EQ(aclCreateTensor(d4, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, st4, 2, buf.data()), nullptr);
  EXPECT_NE(recent().find("storageDims overflow"), std::string::npos) << recent();
  EXPECT_EQ(aclCreateTensor(d4, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, neg, 1, buf.data()), nullptr);
  EXPECT_NE(recent().find("storageDims[0] must be >= 0"), std::string::npos) << recent();
  // Offset + span beyond int64.
  const int64_t d5[1] = {2}, s5[1] = {1};
  EXPECT_EQ(aclCreateTensor(d5, 1, ACL_FLOAT, s5, INT64_MAX, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  // Nine storage dims.
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(aclCreateTensor(d5, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, nine, 9, buf.data()), nullptr);
}

TEST(Hardening, ViewOutsideItsStorageIsRefusedAtCreation) {
  std::vector<float> buf(64);
  const int64_t dims[2] = {4, 16}, storage = 64;
  EXPECT_NE(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 1, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  EXPECT_NE(recent().find("must lie inside its storage of 64 elements"), std::string::npos) << recent();
  const int64_t back[2] = {-16, 1};  // rows walking backwards from offset 0: element -48
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, back, 0, ACL_FORMAT_ND, &storage, 1, buf.data()), nullptr);
  aclTensor* ok = aclCreateTensor(dims, 2, ACL_FLOAT, back, 48, ACL_FORMAT_ND, &storage, 1, buf.data());
  EXPECT_NE(ok, nullptr) << recent();
  aclDestroyTensor(ok);
  // An empty view reaches nothing: any offset inside int64 is fine.
  const int64_t empty[2] = {0, 16};
  ok = aclCreateTensor(empty, 2, ACL_FLOAT, nullptr, 1000, ACL_FORMAT_ND, &storage, 1, buf.data());
  EXPECT_NE(ok, nullptr) << recent();
  aclDestroyTensor(ok);
}

TEST(Hardening, CppApiRefusesOverflowingViews) {
  std::vector<float> buf(64);
  const int64_t big = int64_t{1} << 40;
  const int64_t shape[4] = {big, big, big, 64};
  txops::TensorView x = txops::TensorView::make(buf.data(), txops::DType::kF32, 4, shape, nullptr);
  txops::TensorView cos(buf.data(), txops::DType::kF32, {1, 1, 1, 64});
  txops::Status st = txops::interleave_rope(x, cos, cos, x);
  EXPECT_EQ(st.code(), txops::StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("x shape"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("overflows"), std::string::npos) << st.message();
  // A hand-made view with ndim out of range.
  txops::TensorView bad = cos;
  bad.ndim = 100;
  st = txops::interleave_rope(bad, cos, cos, bad);
  EXPECT_EQ(st.code(), txops::StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("ndim must be in [0, 8]"), std::string::npos) << st.message();
}

// --- defect 3: InplacePartialRotaryMul(Grad) with an empty slice -----------------------------------------------

class EmptySlice : public ::testing::TestWithParam<bool> {};

TEST_P(EmptySlice, IsANoOpWhateverTheCosLastDim) {
  const bool grad = GetParam();
  std::vector<uint16_t> x(2 * 4 * 3 * 192);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i * 2654435761u >> 16);
  const std::vector<uint16_t> before = x;
  std::vector<uint16_t> cs(4 * 128, 0x3c00);
  aclTensor* xt = contiguous({2, 4, 3, 192}, ACL_BF16, x.data());
  aclTensor* ct = contiguous({1, 4, 1, 128}, ACL_BF16, cs.data());
  auto phase_one = [&](const aclIntArray* slice, aclOpExecutor** exec) {
    uint64_t ws = 0;
    return grad ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(xt, ct, ct, 1, slice, &ws, exec)
                : aclnnInplacePartialRotaryMulGetWorkspaceSize(xt, ct, ct, 1, slice, &ws, exec);
  };
  auto phase_two = [&](aclOpExecutor* exec) {
    return grad ? aclnnInplacePartialRotaryMulGrad(nullptr, 0, exec, nullptr)
                : aclnnInplacePartialRotaryMul(nullptr, 0, exec, nullptr);
  };
  for (auto bounds : {std::pair<int64_t, int64_t>{0, 0}, {64, 64}, {192, 192}, {7, 7}}) {
    const int64_t v[2] = {bounds.first, bounds.second};
    aclIntArray* slice = aclCreateIntArray(v, 2);
    aclOpExecutor* exec = nullptr;
    ASSERT_EQ(phase_one(slice, &exec), ACLNN_SUCCESS) << "[" << v[0] << ", " << v[1] << "): " << recent();
    ASSERT_EQ(phase_two(exec), ACLNN_SUCCESS) << recent();
    EXPECT_EQ(x, before) << "[" << v[0] << ", " << v[1] << ") changed x";
    aclDestroyIntArray(slice);
  }
  // The other rules still apply to an empty slice: start <= end <= D, cos rank, null tensors.
  const int64_t past[2] = {193, 193};
  aclIntArray* slice = aclCreateIntArray(past, 2);
  aclOpExecutor* exec = nullptr;
  EXPECT_EQ(phase_one(slice, &exec), ACLNN_ERR_INNER_TILING_ERROR);
  EXPECT_NE(recent().find("partialSlice start"), std::string::npos) << recent();
  aclDestroyIntArray(slice);
  const int64_t zero[2] = {0, 0};
  slice = aclCreateIntArray(zero, 2);
  aclTensor* c3 = contiguous({4, 1, 128}, ACL_BF16, cs.data());
  uint64_t ws = 0;
  EXPECT_EQ(grad ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(xt, c3, c3, 1, slice, &ws, &exec)
                 : aclnnInplacePartialRotaryMulGetWorkspaceSize(xt, c3, c3, 1, slice, &ws, &exec),
            ACLNN_ERR_INNER_TILING_ERROR);
  EXPECT_NE(recent().find("cos"), std::string::npos) << recent();
  EXPECT_EQ(grad ? aclnnInplacePartialRotaryMulGradGetWorkspaceSize(xt, nullptr, ct, 1, slice, &ws, &exec)
                 : aclnnInplacePartialRotaryMulGetWorkspaceSize(xt, nullptr, ct, 1, slice, &ws, &exec),
            ACLNN_ERR_PARAM_NULLPTR);
  aclDestroyIntArray(slice);
  for (aclTensor* t : {xt, ct, c3}) aclDestroyTensor(t);
}

INSTANTIATE_TEST_SUITE_P(ForwardAndGrad, EmptySlice, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Grad" : "Forward"; });

TEST(Hardening, EmptySliceNoOpThroughTheCppApi) {
  std::vector<float> x(1 * 2 * 3 * 64, 1.5f);
  const std::vector<float> before = x;
  std::vector<float> cs(128, 0.5f);
  txops::TensorView xv(x.data(), txops::DType::kF32, {1, 2, 3, 64});
  txops::TensorView cv(cs.data(), txops::DType::kF32, {1, 1, 1, 128});
  EXPECT_TRUE(txops::inplace_partial_rotary_mul(xv, cv, cv, txops::RotaryMode::kHalf, 32, 32).ok());
  EXPECT_EQ(x, before);
}

}  // namespace

namespace {

// Copies and fills are checked against the block the runtime handed out, whatever destMax claims.
TEST(Hardening, MemcpyAndMemsetStayInsideTheirBlocks) {
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, 100, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&b, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(a, 4096, 0, 100), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemset(a, 4096, 0, 101), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("100 bytes left in devPtr's aclrtMalloc block"), std::string::npos) << recent();
  EXPECT_EQ(aclrtMemset(static_cast<char*>(a) + 60, 4096, 0, 41), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclrtMemcpy(b, 4096, a, 100, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  EXPECT_EQ(aclrtMemcpy(b, 4096, a, 200, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);  // reads past a
  EXPECT_NE(recent().find("src's aclrtMalloc block"), std::string::npos) << recent();
  EXPECT_EQ(aclrtMemcpy(a, 4096, b, 200, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);  // writes past a
  EXPECT_NE(recent().find("dst's aclrtMalloc block"), std::string::npos) << recent();
  EXPECT_EQ(aclrtFree(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(b), ACL_SUCCESS);
}

}  // namespace

namespace {

// A request larger than the machine is refused before the allocator sees it (SIZE_MAX used to wrap the 64-byte
// rounding to a 64-byte block recorded as SIZE_MAX bytes).
TEST(Hardening, HugeMallocIsRefused) {
  for (size_t size : {SIZE_MAX, SIZE_MAX - 10, size_t{1} << 62}) {
    void* p = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(aclrtMalloc(&p, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION) << size;
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(recent().find("cannot allocate"), std::string::npos) << recent();
    void* h = nullptr;
    EXPECT_EQ(aclrtMallocHost(&h, size), ACL_ERROR_RT_MEMORY_ALLOCATION) << size;
  }
}

}  // namespace

namespace {

using txops::DType;
using txops::StatusCode;
using txops::TensorView;

// A small prefill problem (one sequence of T tokens, Nk = Nv = 2, Dk = Dv = 16) in fp32.
struct Prefill {
  static constexpr int64_t T = 70, N = 2, D = 16;
  std::vector<float> q, k, v, beta, s0, s1, out;
  std::vector<int32_t> lens{static_cast<int32_t>(T)};
  Prefill() : q(T * N * D), k(T * N * D), v(T * N * D), beta(T * N, 0.5f), s0(N * D * D), s1(N * D * D), out(T * N * D) {
    uint32_t x = 12345;
    auto next = [&x] { x = x * 1664525u + 1013904223u; return static_cast<float>(x >> 8) / 16777216.0f - 0.5f; };
    for (auto* vec : {&q, &k, &v, &s0}) for (float& e : *vec) e = next() * 0.25f;
  }
  TensorView view(std::vector<float>& a, std::initializer_list<int64_t> shape) { return TensorView(a.data(), DType::kF32, shape); }
  txops::Status run(const TensorView& o, const TensorView& init, const TensorView& fin) {
    return txops::chunk_gated_delta_rule(view(q, {T, N, D}), view(k, {T, N, D}), view(v, {T, N, D}), view(beta, {T, N}),
                                         init, TensorView(lens.data(), DType::kI32, {1}), nullptr, 0.25f, o, fin);
  }
};

TEST(Hardening, GatedDeltaRuleOutputsMustNotBroadcastOrOverlap) {
  Prefill p;
  TensorView init = p.view(p.s0, {1, 2, 16, 16}), fin = p.view(p.s1, {1, 2, 16, 16});
  ASSERT_TRUE(p.run(p.view(p.out, {70, 2, 16}), init, fin).ok());
  // out broadcast over tokens (stride 0): every token would write the same row.
  TensorView bcast(p.out.data(), DType::kF32, {70, 2, 16}, {0, 16, 1});
  txops::Status st = p.run(bcast, init, fin);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("out dim 0 must not broadcast"), std::string::npos) << st.message();
  // out written over query.
  st = p.run(p.view(p.q, {70, 2, 16}), init, fin);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("out must not alias query"), std::string::npos) << st.message();
  // finalState overlapping out.
  TensorView fin_on_out(p.out.data() + 16, DType::kF32, {1, 2, 16, 16});
  st = p.run(p.view(p.out, {70, 2, 16}), init, fin_on_out);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("finalState must not partially overlap out"), std::string::npos) << st.message();
}

// finalState may be initialState itself (a state updated in place): the same bits as separate buffers, on both
// prefill kernels.
TEST(Hardening, GatedDeltaRuleFinalStateMayAliasInitialState) {
  for (const char* kernel : {"chunked", "recurrent"}) {
    setenv("TXOPS_GDR_KERNEL", kernel, 1);
    Prefill p;
    ASSERT_TRUE(p.run(p.view(p.out, {70, 2, 16}), p.view(p.s0, {1, 2, 16, 16}), p.view(p.s1, {1, 2, 16, 16})).ok());
    const std::vector<float> out_separate = p.out, final_separate = p.s1;
    std::fill(p.out.begin(), p.out.end(), 0.0f);
    txops::Status st = p.run(p.view(p.out, {70, 2, 16}), p.view(p.s0, {1, 2, 16, 16}), p.view(p.s0, {1, 2, 16, 16}));
    ASSERT_TRUE(st.ok()) << kernel << ": " << st.message();
    EXPECT_EQ(0, std::memcmp(p.out.data(), out_separate.data(), p.out.size() * 4)) << kernel;
    EXPECT_EQ(0, std::memcmp(p.s0.data(), final_separate.data(), p.s0.size() * 4)) << kernel;
  }
  unsetenv("TXOPS_GDR_KERNEL");
}

// Decode: the pool must not broadcast, and a pool of 2^40 broadcast slots is refused without allocating for it
// (the slot-conflict check used to size an array by BlockNum).
TEST(Hardening, RecurrentGatedDeltaRulePoolRules) {
  const int64_t T = 2, N = 1, D = 8;
  std::vector<float> q(T * N * D, 0.1f), k(T * N * D, 0.1f), v(T * N * D, 0.1f), beta(T * N, 0.5f), out(T * N * D);
  std::vector<float> pool(4 * N * D * D, 0.0f);
  std::vector<int32_t> lens{1, 1}, idx{0, 1};
  auto run = [&](const TensorView& state, const TensorView& o) {
    return txops::recurrent_gated_delta_rule(
        TensorView(q.data(), DType::kF32, {T, N, D}), TensorView(k.data(), DType::kF32, {T, N, D}),
        TensorView(v.data(), DType::kF32, {T, N, D}), TensorView(beta.data(), DType::kF32, {T, N}), state,
        TensorView(lens.data(), DType::kI32, {2}), TensorView(idx.data(), DType::kI32, {T}), nullptr, nullptr,
        nullptr, 0.3f, o);
  };
  const TensorView o(out.data(), DType::kF32, {T, N, D});
  ASSERT_TRUE(run(TensorView(pool.data(), DType::kF32, {4, N, D, D}), o).ok());
  txops::Status st = run(TensorView(pool.data(), DType::kF32, {int64_t{1} << 40, N, D, D}, {0, 64, 8, 1}), o);
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("stateRef dim 0 must not broadcast"), std::string::npos) << st.message();
  st = run(TensorView(pool.data(), DType::kF32, {4, N, D, D}), TensorView(pool.data() + 64, DType::kF32, {T, N, D}));
  EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
  EXPECT_NE(st.message().find("stateRef must not partially overlap out"), std::string::npos) << st.message();
}

}  // namespace

namespace {

// Memory freed between the two phases: phase two refuses to run (the kernel would read freed memory).
TEST(Hardening, BlockFreedBetweenPhasesIsRefused) {
  void* x = nullptr;
  ASSERT_EQ(aclrtMalloc(&x, 64 * 64 * 4, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  DeviceBlock cs(64 * 4);
  aclTensor* xt = contiguous({1, 1, 64, 64}, ACL_FLOAT, x);
  aclTensor* ct = contiguous({1, 1, 1, 64}, ACL_FLOAT, cs.ptr);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnInterleaveRopeGetWorkspaceSize(xt, ct, ct, xt, &ws, &exec), ACLNN_SUCCESS) << recent();
  ASSERT_EQ(aclrtFree(x), ACL_SUCCESS);
  EXPECT_EQ(aclnnInterleaveRope(nullptr, ws, exec, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("x's memory block (16384 bytes) was freed after phase one"), std::string::npos) << recent();
  EXPECT_EQ(aclDestroyAclOpExecutor(exec), ACLNN_SUCCESS);  // still live: refused before it ran
  aclDestroyTensor(xt);
  aclDestroyTensor(ct);
}

// A workspace pointer inside an aclrtMalloc block too small for what phase one asked, whatever workspaceSize says.
TEST(Hardening, WorkspaceSmallerThanItsClaimIsRefused) {
  Prefill p;
  auto tensor = [](std::vector<float>& a, std::vector<int64_t> dims) { return contiguous(dims, ACL_FLOAT, a.data()); };
  aclTensor* q = tensor(p.q, {70, 2, 16});
  aclTensor* k = tensor(p.k, {70, 2, 16});
  aclTensor* v = tensor(p.v, {70, 2, 16});
  aclTensor* b = tensor(p.beta, {70, 2});
  aclTensor* s0 = tensor(p.s0, {1, 2, 16, 16});
  aclTensor* s1 = tensor(p.s1, {1, 2, 16, 16});
  aclTensor* o = tensor(p.out, {70, 2, 16});
  aclTensor* lens = contiguous({1}, ACL_INT32, p.lens.data());
  setenv("TXOPS_GDR_KERNEL", "chunked", 1);
  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  ASSERT_EQ(aclnnChunkGatedDeltaRuleGetWorkspaceSize(q, k, v, b, s0, lens, nullptr, 0.25f, o, s1, &ws, &exec),
            ACLNN_SUCCESS) << recent();
  unsetenv("TXOPS_GDR_KERNEL");
  if (ws == 0) GTEST_SKIP() << "the chunked prefill asked for no workspace";
  DeviceBlock small(64);
  EXPECT_EQ(aclnnChunkGatedDeltaRule(small.ptr, ws, exec, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("workspace needs"), std::string::npos) << recent();
  DeviceBlock big(ws);
  EXPECT_EQ(aclnnChunkGatedDeltaRule(big.ptr, ws, exec, nullptr), ACLNN_SUCCESS) << recent();
  for (aclTensor* t : {q, k, v, b, s0, s1, o, lens}) aclDestroyTensor(t);
}

}  // namespace

namespace {

// A corrupted array size (e.g. -1 cast to uint64_t) is refused before anything is read or allocated.
TEST(Hardening, AbsurdArraySizesAreRefused) {
  const int64_t iv[2] = {0, 1};
  const float fv[2] = {0, 1};
  const bool bv[2] = {true, false};
  EXPECT_EQ(aclCreateIntArray(iv, UINT64_MAX), nullptr);
  EXPECT_NE(recent().find("aclCreateIntArray: size must be <= 16777216"), std::string::npos) << recent();
  EXPECT_EQ(aclCreateFloatArray(fv, UINT64_MAX), nullptr);
  EXPECT_EQ(aclCreateBoolArray(bv, uint64_t{1} << 40), nullptr);
  const aclTensor* none[1] = {nullptr};
  EXPECT_EQ(aclCreateTensorList(none, UINT64_MAX), nullptr);
  EXPECT_NE(recent().find("aclCreateTensorList: size must be"), std::string::npos) << recent();
}

}  // namespace
