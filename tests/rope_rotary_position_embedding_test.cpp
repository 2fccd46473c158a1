// rope_rotary_position_embedding_test.cpp — txops::rotary_position_embedding (aclnnRotaryPositionEmbedding, V2 with
// a rotate matrix) and txops::rotary_position_embedding_grad against the fp64 reference, once per ISA (those this
// CPU lacks are SKIPPED, named): every mode, head dims around the vector widths, every dtype pairing, every
// broadcast pattern of cos (own shape, lower rank, stride 0), ranks 3 and 4, odd head counts, strided / offset /
// padded views, in place, dcos/dsin with and without x, bit-identical 1-4 threads; and the validation rules.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "support/rope_family_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(RotaryPositionEmbeddingOnIsa);

const int64_t kHeadDims[] = {2, 4, 6, 8, 14, 16, 18, 30, 32, 34, 62, 64, 66, 126, 128, 130, 1024};

bool width_ok(RotaryMode mode, int64_t d) { return mode != RotaryMode::kQuarter || d % 4 == 0; }

TEST_P(RotaryPositionEmbeddingOnIsa, ModesHeadDimsAndDtypes) {
  FailureBudget budget;
  for (bool backward : {false, true}) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
        for (int64_t d : kHeadDims) {
          if (!width_ok(mode, d)) continue;
          RotaryEmbeddingCase c;
          c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.mode = mode, c.backward = backward;
          c.x_shape = {2, d >= 1024 ? 2 : 5, 3, d};
          c.cos_shape = {1, c.x_shape[1], 1, d};
          c.seed = static_cast<uint32_t>(d * 7 + static_cast<int>(mode));
          if (!budget.check(run_case(c), c.describe())) return;
        }
      }
    }
  }
}

// The SIMD row loops give the bits of the SCALAR target's fp32 rows, in every mode, direction, dtype pairing and
// tail, whether the heads of a token share one cos row or each has its own.
TEST_P(RotaryPositionEmbeddingOnIsa, SameBitsAsTheScalarRows) {
  FailureBudget budget;
  for (bool backward : {false, true}) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
        for (int64_t d : {8, 18, 64, 66, 128, 130}) {
          for (int variant = 0; variant < (backward ? 3 : 2); ++variant) {
            const bool heads_share_cos = variant != 1;
            if (!width_ok(mode, d)) continue;
            RotaryEmbeddingCase c;
            c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.mode = mode, c.backward = backward;
            c.with_x = variant == 2;  // the fused grad: dcos / dsin summed over 2 x 3 rows (pairs and an odd one)
            c.x_shape = {2, 5, 3, d};
            c.cos_shape = heads_share_cos ? std::vector<int64_t>{1, 5, 1, d} : std::vector<int64_t>{1, 5, 3, d};
            c.seed = static_cast<uint32_t>(d * 5 + static_cast<int>(mode));
            std::vector<uint64_t> here, scalar;
            if (!budget.check(run_case(c, &here), c.describe())) return;
            {
              ScopedIsa on_scalar(Isa::kScalar);
              if (!budget.check(run_case(c, &scalar), c.describe() + " (scalar)")) return;
            }
            if (!budget.check(here == scalar ? "" : "bits differ from the SCALAR rows'", c.describe())) return;
          }
        }
      }
    }
  }
}

