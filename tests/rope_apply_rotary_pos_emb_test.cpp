// rope_apply_rotary_pos_emb_test.cpp — txops::apply_rotary_pos_emb (aclnnApplyRotaryPosEmbV2) and
// apply_rotary_pos_emb_grad (aclnnApplyRotaryPosEmbGrad) against the fp64 reference, each test once per ISA (those
// this CPU lacks are SKIPPED, named): modes half / interleave / quarter, layouts BSND / SBND / BNSD / TND, cos
// batch 1 or B, q and k with different (odd) N, forward with cos D < q D, grads with and without q/k (gradCos /
// gradSin), fp32 cos/sin with 16-bit q/k, strided inputs and outputs; plus bit identity of all outputs (gradCos /
// gradSin included) for 1..4 threads, each count checked to be a partition over that many threads.
#include <gtest/gtest.h>

#include <utility>

#include "support/rope_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(ApplyRotaryPosEmbOnIsa);

const RotaryMode kModes[] = {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter};

TEST_P(ApplyRotaryPosEmbOnIsa, ModesLayoutsAndHeadDims) {
  FailureBudget budget;
  for (bool backward : {false, true}) {
    for (RotaryMode mode : kModes) {
      for (Layout layout : all_layouts()) {
        for (int64_t D : {4, 16, 28, 32, 36, 64, 68, 128, 132}) {
          ApplyRotaryCase c;
          c.backward = backward, c.mode = mode, c.layout = layout, c.D = D;
          c.B = 2, c.S = 3, c.Nq = 5, c.Nk = 1, c.cos_batch_one = (D % 8) == 4;
          c.seed = static_cast<uint32_t>(D + 1000 * static_cast<int>(layout));
          if (!budget.check(run_case(c), c.describe())) return;
        }
      }
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, MoreKeyHeadsThanQueryHeadsAndSingletons) {
  FailureBudget budget;
  for (bool backward : {false, true}) {
    for (Layout layout : all_layouts()) {
      ApplyRotaryCase c;  // Nk > Nq, odd
      c.backward = backward, c.layout = layout, c.mode = RotaryMode::kInterleave, c.D = 18, c.Nq = 1, c.Nk = 7;
      if (!budget.check(run_case(c), c.describe())) return;
      c.B = 1, c.S = 1, c.Nq = 1, c.Nk = 1, c.D = 2, c.mode = RotaryMode::kHalf;  // everything size 1
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, HeadDim1024) {
  FailureBudget budget;
  for (bool backward : {false, true}) {
    for (RotaryMode mode : kModes) {
      ApplyRotaryCase c;
      c.backward = backward, c.mode = mode, c.layout = Layout::kTND, c.D = 1024, c.B = 1, c.S = 2, c.Nq = 3;
      c.Nk = 1, c.q_dtype = DType::kBF16, c.cs_dtype = DType::kF32;
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, ForwardWithNarrowerCosLeavesTheRestUntouched) {
  FailureBudget budget;
  for (RotaryMode mode : kModes) {
    for (Layout layout : all_layouts()) {
      for (int64_t cos_dim : {4, 32, 36, 64}) {
        ApplyRotaryCase c;
        c.mode = mode, c.layout = layout, c.D = 128, c.cos_dim = cos_dim, c.q_dtype = DType::kBF16;
        c.cs_dtype = DType::kBF16, c.B = 1, c.S = 3, c.Nq = 3, c.Nk = 2;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, DtypePairings) {
  FailureBudget budget;
  for (auto [q_dtype, cs_dtype] : dtype_pairings(false)) {
    for (bool backward : {false, true}) {
      for (RotaryMode mode : kModes) {
        ApplyRotaryCase c;
        c.q_dtype = q_dtype, c.cs_dtype = cs_dtype, c.backward = backward, c.mode = mode, c.D = 64;
        c.layout = Layout::kBSND, c.B = 3, c.S = 4, c.Nq = 3, c.Nk = 3, c.cos_batch_one = true;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, GradWithoutQueryAndKeyLeavesGradCosSinAlone) {
  FailureBudget budget;
  for (RotaryMode mode : kModes) {
    for (Layout layout : all_layouts()) {
      ApplyRotaryCase c;
      c.backward = true, c.with_qk = false, c.mode = mode, c.layout = layout, c.D = 32, c.Nq = 4, c.Nk = 2;
      if (!budget.check(run_case(c), c.describe())) return;
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, StridedViews) {
  FailureBudget budget;
  for (ViewStyle q_style : all_view_styles()) {
    for (ViewStyle other : all_view_styles()) {
      for (bool backward : {false, true}) {
        ApplyRotaryCase c;
        c.q_style = q_style, c.cs_style = other, c.out_style = other, c.backward = backward;
        c.layout = backward ? Layout::kSBND : Layout::kBNSD, c.mode = RotaryMode::kHalf;
        c.q_dtype = DType::kF16, c.cs_dtype = DType::kF32, c.D = 36, c.B = 2, c.S = 3, c.Nq = 3, c.Nk = 1;
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

// Outputs of more than 4 MiB take streaming stores (core/streaming.h, kStreamingOutputBytes). The fused grads fix the
// store kind per side: every row aligned (a contiguous view: streaming, gradCos / gradSin too) or not (an offset
// view: ordinary stores throughout); both against the reference, in the modes with register rows at D = 128 on
// AVX-512 (AVX2 runs the same cases through the memory-form rows).
TEST_P(ApplyRotaryPosEmbOnIsa, LargeGradsWithAlignedAndUnalignedOutputs) {
  FailureBudget budget;
  for (auto [q_dtype, cs_dtype] : {std::pair{DType::kF32, DType::kF32}, std::pair{DType::kBF16, DType::kBF16},
                                   std::pair{DType::kF16, DType::kF16}, std::pair{DType::kBF16, DType::kF32}}) {
    for (ViewStyle out_style : {ViewStyle::kContiguous, ViewStyle::kOffset}) {
      for (RotaryMode mode : {RotaryMode::kHalf, RotaryMode::kInterleave}) {
        ApplyRotaryCase c;
        c.backward = true, c.q_dtype = q_dtype, c.cs_dtype = cs_dtype, c.out_style = out_style, c.mode = mode;
        c.B = 1, c.S = q_dtype == DType::kF32 ? 264 : 528, c.Nq = 32, c.Nk = 8, c.D = 128;  // q grad > 4 MiB
        if (!budget.check(run_case(c), c.describe())) return;
      }
    }
  }
}

TEST_P(ApplyRotaryPosEmbOnIsa, BitIdenticalForOneToFourThreads) {
  FailureBudget budget;
  // The forward once, the grad (with its gradCos / gradSin reductions) in every layout, cos batch B or 1.
  for (int variant = 0; variant < 5; ++variant) {
    ApplyRotaryCase c;
    c.backward = variant > 0, c.layout = variant > 0 ? all_layouts()[variant - 1] : Layout::kBSND;
    c.cos_batch_one = variant % 2 == 1, c.mode = variant == 2 ? RotaryMode::kInterleave : RotaryMode::kHalf;
    // q + k = 131072 channels: enough for the planner to use 4 threads (>= 32K channels per thread).
    c.q_dtype = DType::kBF16, c.cs_dtype = DType::kF32, c.B = 4, c.S = 8, c.Nq = 28, c.Nk = 4, c.D = 128;
    if (!expect_bit_identical_for_one_to_four_threads(c, &budget)) return;
  }
}

}  // namespace
}  // namespace txops
