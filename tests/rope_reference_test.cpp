// rope_reference_test.cpp — checks of the fp64 RoPE oracle itself (src/ops/rope/reference.cpp), so that the
// sweeps comparing the fast kernels with it rest on something verified: hand-worked rows of each mode from
// the spec's formulas, the adjoint identity <dy, f(x)> == <f^T dy, x>, and the gradCos/gradSin identity
// <Gq, f(q)> + <Gk, f(k)> == <gradCos, cos> + <gradSin, sin> (the forward is linear in cos and sin).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/rope/reference.h"
#include "support/rope_test_util.h"

namespace txops {
namespace {

using testing::GuardedTensor;
using testing::ViewStyle;

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// One row of D = 4 with distinct cos/sin halves, each mode by hand from docs/rope.md.
TEST(RopeReference, HandWorkedRowsPerMode) {
  float x[4] = {1, 2, 3, 4}, c[4] = {0.5f, 0.25f, 2, 4}, s[4] = {1, -1, 0.5f, 3};
  TensorView xv(x, DType::kF32, {1, 1, 1, 4}), cv(c, DType::kF32, {1, 1, 1, 4}), sv(s, DType::kF32, {1, 1, 1, 4});
  std::vector<double> y;
  // half: cat(x1*c1 - x2*s1, x2*c2 + x1*s2), x1 = (1,2), x2 = (3,4)
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kHalf, 0, 4, false, &y);
  EXPECT_EQ(y, (std::vector<double>{1 * 0.5 - 3 * 1, 2 * 0.25 - 4 * -1, 3 * 2 + 1 * 0.5, 4 * 4 + 2 * 3}));
  // interleave: y[2k] = x[2k]c[2k] - x[2k+1]s[2k], y[2k+1] = x[2k+1]c[2k+1] + x[2k]s[2k+1]
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kInterleave, 0, 4, false, &y);
  EXPECT_EQ(y, (std::vector<double>{1 * 0.5 - 2 * 1, 2 * 0.25 + 1 * -1, 3 * 2 - 4 * 0.5, 4 * 4 + 3 * 3}));
  // quarter: half mode on (x[0], x[1]) and on (x[2], x[3])
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kQuarter, 0, 4, false, &y);
  EXPECT_EQ(y, (std::vector<double>{1 * 0.5 - 2 * 1, 2 * 0.25 + 1 * -1, 3 * 2 - 4 * 0.5, 4 * 4 + 3 * 3}));
  // interleave-half: xe = (1,3), xo = (2,4); y = cat(xe*c1 - xo*s1, xo*c2 + xe*s2)
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kInterleaveHalf, 0, 4, false, &y);
  EXPECT_EQ(y, (std::vector<double>{1 * 0.5 - 2 * 1, 3 * 0.25 - 4 * -1, 2 * 2 + 1 * 0.5, 4 * 4 + 3 * 3}));
  reference::interleave_rope(xv, cv, sv, &y);
  EXPECT_EQ(y, (std::vector<double>{1 * 0.5 - 2 * 1, 3 * 0.25 - 4 * -1, 2 * 2 + 1 * 0.5, 4 * 4 + 3 * 3}));
}

