// gdr_layout_test.cpp — both gated-delta-rule ops on non-contiguous views (txops accepts any strides): padded rows
// with a leading offset for every tensor, outputs included (nothing outside the view may change), strided index
// tensors, stride-0 broadcast inputs (one initial state for every sequence, one g for every head), and the decode
// pool in key-major memory order (transformers' / fla's [N, HV, K, V] state as its transposed view), where a NaN
// input stays NaN; once per ISA (those this CPU lacks are SKIPPED, named).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "ops/gated_delta_rule/reference.h"
#include "support/gdr_layouts.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Isa;

TXOPS_ISA_TEST_SUITE(GdrLayoutOnIsa);

// A (B, Nv, Dv, Dk) state stored in (B, Nv, Dk, Dv) memory order — transformers' and fla's [N, HV, K, V] — and
// its (B, Nv, Dv, Dk) view (strides: v 1, k Dv).
struct KeyMajorState {
  explicit KeyMajorState(const HostTensor& value_major) : bytes(value_major.bytes.size()) {
    const int64_t heads = value_major.shape[0] * value_major.shape[1], dv = value_major.shape[2],
                  dk = value_major.shape[3];
    const size_t elem = txops::dtype_size(value_major.dtype);
    for (int64_t head = 0; head < heads; ++head)
      for (int64_t v = 0; v < dv; ++v)
        for (int64_t k = 0; k < dk; ++k)
          std::memcpy(&bytes[((head * dk + k) * dv + v) * elem], &value_major.bytes[((head * dv + v) * dk + k) * elem],
                      elem);
    view = TensorView(bytes.data(), value_major.dtype, {value_major.shape[0], value_major.shape[1], dv, dk},
                      {value_major.shape[1] * dk * dv, dk * dv, 1, dv});
  }
  std::vector<uint8_t> bytes;
  TensorView view;
};

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

// Initial and final states as key-major views, on both prefill kernels (the recurrent one stages value-major
// rows, the chunked one transposed columns): shapes with and without whole 8 x 8 tiles and 16-row steps.
TEST_P(GdrLayoutOnIsa, PrefillKeyMajorStates) {
  for (DType state : {DType::kBF16, DType::kF32}) {
    for (const std::pair<int64_t, int64_t>& dims : {std::make_pair<int64_t, int64_t>(16, 16), {19, 40}, {128, 128}}) {
      PrefillConfig c;
      c.lengths = {70, 0, 1, 9, 130};  // the one-token sequence runs straight on the views (recurrent kernel)
      c.nk = 1, c.nv = 2, c.dk = dims.first, c.dv = dims.second;
      c.state = state;
      PrefillProblem p(c);
      std::vector<double> out_ref, state_ref;
      p.reference(&out_ref, &state_ref);
      KeyMajorState s0(p.initial_state), s1(p.final_state);
      const TensorView g = p.g.view();
      for (const char* kernel : prefill_kernels()) {
        PrefillKernelScope scope(kernel);
        SCOPED_TRACE(c.describe() + " kernel=" + kernel + " isa=" + txops::isa_name(isa()));
        forget_plan();
        const txops::Status st = txops::chunk_gated_delta_rule(p.q.view(), p.k.view(), p.v.view(), p.beta.view(),
                                                               s0.view, p.lengths.view(), &g, p.scale(),
                                                               p.out.view(), s1.view);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(planned_on(isa()));
        EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "key-major states out", nullptr));
        EXPECT_TRUE(matches_reference("gdr_state", s1.view, state_ref, "key-major finalState", nullptr));
      }
    }
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

