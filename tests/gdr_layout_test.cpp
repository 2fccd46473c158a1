// gdr_layout_test.cpp — both gated-delta-rule ops on non-contiguous views (txops accepts any strides): padded rows
// with a leading offset for every tensor, outputs included (nothing outside the view may change), strided index
// tensors, and stride-0 broadcast inputs (one initial state for every sequence, one g for every head); once per ISA
// (those this CPU lacks are SKIPPED, named).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/gated_delta_rule/reference.h"
#include "support/gdr_layouts.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrLayoutOnIsa);

TEST_P(GdrLayoutOnIsa, PrefillPaddedViewsEverywhere) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    PrefillConfig c;
    c.lengths = {70, 0, 9};
    c.nk = 2, c.nv = 4, c.dk = 16, c.dv = 12;
    c.act = act;
    PrefillProblem p(c);
    std::vector<double> out_ref, state_ref;
    p.reference(&out_ref, &state_ref);
    PaddedTensor q(p.q, 3, 5), k(p.k, 1, 2), v(p.v, 4, 1), beta(p.beta, 2, 3), g(p.g, 5, 7), s0(p.initial_state, 3, 1);
    PaddedTensor lengths(p.lengths, 0, 3), out(p.out, 3, 4), s1(p.final_state, 2, 6);
    for (const char* kernel : prefill_kernels()) {
      PrefillKernelScope scope(kernel);
      SCOPED_TRACE(c.describe() + " kernel=" + kernel + " isa=" + txops::isa_name(isa()));
      forget_plan();
      const txops::Status st = txops::chunk_gated_delta_rule(q.view, k.view, v.view, beta.view, s0.view, lengths.view,
                                                             &g.view, p.scale(), out.view, s1.view);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(planned_on(isa()));
      EXPECT_TRUE(matches_reference("gdr_out", out.view, out_ref, "padded out", nullptr));
      EXPECT_TRUE(matches_reference("gdr_state", s1.view, state_ref, "padded finalState", nullptr));
      EXPECT_TRUE(out.outside_untouched()) << "out: bytes outside the view changed";
      EXPECT_TRUE(s1.outside_untouched()) << "finalState: bytes outside the view changed";
    }
  }
}

TEST_P(GdrLayoutOnIsa, PrefillBroadcastInitialStateAndG) {
  PrefillConfig c;
  c.lengths = {5, 66, 1};
  c.nk = 1, c.nv = 3, c.dk = 8, c.dv = 8;
  PrefillProblem p(c);
  const TensorView s0 = broadcast_first(p.initial_state, 0, 3);  // one state for all sequences
  const TensorView g = broadcast_first(p.g, 1, 3);               // one g per token for all heads
  std::vector<double> out_ref, state_ref;
  txops::reference::chunk_gated_delta_rule(p.q.view(), p.k.view(), p.v.view(), p.beta.view(), s0, p.lengths.view(),
                                           &g, p.scale(), &out_ref, &state_ref);
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    SCOPED_TRACE(c.describe() + " kernel=" + kernel + " isa=" + txops::isa_name(isa()));
    forget_plan();
    const txops::Status st = txops::chunk_gated_delta_rule(p.q.view(), p.k.view(), p.v.view(), p.beta.view(), s0,
                                                           p.lengths.view(), &g, p.scale(), p.out.view(),
                                                           p.final_state.view());
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(planned_on(isa()));
    EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "broadcast out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", p.final_state.view(), state_ref, "broadcast finalState", nullptr));
  }
}

TEST_P(GdrLayoutOnIsa, DecodePaddedPoolAndStridedIndices) {
  for (DType state : {DType::kBF16, DType::kF32}) {
    DecodeConfig c;
    c.lengths = {2, 1, 3};
    c.state_indices = {6, 1, 4, 0, 2, 5};
    c.accepted = {2, 1, 3};
    c.num_slots = 8;
    c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 20;
    c.with_gk = true;
    c.state = state;
    DecodeProblem p(c);
    std::vector<double> out_ref, pool_ref;
    p.reference(&out_ref, &pool_ref);
    PaddedTensor q(p.q, 2, 1), k(p.k, 3, 2), v(p.v, 1, 3), beta(p.beta, 1, 1), g(p.g, 2, 2), gk(p.gk, 3, 1);
    PaddedTensor out(p.out, 5, 2), lengths(p.lengths, 0, 1), accepted(p.accepted, 0, 2);
    HostTensor spread_indices(DType::kI32, {2 * static_cast<int64_t>(c.state_indices.size())});
    for (size_t t = 0; t < c.state_indices.size(); ++t) spread_indices.ints()[2 * t] = c.state_indices[t];
    const TensorView indices(spread_indices.bytes.data(), DType::kI32, {static_cast<int64_t>(c.state_indices.size())},
                             {2});
    SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(isa()));
    PaddedTensor pool(p.pool_before, 4, 3);
    forget_plan();
    const txops::Status st = txops::recurrent_gated_delta_rule(q.view, k.view, v.view, beta.view, pool.view,
                                                               lengths.view, indices, &g.view, &gk.view,
                                                               &accepted.view, p.scale(), out.view);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(planned_on(isa()));
    EXPECT_TRUE(matches_reference("gdr_out", out.view, out_ref, "padded decode out", nullptr));
    EXPECT_TRUE(matches_reference("gdr_state", pool.view, pool_ref, "padded stateRef", nullptr));
    EXPECT_TRUE(out.outside_untouched()) << "out: bytes outside the view changed";
    EXPECT_TRUE(pool.outside_untouched()) << "stateRef: bytes outside the view changed";
  }
}

}  // namespace
}  // namespace gdrtest