TEST(RopeReference, PartialSliceLeavesTheRestAndUsesCosFromZero) {
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[2] = {2, 3}, s[2] = {5, 7};
  TensorView xv(x, DType::kF32, {1, 1, 1, 8}), cv(c, DType::kF32, {1, 1, 1, 2}), sv(s, DType::kF32, {1, 1, 1, 2});
  std::vector<double> y;
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kHalf, 3, 5, false, &y);
  EXPECT_EQ(y, (std::vector<double>{1, 2, 3, 4 * 2 - 5 * 5, 5 * 3 + 4 * 7, 6, 7, 8}));
  reference::inplace_partial_rotary_mul(xv, cv, sv, RotaryMode::kHalf, 3, 3, false, &y);  // start == end
  EXPECT_EQ(y, (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(RopeReference, BackwardIsTheAdjointOfForward) {
  std::mt19937 rng(7);
  for (RotaryMode mode : testing::all_rotary_modes()) {
    for (int64_t D : {4, 8, 12, 64}) {
      GuardedTensor x(&rng, DType::kF32, {2, 3, 5, D}, ViewStyle::kPadded);
      GuardedTensor dy(&rng, DType::kF32, {2, 3, 5, D}, ViewStyle::kLastStride2);
      GuardedTensor c(&rng, DType::kF32, {2, 1, 5, D}, ViewStyle::kContiguous, -1, 1);
      GuardedTensor s(&rng, DType::kF32, {2, 1, 5, D}, ViewStyle::kOffset, -1, 1);
      std::vector<double> fx, ftdy;
      reference::inplace_partial_rotary_mul(x.view(), c.view(), s.view(), mode, 0, D, false, &fx);
      reference::inplace_partial_rotary_mul(dy.view(), c.view(), s.view(), mode, 0, D, true, &ftdy);
      const double lhs = dot(dy.values(), fx), rhs = dot(ftdy, x.values());
      EXPECT_NEAR(lhs, rhs, 1e-12 * (std::fabs(lhs) + 1)) << rotary_mode_name(mode) << " D=" << D;
    }
  }
}

TEST(RopeReference, GradCosSinMatchLinearityInCosAndSin) {
  std::mt19937 rng(11);
  for (RotaryMode mode : {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter}) {
    // BSND, cos (1, S, 1, D): summed over B and N.
    GuardedTensor q(&rng, DType::kF32, {3, 4, 5, 8}, ViewStyle::kContiguous);
    GuardedTensor k(&rng, DType::kF32, {3, 4, 2, 8}, ViewStyle::kPadded);
    GuardedTensor gq(&rng, DType::kF32, {3, 4, 5, 8}, ViewStyle::kOffset);
    GuardedTensor gk(&rng, DType::kF32, {3, 4, 2, 8}, ViewStyle::kContiguous);
    GuardedTensor c(&rng, DType::kF32, {1, 4, 1, 8}, ViewStyle::kContiguous, -1, 1);
    GuardedTensor s(&rng, DType::kF32, {1, 4, 1, 8}, ViewStyle::kContiguous, -1, 1);
    std::vector<double> fq, fk, dq, dk, dc, ds;
    reference::apply_rotary_pos_emb(q.view(), k.view(), c.view(), s.view(), Layout::kBSND, mode, &fq, &fk);
    reference::apply_rotary_pos_emb_grad(gq.view(), gk.view(), c.view(), s.view(), q.ptr(), k.ptr(), mode,
                                         Layout::kBSND, &dq, &dk, &dc, &ds);
    ASSERT_EQ(dc.size(), 4u * 8u);
    const double lhs = dot(gq.values(), fq) + dot(gk.values(), fk);
    const double rhs = dot(dc, c.values()) + dot(ds, s.values());
    EXPECT_NEAR(lhs, rhs, 1e-12 * (std::fabs(lhs) + 1)) << rotary_mode_name(mode);
    // Without q and k no gradCos / gradSin.
    reference::apply_rotary_pos_emb_grad(gq.view(), gk.view(), c.view(), s.view(), nullptr, nullptr, mode,
                                         Layout::kBSND, &dq, &dk, &dc, &ds);
    EXPECT_TRUE(dc.empty() && ds.empty());
  }
}

TEST(RopeReference, ApplyWithNarrowerCosRotatesOnlyTheFirstChannels) {
  float q[6] = {1, 2, 3, 4, 5, 6}, k[6] = {6, 5, 4, 3, 2, 1}, c[2] = {2, 3}, s[2] = {5, 7};
  TensorView qv(q, DType::kF32, {1, 1, 1, 6}), kv(k, DType::kF32, {1, 1, 1, 6});
  TensorView cv(c, DType::kF32, {1, 1, 1, 2}), sv(s, DType::kF32, {1, 1, 1, 2});
  std::vector<double> fq, fk;
  reference::apply_rotary_pos_emb(qv, kv, cv, sv, Layout::kBSND, RotaryMode::kHalf, &fq, &fk);
  EXPECT_EQ(fq, (std::vector<double>{1 * 2 - 2 * 5, 2 * 3 + 1 * 7, 3, 4, 5, 6}));
  EXPECT_EQ(fk, (std::vector<double>{6 * 2 - 5 * 5, 5 * 3 + 6 * 7, 4, 3, 2, 1}));
}

// The helpers the sweeps rely on notice what they are meant to notice.
TEST(RopeTestSupport, GuardedTensorSeesWritesOutsideTheAllowedElements) {
  std::mt19937 rng(1);
  GuardedTensor t(&rng, DType::kF16, {2, 3, 4}, ViewStyle::kPadded);
  const auto before = t.snapshot();
  uint16_t* data = static_cast<uint16_t*>(t.view().data);
  data[t.view().strides[1] * 2] ^= 1;  // element (0, 2, 0)
  EXPECT_EQ(t.unexpected_changes(before, [](const int64_t* idx) { return idx[1] == 2; }), "");
  EXPECT_NE(t.unexpected_changes(before, [](const int64_t* idx) { return idx[1] != 2; }), "");
  data[4] ^= 1;  // the padding after row (0, 0): not an element
  EXPECT_NE(t.unexpected_changes(before, [](const int64_t*) { return true; }), "");
  EXPECT_TRUE(t.guards_intact());
  data[-4] ^= 1;  // before the view's first element: offset area, then the guard further out
  EXPECT_NE(t.unexpected_changes(before, [](const int64_t*) { return true; }), "");
  static_cast<uint8_t*>(t.view().data)[-(3 * 2) - 1] ^= 1;  // last guard byte before the storage
  EXPECT_FALSE(t.guards_intact());
}

TEST(RopeTestSupport, StrideZeroBroadcastAliasesElements) {
  std::mt19937 rng(2);
  GuardedTensor t(&rng, DType::kF32, {3, 2, 4}, ViewStyle::kOffset, -1, 1, {true, false, false});
  EXPECT_EQ(t.view().strides[0], 0);
  const std::vector<double> v = t.values();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(v[i], v[8 + i]);
}

}  // namespace
}  // namespace txops
