// rope_interleave_rope_test.cpp — txops::interleave_rope (aclnnInterleaveRope) against the fp64 reference, once per
// ISA (those this CPU lacks are SKIPPED, named): head dims around the vector widths, every dtype pairing, cos/sin
// broadcast over B and S (own shape and stride-0), offset / padded / non-unit-stride views, in place (out == x). Each
// case also checks guard bytes and that no byte outside `out` changed (rope_cases.cpp).
#include <gtest/gtest.h>

#include "support/rope_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(InterleaveRopeOnIsa);

const int64_t kHeadDims[] = {2, 4, 6, 14, 16, 18, 30, 32, 34, 62, 64, 66, 126, 128, 130, 1024};

TEST_P(InterleaveRopeOnIsa, HeadDimsAndDtypes) {
  FailureBudget budget;
  for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
    for (int64_t D : kHeadDims) {
      InterleaveRopeCase c;
      c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.D = D;
      c.B = 2, c.N = 3, c.S = D >= 1024 ? 2 : 5, c.Bc = 2, c.Sc = c.S;
      c.seed = static_cast<uint32_t>(D);
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

TEST_P(InterleaveRopeOnIsa, SingletonShapes) {
  FailureBudget budget;
  for (int64_t D : {2, 8}) {
    InterleaveRopeCase c;
    c.B = 1, c.N = 1, c.S = 1, c.D = D, c.Bc = 1, c.Sc = 1;
    if (!budget.check(run_case(c), c.describe())) return;
  }
}

TEST_P(InterleaveRopeOnIsa, CosSinBroadcastPatterns) {
  FailureBudget budget;
  for (bool stride0 : {false, true}) {
    for (int64_t Bc : {1, 3}) {
      for (int64_t Sc : {1, 7}) {
        InterleaveRopeCase c;
        c.B = 3, c.N = 5, c.S = 7, c.D = 34, c.Bc = Bc, c.Sc = Sc, c.cs_stride0 = stride0;
        c.cs_dtype = DType::kF32, c.x_dtype = DType::kBF16;
        if (!budget.check(run_case(c), c.describe())) return;
        c.x_dtype = DType::kF32, c.D = 64;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(InterleaveRopeOnIsa, StridedAndOffsetViews) {
  FailureBudget budget;
  for (ViewStyle x_style : all_view_styles()) {
    for (ViewStyle other : all_view_styles()) {
      for (int64_t D : {18, 64}) {
        InterleaveRopeCase c;
        c.x_dtype = DType::kF16, c.cs_dtype = DType::kF16;
        c.B = 1, c.N = 3, c.S = 4, c.D = D, c.Bc = 1, c.Sc = 4;
        c.x_style = x_style, c.cs_style = other, c.out_style = other;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(InterleaveRopeOnIsa, InPlace) {
  FailureBudget budget;
  for (auto [x_dtype, cs_dtype] : dtype_pairings(false)) {
    for (ViewStyle style : all_view_styles()) {
      for (int64_t D : {2, 16, 66, 128}) {
        InterleaveRopeCase c;
        c.x_dtype = x_dtype, c.cs_dtype = cs_dtype, c.D = D, c.B = 2, c.N = 3, c.S = 3, c.Bc = 1, c.Sc = 3;
        c.in_place = true, c.x_style = style;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(InterleaveRopeOnIsa, BitIdenticalForOneToFourThreads) {
  FailureBudget budget;
  InterleaveRopeCase c;
  // 131072 channels: enough for the planner to use 4 threads (it wants >= 32K channels per thread).
  c.x_dtype = DType::kBF16, c.cs_dtype = DType::kF32, c.B = 2, c.N = 16, c.S = 32, c.D = 128, c.Bc = 2, c.Sc = 32;
  if (!expect_bit_identical_for_one_to_four_threads(c, &budget)) return;
}

}  // namespace
}  // namespace txops
