// gdr_reference_test.cpp — self-tests of the fp64 gated-delta-rule oracle (it judges every fast kernel, so it
// is checked against properties it must have, independently of any fast kernel): a hand-computed 1x1 case,
// the delta rule's exact write (S k = v when beta = 1, |k| = 1, no decay), pure decay, the key-head mapping
// (h / (Nv/Nk), like repeat_interleave), strided inputs, zero-length sequences, and the decode oracle
// agreeing with the prefill oracle.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/gated_delta_rule/reference.h"
#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;

TEST(GdrReference, HandComputedScalarCase) {
  PrefillConfig c;
  c.lengths = {3};
  c.dk = 1, c.dv = 1;
  c.act = DType::kF32;
  c.scale = 0.5f;
  PrefillProblem p(c);
  const double q[] = {1.0, -1.0, 1.0}, k[] = {1.0, 1.0, -1.0}, v[] = {0.5, -0.25, 2.0};
  const double beta[] = {0.5, 0.25, 0.75}, g[] = {-0.5, -1.0, 0.0};
  for (int t = 0; t < 3; ++t) {
    p.q.set(t, q[t]), p.k.set(t, k[t]), p.v.set(t, v[t]), p.beta.set(t, beta[t]), p.g.set(t, g[t]);
  }
  p.initial_state.set(0, 0.25);
  std::vector<double> out, state;
  p.reference(&out, &state);
  double s = 0.25;
  for (int t = 0; t < 3; ++t) {
    const double decayed = std::exp(g[t]) * s;
    s = decayed + beta[t] * (v[t] - decayed * k[t]) * k[t];
    EXPECT_DOUBLE_EQ(out[t], s * q[t] * 0.5) << "token " << t;
  }
  EXPECT_DOUBLE_EQ(state[0], s);
}

TEST(GdrReference, DeltaRuleWritesValueExactlyWhenBetaIsOne) {
  PrefillConfig c;
  c.lengths = {5};
  c.dk = 8, c.dv = 6;
  c.act = DType::kF32;
  c.with_g = false;
  c.scale = 1.0f;
  PrefillProblem p(c);
  p.q = p.k;  // reading back with the key just written returns its value
  for (int64_t i = 0; i < p.beta.numel(); ++i) p.beta.set(i, 1.0);
  std::vector<double> out, state;
  p.reference(&out, &state);
  for (int64_t i = 0; i < p.v.numel(); ++i) EXPECT_NEAR(out[i], p.v.get(i), 1e-6) << "element " << i;
}

TEST(GdrReference, PureDecayScalesTheInitialState) {
  PrefillConfig c;
  c.lengths = {4};
  c.dk = 4, c.dv = 3;
  c.act = DType::kF32;
  PrefillProblem p(c);
  for (int64_t i = 0; i < p.beta.numel(); ++i) p.beta.set(i, 0.0);
  for (int64_t i = 0; i < p.g.numel(); ++i) p.g.set(i, -0.25);
  std::vector<double> out, state;
  p.reference(&out, &state);
  for (int64_t i = 0; i < p.initial_state.numel(); ++i)
    EXPECT_NEAR(state[i], std::exp(-1.0) * p.initial_state.get(i), 1e-15);
}

TEST(GdrReference, ZeroLengthSequenceKeepsInitialState) {
  PrefillConfig c;
  c.lengths = {0, 3, 0};
  c.nv = 2, c.dk = 4, c.dv = 5;
  c.state = DType::kBF16;
  PrefillProblem p(c);
  std::vector<double> out, state;
  p.reference(&out, &state);
  const int64_t per_sequence = c.nv * c.dv * c.dk;
  for (int64_t b : {0, 2})
    for (int64_t i = 0; i < per_sequence; ++i)
      EXPECT_EQ(state[b * per_sequence + i], p.initial_state.get(b * per_sequence + i));
}

