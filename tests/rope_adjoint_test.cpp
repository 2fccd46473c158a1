// rope_adjoint_test.cpp — every RoPE backward is the exact adjoint of its forward, checked with the txops fast ops
// alone (no reference): <dy, f(x)> == <f^T(dy), x> in double, to fp32 rounding relative to sum |dy*f(x)|. For
// ApplyRotaryPosEmbGrad also gradCos / gradSin: the forward is linear in cos and sin, so <Gq, f(q)> + <Gk, f(k)> ==
// <gradCos, cos> + <gradSin, sin>, and the same for RotaryPositionEmbeddingGrad's dcos / dsin. Once per ISA (those this CPU lacks are SKIPPED, named).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "support/rope_cases.h"

namespace txops {
namespace {

using namespace txops::testing;

TXOPS_ISA_TEST_SUITE(RopeAdjointOnIsa);

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
double abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] * b[i]);
  return s;
}

// fp32 outputs: each element carries ~2^-24 relative error from the rounding; bf16: 2^-8.
double relative_bound(DType dtype) { return dtype == DType::kF32 ? 1e-6 : 0x1p-7; }

TEST_P(RopeAdjointOnIsa, InplacePartialRotaryMulGrad) {
  std::mt19937 rng(5);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (RotaryMode mode : all_rotary_modes()) {
      const int64_t B = 2, S = 3, N = 5, D = 72, start = 2, end = 70;
      GuardedTensor x(&rng, dtype, {B, S, N, D}, ViewStyle::kPadded);
      GuardedTensor dy(&rng, dtype, {B, S, N, D}, ViewStyle::kOffset);
      GuardedTensor cos(&rng, DType::kF32, {1, S, N, end - start}, ViewStyle::kContiguous, -1, 1);
      GuardedTensor sin(&rng, DType::kF32, {1, S, N, end - start}, ViewStyle::kContiguous, -1, 1);
      const std::vector<double> x0 = x.values(), dy0 = dy.values();
      forget_plan();
      ASSERT_TRUE(inplace_partial_rotary_mul(x.view(), cos.view(), sin.view(), mode, start, end).ok());
      EXPECT_TRUE(planned_on(isa()));
      forget_plan();
      ASSERT_TRUE(inplace_partial_rotary_mul_grad(dy.view(), cos.view(), sin.view(), mode, start, end).ok());
      EXPECT_TRUE(planned_on(isa()));
      const std::vector<double> fx = x.values(), ftdy = dy.values();
      const double lhs = dot(dy0, fx), rhs = dot(ftdy, x0);
      EXPECT_LE(std::fabs(lhs - rhs), relative_bound(dtype) * abs_dot(dy0, fx))
          << rotary_mode_name(mode) << " " << dtype_name(dtype) << " isa " << isa_name(isa()) << ": <dy, f(x)> = "
          << lhs << ", <f^T dy, x> = " << rhs;
    }
  }
}

TEST_P(RopeAdjointOnIsa, ApplyRotaryPosEmbGradIncludingCosAndSin) {
  std::mt19937 rng(9);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (RotaryMode mode : {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter}) {
      for (Layout layout : all_layouts()) {
        ApplyRotaryCase c;
        c.layout = layout, c.mode = mode, c.B = 3, c.S = 4, c.Nq = 5, c.Nk = 2, c.D = 40, c.cos_batch_one = true;
        GuardedTensor q(&rng, dtype, apply_q_shape(c, c.Nq), ViewStyle::kContiguous);
        GuardedTensor k(&rng, dtype, apply_q_shape(c, c.Nk), ViewStyle::kPadded);
        GuardedTensor gq_embed(&rng, dtype, q.shape(), ViewStyle::kOffset);
        GuardedTensor gk_embed(&rng, dtype, k.shape(), ViewStyle::kContiguous);
        GuardedTensor cos(&rng, DType::kF32, apply_cos_shape(c), ViewStyle::kContiguous, -1, 1);
        GuardedTensor sin(&rng, DType::kF32, apply_cos_shape(c), ViewStyle::kContiguous, -1, 1);
        GuardedTensor gq(&rng, dtype, q.shape(), ViewStyle::kContiguous);
        GuardedTensor gk(&rng, dtype, k.shape(), ViewStyle::kContiguous);
        GuardedTensor gcos(&rng, DType::kF32, cos.shape(), ViewStyle::kContiguous);
        GuardedTensor gsin(&rng, DType::kF32, cos.shape(), ViewStyle::kContiguous);
        // Grad first (it needs the original q and k), then the forward in place.
        forget_plan();
        ASSERT_TRUE(apply_rotary_pos_emb_grad(gq_embed.view(), gk_embed.view(), cos.view(), sin.view(), q.ptr(),
                                              k.ptr(), mode, layout, gq.view(), gk.view(), gcos.ptr(), gsin.ptr())
                        .ok());
        EXPECT_TRUE(planned_on(isa()));
        const std::vector<double> q0 = q.values(), k0 = k.values();
        forget_plan();
        ASSERT_TRUE(apply_rotary_pos_emb(q.view(), k.view(), cos.view(), sin.view(), layout, mode).ok());
        EXPECT_TRUE(planned_on(isa()));
        const std::vector<double> Gq = gq_embed.values(), Gk = gk_embed.values();
        const double out_dot = dot(Gq, q.values()) + dot(Gk, k.values());
        const double scale = abs_dot(Gq, q.values()) + abs_dot(Gk, k.values());
        const double in_dot = dot(gq.values(), q0) + dot(gk.values(), k0);
        const double cos_sin_dot = dot(gcos.values(), cos.values()) + dot(gsin.values(), sin.values());
        const std::string what = std::string(rotary_mode_name(mode)) + " " + layout_name(layout) + " " +
                                 dtype_name(dtype) + " isa " + isa_name(isa());
        EXPECT_LE(std::fabs(out_dot - in_dot), relative_bound(dtype) * scale)
            << what << ": <G, f(x)> = " << out_dot << ", <f^T G, x> = " << in_dot;
        // f(q) is rounded to q's dtype, gradCos/gradSin (fp32) are not: the bound is q's dtype's.
        EXPECT_LE(std::fabs(out_dot - cos_sin_dot), relative_bound(dtype) * scale)
            << what << ": <G, f(x)> = " << out_dot << ", <gradCos, cos> + <gradSin, sin> = " << cos_sin_dot;
      }
    }
  }
}