// The pool in (P, Nv, Dk, Dv) memory order, passed as its (P, Nv, Dv, Dk) transposed view: one token per sequence
// runs straight on it (gdr_decode_key_major_pool) where Dv is a whole number of vectors; several tokens, slot
// conflicts and other Dv stage it. Against the oracle; slots no token writes keep their bytes.
TEST_P(GdrLayoutOnIsa, DecodeKeyMajorPool) {
  struct Case { std::vector<int32_t> lengths, indices; int64_t dk, dv; bool direct; };
  const std::vector<Case> cases = {
      {{1, 1, 1, 1}, {5, 0, 3, 6}, 128, 128, true},  // Qwen3-Next's heads
      {{1, 1, 0, 1}, {2, 4, 1}, 19, 32, true},        // Dk not a multiple of the 4-row step; an empty sequence
      {{1, 1}, {1, 3}, 16, 20, true},                 // Dv not a whole number of vectors on AVX2 / AVX3: staged
      {{2, 1}, {0, 2, 5}, 16, 16, false},             // two tokens in one sequence
      {{3}, {0, 2, 5}, 19, 40, false},                // staged tiles with row and column tails
      {{1, 1}, {4, 4}, 16, 16, false}};               // both sequences on one slot (a conflict)
  for (const Case& k : cases) {
    for (DType state : {DType::kBF16, DType::kF32}) {
      for (bool with_gk : {false, true}) {
        DecodeConfig c;
        c.lengths = k.lengths, c.state_indices = k.indices, c.num_slots = 7;
        c.nk = 1, c.nv = 3, c.dk = k.dk, c.dv = k.dv;
        c.state = state, c.with_gk = with_gk;
        DecodeProblem p(c);
        std::vector<double> out_ref, pool_ref;
        p.reference(&out_ref, &pool_ref);
        const int64_t P = c.num_slots, dv = c.dv;
        KeyMajorState key_major_pool(p.pool_before);
        const std::vector<uint8_t>& key_major = key_major_pool.bytes;
        const std::vector<uint8_t> before = key_major;
        const TensorView pool = key_major_pool.view;
        SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(isa()));
        forget_plan();
        const TensorView g = p.g.view(), gk = p.gk.view();
        const txops::Status st = txops::recurrent_gated_delta_rule(
            p.q.view(), p.k.view(), p.v.view(), p.beta.view(), pool, p.lengths.view(), p.indices.view(), &g,
            with_gk ? &gk : nullptr, nullptr, p.scale(), p.out.view());
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(planned_on(isa()));
        const bool direct = k.direct && dv % txops::testing::fp32_lanes(isa()) == 0;
        EXPECT_EQ(std::string(last_plan().kernel) == "gdr_decode_key_major_pool", direct) << txops::testing::describe(last_plan());
        EXPECT_TRUE(matches_reference("gdr_out", p.out.view(), out_ref, "key-major decode out", nullptr));
        EXPECT_TRUE(matches_reference("gdr_state", pool, pool_ref, "key-major stateRef", nullptr));
        const std::set<int32_t> written(k.indices.begin(), k.indices.end());
        const size_t slot_bytes = key_major.size() / static_cast<size_t>(P);
        for (int64_t slot = 0; slot < P; ++slot) {
          if (written.count(static_cast<int32_t>(slot))) continue;
          EXPECT_EQ(0, std::memcmp(&key_major[slot * slot_bytes], &before[slot * slot_bytes], slot_bytes))
              << "slot " << slot << " is written by no token but changed";
        }
      }
    }
  }
}

// A NaN among one token's fp32 inputs whose payload reaches into its low 16 bits stays NaN in a key-major bf16 pool
// (the column-sum kernels leave out the rounding's NaN test only for tokens without NaN inputs): that token's slot
// is NaN throughout, the other sequence's finite.
TEST_P(GdrLayoutOnIsa, DecodeKeyMajorPoolKeepsANaNInput) {
  DecodeConfig c;
  c.lengths = {1, 1}, c.state_indices = {0, 1}, c.num_slots = 2;
  c.nk = 1, c.nv = 2, c.dk = 128, c.dv = 32;
  c.act = DType::kF32, c.state = DType::kBF16;
  DecodeProblem p(c);
  const uint32_t nan_bits = 0x7FFFFFFFu;
  std::memcpy(p.k.bytes.data() + 5 * sizeof(float), &nan_bits, sizeof(nan_bits));  // token 0, key 5
  KeyMajorState key_major_pool(p.pool_before);
  SCOPED_TRACE(c.describe() + " isa=" + txops::isa_name(isa()));
  forget_plan();
  const TensorView g = p.g.view();
  const txops::Status st = txops::recurrent_gated_delta_rule(p.q.view(), p.k.view(), p.v.view(), p.beta.view(),
                                                             key_major_pool.view, p.lengths.view(), p.indices.view(),
                                                             &g, nullptr, nullptr, p.scale(), p.out.view());
  ASSERT_TRUE(st.ok()) << st.message();
  const std::vector<uint8_t>& bytes = key_major_pool.bytes;
  const size_t per_slot = bytes.size() / 2 / 2;  // bf16 elements per slot
  size_t nan_in_slot0 = 0, finite_in_slot1 = 0;
  for (size_t i = 0; i < per_slot; ++i) {
    uint16_t a, b;
    std::memcpy(&a, &bytes[2 * i], 2);
    std::memcpy(&b, &bytes[2 * (per_slot + i)], 2);
    nan_in_slot0 += (a & 0x7F80) == 0x7F80 && (a & 0x7F) != 0 ? 1 : 0;
    finite_in_slot1 += (b & 0x7F80) != 0x7F80 ? 1 : 0;
  }
  EXPECT_EQ(nan_in_slot0, per_slot) << "the NaN token's slot holds numbers";
  EXPECT_EQ(finite_in_slot1, per_slot) << "the other sequence's slot is not finite";
}

}  // namespace
}  // namespace gdrtest
