// rope_partial_rotary_mul_test.cpp — txops::inplace_partial_rotary_mul and its Grad (aclnnInplacePartialRotaryMul /
// ...Grad) against the fp64 reference, once per ISA (those this CPU lacks are SKIPPED, named): all four modes, both
// directions, slice lengths around the vector widths with odd starts, start == end, every cos/sin broadcast pattern
// (111D, 1S1D, B11D, BS1D, 1SND, B1ND, BSND, 11N D) as own shape and as stride 0, every dtype pairing, offset /
// padded / stride-2 views, odd N. Every case checks that bytes outside the slice (and outside the view) are untouched
// (rope_cases.cpp).
#include <gtest/gtest.h>

#include <tuple>

#include "support/rope_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(PartialRotaryMulOnIsa);

// Slice lengths valid for every mode (multiples of 4) plus even ones for the modes that allow them.
const int64_t kLengthsAll[] = {4, 12, 16, 28, 32, 36, 60, 64, 68, 128, 132};
const int64_t kLengthsEven[] = {2, 6, 14, 18, 30, 34, 62, 66, 130};

TEST_P(PartialRotaryMulOnIsa, ModesDirectionsAndSliceLengths) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (bool backward : {false, true}) {
      std::vector<int64_t> lengths(std::begin(kLengthsAll), std::end(kLengthsAll));
      if (mode != RotaryMode::kQuarter) lengths.insert(lengths.end(), std::begin(kLengthsEven), std::end(kLengthsEven));
      for (int64_t L : lengths) {
        for (int64_t start : {int64_t{0}, int64_t{3}}) {
          PartialRotaryCase c;
          c.mode = mode, c.backward = backward;
          c.B = 2, c.S = 3, c.N = 3, c.start = start, c.end = start + L, c.D = start + L + 5;
          c.Bc = 1, c.Sc = 3, c.Nc = 1;  // 1S1D
          c.x_dtype = DType::kF32, c.cs_dtype = DType::kF32;
          c.seed = static_cast<uint32_t>(L * 7 + start);
          if (!budget.check(run_case(c), c.describe())) return;
        }
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, FullWidthSliceAndOneThousandTwentyFour) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (int64_t D : {4, 64, 128, 1024}) {
      PartialRotaryCase c;
      c.mode = mode, c.B = 1, c.S = 2, c.N = 3, c.D = D, c.start = 0, c.end = D, c.Bc = 1, c.Sc = 2, c.Nc = 1;
      c.x_dtype = DType::kBF16, c.cs_dtype = DType::kBF16;
      if (!budget.check(run_case(c), c.describe())) return;
      c.backward = true;
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

// Slices of 64 and 128 channels are 2 to 8 vectors on AVX2 and AVX-512: in place, the interleave-half rows are
// loaded whole into registers (kernels_rotate.cpp) instead of copied aside, by other code for each dtype and
// direction. Every path computes each output by the same formula and rounds it once, so the bytes must equal the
// scalar kernels' (the DeepSeek shape: slice [128, 192) of 192, and whole rows).
TEST_P(PartialRotaryMulOnIsa, RowsInRegistersGiveTheScalarBits) {
  FailureBudget budget;
  for (DType dtype : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (bool backward : {false, true}) {
        for (auto [start, end, D] : {std::tuple<int64_t, int64_t, int64_t>{128, 192, 192}, {0, 64, 64},
                                     {0, 128, 128}, {2, 130, 133}}) {
          PartialRotaryCase c;
          c.mode = mode, c.backward = backward, c.x_dtype = dtype, c.cs_dtype = dtype;
          c.B = 1, c.S = 3, c.N = 2, c.D = D, c.start = start, c.end = end, c.Bc = 1, c.Sc = 3, c.Nc = 1;
          std::vector<uint64_t> here, scalar;
          if (!budget.check(run_case(c, &here), c.describe())) return;
          {
            ScopedIsa scoped(Isa::kScalar);
            if (!budget.check(run_case(c, &scalar), c.describe() + " (scalar)")) return;
          }
          EXPECT_TRUE(here == scalar) << c.describe() << ": bits differ from the scalar kernels'";
        }
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, EmptySliceIsANoOp) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    for (int64_t start : {0, 5, 17}) {
      for (bool backward : {false, true}) {
        PartialRotaryCase c;
        c.mode = mode, c.backward = backward, c.D = 17, c.start = start, c.end = start;
        c.x_dtype = DType::kF16, c.cs_dtype = DType::kF32;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, EveryCosSinBroadcastPattern) {
  FailureBudget budget;
  const int64_t B = 2, S = 3, N = 5;
  for (int pattern = 0; pattern < 8; ++pattern) {  // bit 2: B, bit 1: S, bit 0: N present in cos
    for (bool stride0 : {false, true}) {
      for (RotaryMode mode : all_rotary_modes()) {
        PartialRotaryCase c;
        c.mode = mode, c.B = B, c.S = S, c.N = N, c.D = 40, c.start = 4, c.end = 36;
        c.Bc = (pattern & 4) ? B : 1, c.Sc = (pattern & 2) ? S : 1, c.Nc = (pattern & 1) ? N : 1;
        c.cs_stride0 = stride0, c.backward = (pattern % 2) == 0;
        c.x_dtype = DType::kF32, c.cs_dtype = DType::kF32;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, EveryDtypePairing) {
  FailureBudget budget;
  for (auto [x_dtype, cs_dtype] : dtype_pairings(true)) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (bool backward : {false, true}) {
        PartialRotaryCase c;
        c.mode = mode, c.backward = backward, c.x_dtype = x_dtype, c.cs_dtype = cs_dtype;
        c.B = 1, c.S = 3, c.N = 3, c.D = 80, c.start = 7, c.end = 75, c.Bc = 1, c.Sc = 3, c.Nc = 3;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, StridedAndOffsetViews) {
  FailureBudget budget;
  for (ViewStyle x_style : all_view_styles()) {
    for (ViewStyle cs_style : all_view_styles()) {
      for (RotaryMode mode : all_rotary_modes()) {
        PartialRotaryCase c;
        c.mode = mode, c.x_style = x_style, c.cs_style = cs_style, c.backward = mode == RotaryMode::kQuarter;
        c.x_dtype = DType::kBF16, c.cs_dtype = DType::kF32;
        c.B = 2, c.S = 2, c.N = 3, c.D = 70, c.start = 1, c.end = 69, c.Bc = 2, c.Sc = 1, c.Nc = 3;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(PartialRotaryMulOnIsa, BitIdenticalForOneToFourThreads) {
  FailureBudget budget;
  for (RotaryMode mode : all_rotary_modes()) {
    PartialRotaryCase c;
    c.mode = mode, c.backward = mode == RotaryMode::kInterleave || mode == RotaryMode::kInterleaveHalf;
    c.x_dtype = DType::kF16, c.cs_dtype = DType::kF32;
    // 131072 rotated channels: enough for the planner to use 4 threads (>= 32K channels per thread).
    c.B = 2, c.S = 32, c.N = 16, c.D = 136, c.start = 3, c.end = 131, c.Bc = 2, c.Sc = 32, c.Nc = 1;
    if (!expect_bit_identical_for_one_to_four_threads(c, &budget)) return;
  }
}

}  // namespace
}  // namespace txops