// bf16 x and cos / sin full of NaNs (quiet and signalling, both signs), infinities, zeros, denormals and values that
// round across a power of two, so that inf * 0 and NaN operands reach the bf16 stores (which drop the NaN test of
// their rounding where every operand is bf16 and the CPU has no AVX512_BF16): every output equals the SCALAR rows'
// (f32_to_bf16 per element), NaNs as NaNs (docs/rope.md: NaN payloads aside), in every mode and direction.
TEST_P(RotaryPositionEmbeddingOnIsa, SpecialValuesGiveTheScalarRowsBits) {
  const int64_t B = 2, S = 5, N = 3, D = 64;
  std::vector<uint16_t> x = bf16_with_special_values(B * S * N * D, 777);
  std::vector<uint16_t> cs = bf16_with_special_values(2 * S * D, 778);
  std::vector<uint16_t> fwd_x = bf16_with_special_values(B * S * N * D, 779);  // the forward's input, for gradCos/Sin
  enum Run { kForward, kBackward, kBackwardWithX };
  for (Run kind : {kForward, kBackward, kBackwardWithX}) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (bool heads_share_cos : {true, false}) {
        // (B, S, N, D) with cos (1, S, 1, D): the heads of a token share a cos row; as (B, N, S, D): each row its own
        std::vector<int64_t> xs = heads_share_cos ? std::vector<int64_t>{B, S, N, D} : std::vector<int64_t>{B, N, S, D};
        std::vector<uint16_t> out[2], dcos[2], dsin[2];
        for (int run = 0; run < 2; ++run) {
          out[run].assign(x.size(), 0);
          dcos[run].assign(S * D, 0);
          dsin[run].assign(S * D, 0);
          TensorView xv{x.data(), DType::kBF16, {xs[0], xs[1], xs[2], xs[3]}};
          TensorView ov{out[run].data(), DType::kBF16, {xs[0], xs[1], xs[2], xs[3]}};
          TensorView fv{fwd_x.data(), DType::kBF16, {xs[0], xs[1], xs[2], xs[3]}};
          const int64_t c1 = heads_share_cos ? S : 1, c2 = heads_share_cos ? 1 : S;
          TensorView cv{cs.data(), DType::kBF16, {1, c1, c2, D}}, sv{cs.data() + S * D, DType::kBF16, {1, c1, c2, D}};
          TensorView dcv{dcos[run].data(), DType::kBF16, {1, c1, c2, D}}, dsv{dsin[run].data(), DType::kBF16, {1, c1, c2, D}};
          std::unique_ptr<ScopedIsa> on_scalar(run == 1 ? new ScopedIsa(Isa::kScalar) : nullptr);
          const Status st =
              kind == kForward ? rotary_position_embedding(xv, cv, sv, mode, ov)
              : kind == kBackward
                  ? rotary_position_embedding_grad(xv, cv, sv, nullptr, mode, ov, nullptr, nullptr)
                  : rotary_position_embedding_grad(xv, cv, sv, &fv, mode, ov, &dcv, &dsv);
          ASSERT_TRUE(st.ok()) << st.message();
        }
        const char* what = kind == kForward ? " forward" : kind == kBackward ? " backward" : " backward with x";
        for (size_t i = 0; i < x.size(); ++i) {
          const uint16_t a = out[0][i], b = out[1][i];
          ASSERT_TRUE(same_bf16_or_both_nan(a, b)) << rotary_mode_name(mode) << what
                                          << (heads_share_cos ? " BSND" : " BNSD") << " element " << i << std::hex
                                          << " " << a << " vs " << b;
        }
        for (size_t i = 0; i < dcos[0].size(); ++i) {
          ASSERT_TRUE(same_bf16_or_both_nan(dcos[0][i], dcos[1][i]) && same_bf16_or_both_nan(dsin[0][i], dsin[1][i]))
              << rotary_mode_name(mode) << what << (heads_share_cos ? " BSND" : " BNSD") << " gradCos/gradSin " << i;
        }
      }
    }
  }
}

