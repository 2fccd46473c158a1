// rope_sin_cos_cache_test.cpp — txops::rope_with_sin_cos_cache (aclnnRopeWithSinCosCache / V2, vLLM's
// rotary_embedding) against the fp64 reference, once per ISA (those this CPU lacks are SKIPPED, named): GPT-NeoX and
// GPT-J styles, rotary dims below the head size (pass-through channels), query and key head counts apart (key
// without heads too), positions out of order and repeated (int64, int32, strided), every mrope section CANN lists
// plus odd ones, both cache modes, every dtype pairing, strided / offset views, in place, bit-identical 1-4
// threads; positions outside the cache and the validation rules.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "support/rope_family_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(SinCosCacheOnIsa);

TEST_P(SinCosCacheOnIsa, StylesDimsAndDtypes) {
  FailureBudget budget;
  const int64_t dims[][2] = {{64, 64}, {64, 32}, {128, 64}, {128, 128}, {18, 18}, {34, 16}, {8, 2}, {256, 130}};
  for (bool neox : {true, false}) {
    for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
      for (const auto& hd : dims) {
        SinCosCacheCase c;
        c.neox = neox, c.x_dtype = x_dtype, c.cache_dtype = cs_dtype, c.head_size = hd[0], c.rotary_dim = hd[1];
        c.seed = static_cast<uint32_t>(hd[0] * 31 + hd[1]);
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(SinCosCacheOnIsa, HeadCountsPositionsAndInPlace) {
  FailureBudget budget;
  for (int64_t nk : {0, 1, 3}) {
    for (DType pos : {DType::kI64, DType::kI32}) {
      for (int variant = 0; variant < 4; ++variant) {
        SinCosCacheCase c;
        c.nq = 5, c.nk = nk, c.positions_dtype = pos, c.tokens = 9, c.max_pos = 4;  // many repeats
        c.x_dtype = DType::kBF16, c.cache_dtype = DType::kBF16, c.head_size = 64, c.rotary_dim = 32;
        c.in_place = variant & 1, c.positions_strided = variant & 2, c.neox = variant < 2;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(SinCosCacheOnIsa, MropeSections) {
  FailureBudget budget;
  struct Sections {
    std::vector<int64_t> parts;
    int64_t cache_mode;
  };
  const Sections all[] = {{{16, 24, 24}, 0}, {{24, 20, 20}, 0}, {{8, 12, 12}, 0}, {{16, 16, 16, 16}, 0},
                          {{24, 20, 20}, 1}, {{11, 11, 10}, 1}, {{16, 24, 24}, 1}, {{8, 12, 12}, 1},
                          {{1, 2, 3}, 0},    {{0, 5, 1}, 0},    {{3, 2, 1}, 1},    {{1, 1, 1, 3}, 0}};
  for (const Sections& s : all) {
    for (bool neox : {true, false}) {
      for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
        SinCosCacheCase c;
        c.section = s.parts, c.cache_mode = s.cache_mode, c.neox = neox;
        int64_t half = 0;
        for (int64_t p : s.parts) half += p;
        c.rotary_dim = 2 * half, c.head_size = 2 * half + 8, c.x_dtype = x_dtype, c.cache_dtype = cs_dtype;
        c.tokens = 6, c.max_pos = 11;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(SinCosCacheOnIsa, StridedAndOffsetViews) {
  FailureBudget budget;
  for (ViewStyle x_style : all_view_styles()) {
    for (ViewStyle other : all_view_styles()) {
      for (bool neox : {true, false}) {
        SinCosCacheCase c;
        c.x_style = x_style, c.cache_style = other, c.out_style = other, c.neox = neox;
        c.x_dtype = DType::kF16, c.cache_dtype = DType::kF16, c.head_size = 48, c.rotary_dim = 32;
        if (!budget.check(run_case(c), c.describe())) return;
        c.section = {4, 6, 6}, c.positions_strided = true;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

// On AVX2 / AVX-512, contiguous rows run the token loop (kernels_cache.cpp); the SCALAR target runs the row-buffer
// path (cache_rows.cpp) with the fp32 row formulas. Both must give the same bits, for every style, dtype pairing,
// tail (rotary dims that are not a whole number of vectors) and mrope mode.
TEST_P(SinCosCacheOnIsa, SameBitsAsTheScalarRowPath) {
  FailureBudget budget;
  const int64_t dims[][2] = {{128, 128}, {64, 64}, {96, 96}, {34, 16}, {8, 2}, {256, 130}, {72, 68}};
  for (bool neox : {true, false}) {
    for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
      for (const auto& hd : dims) {
        for (int mrope = 0; mrope < 3; ++mrope) {
          SinCosCacheCase c;
          c.neox = neox, c.x_dtype = x_dtype, c.cache_dtype = cs_dtype, c.head_size = hd[0], c.rotary_dim = hd[1];
          c.tokens = 7, c.nq = 3, c.nk = 2, c.max_pos = 40, c.in_place = mrope == 1;
          c.seed = static_cast<uint32_t>(hd[0] + 7 * hd[1] + mrope);
          if (mrope > 0) {
            const int64_t half = hd[1] / 2, a = half / 4, b = (half - a) / 2;
            c.section = {a, b, half - a - b};
            c.cache_mode = mrope - 1;
          }
          std::vector<uint64_t> here, scalar;
          if (!budget.check(run_case(c, &here), c.describe())) return;
          {
            ScopedIsa on_scalar(Isa::kScalar);
            if (!budget.check(run_case(c, &scalar), c.describe() + " (scalar)")) return;
          }
          if (!budget.check(here == scalar ? "" : "bits differ from the SCALAR row path's", c.describe())) return;
        }
      }
    }
  }
}

// NaNs (quiet and signalling, both signs), infinities, zeros, denormals and values that round across a power of two
// in bf16 query / key and cache, so that inf * 0 and NaN operands reach the stores: every output equals the SCALAR
// row path's (f32_to_bf16 per element), whatever rounding the target's bf16 stores use; NaNs only as NaNs (which
// operand's payload a fused multiply-add passes on depends on its operand order: docs/rope.md, "NaN payloads aside").
TEST_P(SinCosCacheOnIsa, SpecialValuesGiveTheScalarPathsBits) {
  const int64_t T = 6, Nq = 3, Nk = 2, D = 64, P = 5;
  std::vector<uint16_t> q = bf16_with_special_values(T * Nq * D, 12345);
  std::vector<uint16_t> k = bf16_with_special_values(T * Nk * D, 12346);
  std::vector<uint16_t> cache = bf16_with_special_values(P * D, 12347);
  std::vector<int64_t> pos = {0, 4, 2, 2, 1, 3};
  for (bool neox : {true, false}) {
    std::vector<uint16_t> out[2][2];  // [isa here, scalar][query, key]
    for (int run = 0; run < 2; ++run) {
      out[run][0].assign(q.size(), 0);
      out[run][1].assign(k.size(), 0);
      TensorView pv{pos.data(), DType::kI64, {T}}, qv{q.data(), DType::kBF16, {T, Nq * D}},
          kv{k.data(), DType::kBF16, {T, Nk * D}}, cv{cache.data(), DType::kBF16, {P, D}},
          qov{out[run][0].data(), DType::kBF16, {T, Nq * D}}, kov{out[run][1].data(), DType::kBF16, {T, Nk * D}};
      std::unique_ptr<ScopedIsa> on_scalar(run == 1 ? new ScopedIsa(Isa::kScalar) : nullptr);
      ASSERT_TRUE(rope_with_sin_cos_cache(pv, qv, kv, cv, nullptr, 0, D, neox, 0, qov, kov).ok());
    }
    for (int side = 0; side < 2; ++side) {
      for (size_t i = 0; i < out[0][side].size(); ++i) {
        const uint16_t a = out[0][side][i], b = out[1][side][i];
        ASSERT_TRUE(same_bf16_or_both_nan(a, b)) << (neox ? "neox" : "gptj") << (side ? " key" : " query")
                                                 << " element " << i << std::hex << " " << a << " vs " << b;
      }
    }
  }
}

TEST_P(SinCosCacheOnIsa, BitIdenticalOneToFourThreads) {
  FailureBudget budget;
  for (bool neox : {true, false}) {
    SinCosCacheCase c;
    c.neox = neox, c.tokens = 64, c.nq = 16, c.nk = 4, c.head_size = 128, c.rotary_dim = 128, c.max_pos = 300;
    c.x_dtype = DType::kBF16, c.cache_dtype = DType::kBF16;
    if (!expect_bit_identical_for_one_to_four_threads(c, &budget)) return;
  }
}

// ---- positions outside the cache, validation -----------------------------------------------------------------

struct CacheBuffers {
  std::vector<float> q = std::vector<float>(3 * 2 * 16, 1.0f), k = std::vector<float>(3 * 16, 1.0f),
                     cache = std::vector<float>(5 * 16, 0.5f), qo = std::vector<float>(3 * 2 * 16, 7.0f),
                     ko = std::vector<float>(3 * 16, 7.0f);
  std::vector<int64_t> pos = {0, 4, 2};
  TensorView pv{pos.data(), DType::kI64, {3}}, qv{q.data(), DType::kF32, {3, 32}}, kv{k.data(), DType::kF32, {3, 16}},
      cv{cache.data(), DType::kF32, {5, 16}}, qov{qo.data(), DType::kF32, {3, 32}},
      kov{ko.data(), DType::kF32, {3, 16}};
  Status call(const int64_t* section = nullptr, int64_t count = 0, int64_t head_size = 16, int64_t cache_mode = 0) {
    return rope_with_sin_cos_cache(pv, qv, kv, cv, section, count, head_size, true, cache_mode, qov, kov);
  }
};

void expect_refused(const Status& st, StatusCode code, const char* words) {
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
}

TEST(SinCosCacheRules, PositionOutsideTheCacheWritesNothing) {
  for (int64_t bad : {int64_t{5}, int64_t{-1}, int64_t{1} << 40}) {
    CacheBuffers b;
    EXPECT_TRUE(b.call().ok());
    b.qo.assign(b.qo.size(), 7.0f);
    b.ko.assign(b.ko.size(), 7.0f);
    b.pos[2] = bad;
    expect_refused(b.call(), StatusCode::kParamInvalid, "positions values must be in [0, 5)");
    for (float v : b.qo) ASSERT_EQ(v, 7.0f);
    for (float v : b.ko) ASSERT_EQ(v, 7.0f);
  }
}

// Strided views that share memory are trusted, not judged (core/view_checks.h): an out one element past its
// input (rows of 40 floats, 32 used) is accepted. Its values are unspecified, but the call must stay defined
// behaviour: the pass-through channels' copy overlapping its source is a memmove (a fuzzer found it a memcpy;
// this test fails under AddressSanitizer's memcpy-param-overlap check when it is one again).
TEST(SinCosCacheRules, StridedOutOverlappingItsInputStaysDefined) {
  std::vector<float> buf(3 * 40 + 8, 1.0f), k(3 * 16, 1.0f), ko(3 * 16, 0.0f), cache(5 * 8, 0.5f);
  std::vector<int64_t> pos = {0, 4, 2};
  TensorView pv{pos.data(), DType::kI64, {3}}, kv{k.data(), DType::kF32, {3, 16}},
      cv{cache.data(), DType::kF32, {5, 8}}, kov{ko.data(), DType::kF32, {3, 16}};
  for (int64_t shift : {1, 2, 3}) {
    TensorView qv{buf.data(), DType::kF32, {3, 32}, {40, 1}}, qov{buf.data() + shift, DType::kF32, {3, 32}, {40, 1}};
    EXPECT_TRUE(rope_with_sin_cos_cache(pv, qv, kv, cv, nullptr, 0, 16, true, 0, qov, kov).ok());
  }
}

TEST(SinCosCacheRules, Rules) {
  CacheBuffers b;
  expect_refused(b.call(nullptr, 0, 0), StatusCode::kTilingError, "headSize must be positive");
  expect_refused(b.call(nullptr, 0, 12), StatusCode::kTilingError, "queryIn dim 1 must be a multiple of headSize");
  expect_refused(b.call(nullptr, 0, 8), StatusCode::kRuntimeError, "at most headSize");
  const int64_t three[] = {2, 3, 3};
  expect_refused(b.call(three, 3), StatusCode::kTilingError, "positions rank must be 2");
  const int64_t wrong_sum[] = {2, 3, 2};
  std::vector<int64_t> pos2(9, 0);
  b.pv = TensorView(pos2.data(), DType::kI64, {3, 3});
  expect_refused(b.call(wrong_sum, 3), StatusCode::kTilingError, "mropeSection must sum to rotaryDim / 2 = 8");
  EXPECT_TRUE(b.call(three, 3).ok());
  const int64_t four[] = {2, 2, 2, 2};
  expect_refused(b.call(four, 4), StatusCode::kTilingError, "positions dim 0 (sections) must be 4");
  expect_refused(b.call(three, 3, 16, 2), StatusCode::kParamInvalid, "cacheMode must be 0");
  std::vector<int64_t> pos4(12, 0);
  b.pv = TensorView(pos4.data(), DType::kI64, {4, 3});
  expect_refused(b.call(four, 4, 16, 1), StatusCode::kTilingError, "cacheMode 1 needs a 3-element mropeSection");
  CacheBuffers c;
  c.qv = TensorView(c.q.data(), DType::kF32, {3, 16});
  c.qov = TensorView(c.qo.data(), DType::kF32, {3, 16});
  c.kov = c.qv;  // keyOut over queryIn
  expect_refused(c.call(), StatusCode::kParamInvalid, "keyOut");
  CacheBuffers d;
  d.pv.dtype = DType::kF32;
  expect_refused(d.call(), StatusCode::kParamInvalid, "positions dtype must be int64 or int32");
}

}  // namespace
}  // namespace txops