// RotaryPositionEmbeddingGrad with x: <dy, f(x)> == <dx, x> == <dcos, cos> + <dsin, sin>, every mode, cos broadcast
// over two dims and of lower rank (the reduction covers the broadcast rows).
TEST_P(RopeAdjointOnIsa, RotaryPositionEmbeddingGradIncludingCosAndSin) {
  std::mt19937 rng(13);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (RotaryMode mode : all_rotary_modes()) {
      for (const std::vector<int64_t>& cos_shape : {std::vector<int64_t>{1, 4, 1, 40}, std::vector<int64_t>{3, 40}}) {
        const std::vector<int64_t> x_shape = {2, 4, 3, 40};
        GuardedTensor x(&rng, dtype, x_shape, ViewStyle::kPadded);
        GuardedTensor dy(&rng, dtype, x_shape, ViewStyle::kOffset);
        GuardedTensor cos(&rng, DType::kF32, cos_shape, ViewStyle::kContiguous, -1, 1);
        GuardedTensor sin(&rng, DType::kF32, cos_shape, ViewStyle::kContiguous, -1, 1);
        GuardedTensor y(&rng, dtype, x_shape, ViewStyle::kContiguous);
        GuardedTensor dx(&rng, dtype, x_shape, ViewStyle::kLastStride2);
        GuardedTensor dcos(&rng, DType::kF32, cos_shape, ViewStyle::kContiguous);
        GuardedTensor dsin(&rng, DType::kF32, cos_shape, ViewStyle::kContiguous);
        forget_plan();
        ASSERT_TRUE(rotary_position_embedding(x.view(), cos.view(), sin.view(), mode, y.view()).ok());
        EXPECT_TRUE(planned_on(isa()));
        forget_plan();
        ASSERT_TRUE(rotary_position_embedding_grad(dy.view(), cos.view(), sin.view(), x.ptr(), mode, dx.view(),
                                                   dcos.ptr(), dsin.ptr())
                        .ok());
        EXPECT_TRUE(planned_on(isa()));
        const std::vector<double> G = dy.values(), fx = y.values();
        const double out_dot = dot(G, fx), scale = abs_dot(G, fx);
        const double in_dot = dot(dx.values(), x.values());
        const double cos_sin_dot = dot(dcos.values(), cos.values()) + dot(dsin.values(), sin.values());
        const std::string what = std::string(rotary_mode_name(mode)) + " " + dtype_name(dtype) + " cos rank " +
                                 std::to_string(cos_shape.size()) + " isa " + isa_name(isa());
        EXPECT_LE(std::fabs(out_dot - in_dot), relative_bound(dtype) * scale)
            << what << ": <dy, f(x)> = " << out_dot << ", <dx, x> = " << in_dot;
        EXPECT_LE(std::fabs(out_dot - cos_sin_dot), relative_bound(dtype) * scale)
            << what << ": <dy, f(x)> = " << out_dot << ", <dcos, cos> + <dsin, sin> = " << cos_sin_dot;
      }
    }
  }
}

}  // namespace
}  // namespace txops