// Every pattern of size-1 dims in a rank-4 cos, cos of lower rank, and stride-0 views at x's shape.
TEST_P(RotaryPositionEmbeddingOnIsa, BroadcastPatterns) {
  FailureBudget budget;
  const std::vector<int64_t> x_shape = {2, 3, 4, 18};
  std::vector<std::vector<int64_t>> cos_shapes;
  for (int mask = 0; mask < 8; ++mask) {
    cos_shapes.push_back({mask & 1 ? 2 : 1, mask & 2 ? 3 : 1, mask & 4 ? 4 : 1, 18});
  }
  cos_shapes.push_back({4, 18});
  cos_shapes.push_back({18});
  cos_shapes.push_back({3, 1, 18});
  for (RotaryMode mode : all_rotary_modes()) {
    for (const auto& cos_shape : cos_shapes) {
      for (int variant = 0; variant < 4; ++variant) {  // forward, forward stride 0, grad with x, grad without x
        RotaryEmbeddingCase c;
        c.mode = mode, c.x_shape = x_shape, c.cos_shape = cos_shape;
        c.x_dtype = DType::kBF16, c.cs_dtype = variant % 2 ? DType::kF32 : DType::kBF16;
        c.cs_stride0 = variant == 1;
        c.backward = variant >= 2;
        c.with_x = variant == 2;
        if (mode == RotaryMode::kQuarter) c.x_shape.back() = 20, c.cos_shape.back() = 20;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, RankThreeAndOddHeadCounts) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (int64_t n : {1, 3, 7}) {
      for (bool backward : {false, true}) {
        RotaryEmbeddingCase c;
        c.mode = mode, c.backward = backward, c.x_dtype = DType::kF16, c.cs_dtype = DType::kF16;
        c.x_shape = {6, n, 64};  // TND with T1D cos
        c.cos_shape = {6, 1, 64};
        if (!budget.check(run_case(c), c.describe())) return;
        c.x_shape = {1, 5, n, 32};  // BSND with 1S1D cos
        c.cos_shape = {1, 5, 1, 32};
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, StridedAndOffsetViews) {
  FailureBudget budget;
  for (ViewStyle x_style : all_view_styles()) {
    for (ViewStyle other : all_view_styles()) {
      for (bool backward : {false, true}) {
        for (RotaryMode mode : {RotaryMode::kHalf, RotaryMode::kInterleaveHalf}) {
          RotaryEmbeddingCase c;
          c.mode = mode, c.backward = backward, c.x_dtype = DType::kBF16, c.cs_dtype = DType::kBF16;
          c.x_shape = {2, 4, 3, 34};
          c.cos_shape = {2, 4, 1, 34};
          c.x_style = x_style, c.cs_style = other, c.out_style = other;
          if (!budget.check(run_case(c), c.describe())) return;
        }
      }
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, InPlace) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
      for (int variant = 0; variant < 3; ++variant) {  // forward, grad without x, grad with x
        for (ViewStyle style : {ViewStyle::kContiguous, ViewStyle::kLastStride2}) {
          RotaryEmbeddingCase c;
          c.mode = mode, c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.in_place = true, c.x_style = style;
          c.backward = variant > 0, c.with_x = variant == 2;
          c.x_shape = {2, 3, 3, 68};
          c.cos_shape = {1, 3, 1, 68};
          if (!budget.check(run_case(c), c.describe())) return;
        }
      }
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, RotateMatrix) {
  FailureBudget budget;
  for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
    for (int64_t d : {2, 16, 64, 130}) {
      for (int variant = 0; variant < 3; ++variant) {  // plain, in place, strided views
        RotaryEmbeddingCase c;
        c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.with_rotate = true, c.mode = RotaryMode::kInterleave;
        c.x_shape = {1, 4, 3, d};
        c.cos_shape = {1, 4, 1, d};
        c.in_place = variant == 1;
        if (variant == 2) c.x_style = c.cs_style = c.out_style = ViewStyle::kLastStride2;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

// dx of more than 4 MiB: streaming stores where every row is aligned (a contiguous view), ordinary ones where it is
// not (an offset view), dcos / dsin included; against the reference.
TEST_P(RotaryPositionEmbeddingOnIsa, LargeGradWithAlignedAndUnalignedOutputs) {
  FailureBudget budget;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (ViewStyle out_style : {ViewStyle::kContiguous, ViewStyle::kOffset}) {
      RotaryEmbeddingCase c;
      c.backward = true, c.with_x = true, c.x_dtype = dtype, c.cs_dtype = dtype, c.out_style = out_style;
      c.x_shape = {1, dtype == DType::kF32 ? int64_t{264} : int64_t{528}, 32, 128};
      c.cos_shape = {1, c.x_shape[1], 1, 128};
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, BitIdenticalOneToFourThreads) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (int variant = 0; variant < 3; ++variant) {
      RotaryEmbeddingCase c;
      c.mode = mode, c.x_dtype = DType::kBF16, c.cs_dtype = DType::kBF16;
      c.backward = variant > 0, c.with_x = variant == 2;
      c.x_shape = {4, 64, 8, 128};  // large enough for a 4-way split
      c.cos_shape = {4, 64, 1, 128};
      if (!expect_bit_identical_for_one_to_four_threads(c, &budget)) return;
    }
  }
}

TEST_P(RotaryPositionEmbeddingOnIsa, EmptyTensors) {
  FailureBudget budget;
  for (int variant = 0; variant < 3; ++variant) {
    RotaryEmbeddingCase c;
    c.backward = variant > 0, c.with_x = variant == 2;
    c.x_shape = {2, 0, 3, 8};  // no rows; dcos (1, 1, 3, 8) is still written, as zeros
    c.cos_shape = {1, 1, 3, 8};
    const std::string err = run_case(c);
    // An empty op plans no kernel: only the plan check may complain, and only because nothing ran.
    if (!err.empty() && err.find("planned no kernel") == std::string::npos) budget.check(err, c.describe());
  }
}

// ---- validation: one rule, one code, one message naming the parameter -------------------------------------

struct Buffers {
  std::vector<float> x = std::vector<float>(2 * 3 * 4 * 8, 0.5f), cos = std::vector<float>(4 * 8, 0.5f),
                     sin = std::vector<float>(4 * 8, 0.5f), out = std::vector<float>(2 * 3 * 4 * 8),
                     dcos = std::vector<float>(4 * 8), dsin = std::vector<float>(4 * 8);
  TensorView xv{x.data(), DType::kF32, {2, 3, 4, 8}}, cv{cos.data(), DType::kF32, {1, 1, 4, 8}},
      sv{sin.data(), DType::kF32, {1, 1, 4, 8}}, ov{out.data(), DType::kF32, {2, 3, 4, 8}},
      dcv{dcos.data(), DType::kF32, {1, 1, 4, 8}}, dsv{dsin.data(), DType::kF32, {1, 1, 4, 8}};
};

void expect_refused(const Status& st, StatusCode code, const char* words) {
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
}

TEST(RotaryPositionEmbeddingRules, ForwardRules) {
  Buffers b;
  EXPECT_TRUE(rotary_position_embedding(b.xv, b.cv, b.sv, RotaryMode::kHalf, b.ov).ok());
  TensorView null_x = b.xv;
  null_x.data = nullptr;
  expect_refused(rotary_position_embedding(null_x, b.cv, b.sv, RotaryMode::kHalf, b.ov), StatusCode::kNullptr,
                 "x data must not be null");
  TensorView i32 = b.ov;
  i32.dtype = DType::kI32;
  expect_refused(rotary_position_embedding(b.xv, b.cv, b.sv, RotaryMode::kHalf, i32), StatusCode::kParamInvalid,
                 "out dtype");
  expect_refused(rotary_position_embedding(b.xv, b.cv, b.sv, static_cast<RotaryMode>(4), b.ov),
                 StatusCode::kTilingError, "mode must be 0 (half)");
  TensorView cos_bad{b.cos.data(), DType::kF32, {1, 2, 4, 8}};
  expect_refused(rotary_position_embedding(b.xv, cos_bad, cos_bad, RotaryMode::kHalf, b.ov), StatusCode::kTilingError,
                 "cos dim 1 must be 1 or 3");
  TensorView x_odd{b.x.data(), DType::kF32, {2, 3, 4, 6}}, o_odd{b.out.data(), DType::kF32, {2, 3, 4, 6}};
  TensorView c_odd{b.cos.data(), DType::kF32, {1, 1, 4, 6}};
  expect_refused(rotary_position_embedding(x_odd, c_odd, c_odd, RotaryMode::kQuarter, o_odd),
                 StatusCode::kTilingError, "multiple of 4");
  TensorView x5{b.x.data(), DType::kF32, {1, 2, 3, 4, 8}};
  expect_refused(rotary_position_embedding(x5, b.cv, b.sv, RotaryMode::kHalf, x5), StatusCode::kTilingError,
                 "x rank must be 3 or 4");
  TensorView overlap{b.x.data() + 8, DType::kF32, {2, 3, 4, 8}};
  expect_refused(rotary_position_embedding(b.xv, b.cv, b.sv, RotaryMode::kHalf, overlap), StatusCode::kParamInvalid,
                 "out");
  TensorView rotate_bad{b.dcos.data(), DType::kF32, {8, 4}};
  expect_refused(rotary_position_embedding(b.xv, b.cv, b.sv, RotaryMode::kHalf, b.ov, &rotate_bad),
                 StatusCode::kTilingError, "rotate shape must be (8, 8)");
}

TEST(RotaryPositionEmbeddingRules, GradRules) {
  Buffers b;
  EXPECT_TRUE(
      rotary_position_embedding_grad(b.xv, b.cv, b.sv, &b.xv, RotaryMode::kHalf, b.ov, &b.dcv, &b.dsv).ok());
  EXPECT_TRUE(rotary_position_embedding_grad(b.xv, b.cv, b.sv, nullptr, RotaryMode::kHalf, b.ov, nullptr, nullptr)
                  .ok());
  expect_refused(rotary_position_embedding_grad(b.xv, b.cv, b.sv, &b.xv, RotaryMode::kHalf, b.ov, nullptr, &b.dsv),
                 StatusCode::kNullptr, "dcosOut must not be null");
  TensorView dcos_bad{b.dcos.data(), DType::kF32, {1, 4, 8}};
  expect_refused(rotary_position_embedding_grad(b.xv, b.cv, b.sv, &b.xv, RotaryMode::kHalf, b.ov, &dcos_bad, &b.dsv),
                 StatusCode::kTilingError, "dcosOut shape must equal cos shape");
  expect_refused(rotary_position_embedding_grad(b.xv, b.cv, b.sv, &b.xv, RotaryMode::kHalf, b.ov, &b.dcv, &b.dcv),
                 StatusCode::kParamInvalid, "dsinOut");
  expect_refused(rotary_position_embedding_grad(b.xv, b.cv, b.sv, &b.xv, RotaryMode::kHalf, b.ov, &b.cv, &b.dsv),
                 StatusCode::kParamInvalid, "dcosOut");
}

}  // namespace
}  // namespace txops