// Nk = 2, Nv = 4 equals Nk = 4 with key heads repeated as [k0, k0, k1, k1].
TEST(GdrReference, KeyHeadMappingIsRepeatInterleave) {
  PrefillConfig grouped;
  grouped.lengths = {6, 3};
  grouped.nk = 2, grouped.nv = 4, grouped.dk = 5, grouped.dv = 3;
  grouped.act = DType::kF32;
  PrefillProblem a(grouped);
  PrefillConfig expanded = grouped;
  expanded.nk = 4;
  PrefillProblem b(expanded);
  b.v = a.v, b.beta = a.beta, b.g = a.g, b.initial_state = a.initial_state;
  for (int64_t t = 0; t < a.tokens(); ++t)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t j = 0; j < 5; ++j) {
        b.q.set((t * 4 + h) * 5 + j, a.q.get((t * 2 + h / 2) * 5 + j));
        b.k.set((t * 4 + h) * 5 + j, a.k.get((t * 2 + h / 2) * 5 + j));
      }
  std::vector<double> out_a, state_a, out_b, state_b;
  a.reference(&out_a, &state_a);
  b.reference(&out_b, &state_b);
  EXPECT_EQ(out_a, out_b);
  EXPECT_EQ(state_a, state_b);
}

// A query stored head-major (Nk, T, Dk) and viewed as (T, Nk, Dk) through strides gives the same result.
TEST(GdrReference, ReadsThroughStrides) {
  PrefillConfig c;
  c.lengths = {7};
  c.nk = 2, c.nv = 2, c.dk = 4, c.dv = 3;
  PrefillProblem p(c);
  const int64_t t_count = p.tokens();
  HostTensor head_major(c.act, {c.nk, t_count, c.dk});
  for (int64_t t = 0; t < t_count; ++t)
    for (int64_t h = 0; h < c.nk; ++h)
      for (int64_t j = 0; j < c.dk; ++j)
        head_major.set((h * t_count + t) * c.dk + j, p.q.get((t * c.nk + h) * c.dk + j));
  const TensorView strided_q(head_major.bytes.data(), c.act, {t_count, c.nk, c.dk},
                             {c.dk, t_count * c.dk, 1});
  std::vector<double> out_a, state_a, out_b, state_b;
  p.reference(&out_a, &state_a);
  const TensorView g = p.g.view();
  txops::reference::chunk_gated_delta_rule(strided_q, p.k.view(), p.v.view(), p.beta.view(), p.initial_state.view(),
                                           p.lengths.view(), &g, p.scale(), &out_b, &state_b);
  EXPECT_EQ(out_a, out_b);
  EXPECT_EQ(state_a, state_b);
}

// Decode oracle with gk absent and one accepted token == prefill oracle over the same tokens.
TEST(GdrReference, DecodeOracleAgreesWithPrefillOracle) {
  DecodeConfig dc;
  dc.lengths = {3, 2};
  dc.state_indices = {2, 0, 4, 1, 3};
  dc.num_slots = 5;
  dc.nk = 1, dc.nv = 2, dc.dk = 6, dc.dv = 4;
  DecodeProblem d(dc);
  PrefillConfig pc;
  pc.lengths = dc.lengths;
  pc.nk = dc.nk, pc.nv = dc.nv, pc.dk = dc.dk, pc.dv = dc.dv;
  PrefillProblem p(pc);
  p.q = d.q, p.k = d.k, p.v = d.v, p.beta = d.beta, p.g = d.g;
  const int64_t slot_elems = dc.nv * dc.dv * dc.dk;
  const int64_t first_slot[] = {2, 1}, last_slot[] = {4, 3};  // indices[t0], indices[t0 + L - 1]
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < slot_elems; ++i)
      p.initial_state.set(b * slot_elems + i, d.pool_before.get(first_slot[b] * slot_elems + i));
  std::vector<double> out_d, pool_d, out_p, state_p;
  d.reference(&out_d, &pool_d);
  p.reference(&out_p, &state_p);
  EXPECT_EQ(out_d, out_p);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < slot_elems; ++i)
      EXPECT_EQ(pool_d[last_slot[b] * slot_elems + i], state_p[b * slot_elems + i]);
}

}  // namespace
}  // namespace gdrtest
