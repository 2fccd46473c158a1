// gdr_backward_test.cpp — the backward of the chunked gated delta rule (txops::chunk_gated_delta_rule_grad,
// aclnnChunkGatedDeltaRuleGrad):
//   - the fp64 reference backward against central finite differences of the fp64 forward, and the adjoint
//     identities (the op is linear in q, and jointly in (v, initialState));
//   - the kernel against the fp64 reference on every ISA (lengths around the chunk, ragged batches with empty
//     sequences, GQA ratios 1–8, odd head dims, with and without g, every activation and state dtype, scales),
//     errors per gradient in the "gdr_backward" tolerance row, printed as a table;
//   - bit-identity for 1–4 threads; a sequence run as two chained calls gives the one call's gradients;
//   - gradInitialState in place on gradFinalState; gradG not asked for;
//   - padded, offset and broadcast (stride-0) views: nothing outside an output view is written;
//   - the forward's snapshots handed to the backward (forward_checkpoints; aclnnChunkGatedDeltaRuleGradEx): the
//     reference's gradients, the recomputing backward's bits where the arithmetic is the same;
//   - the AMX path (CPUs with AMX-BF16) beside the fp32 path: the reference, its bits for 1–4 threads;
//   - the aclnn two-phase path (same bytes as the C++ API, a short workspace refused) and the validation rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "aclnnop/aclnn_chunk_gated_delta_rule_grad.h"
#include "core/amx.h"
#include "core/verbose.h"
#include "ops/gated_delta_rule/reference.h"
#include "ops/gated_delta_rule/reference_backward.h"
#include "support/gdr_calls.h"
#include "support/gdr_layouts.h"
#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::DType;
using txops::Status;
using txops::StatusCode;
using txops::reference::GdrGradients;

ErrorTable& table() {
  static ErrorTable* t = [] {
    auto* tab = new ErrorTable;
    std::atexit([] { table().print("gated delta rule backward vs fp64 reference"); });
    return tab;
  }();
  return *t;
}

// A forward problem plus the incoming gradients and the gradient outputs.
struct GradProblem {
  explicit GradProblem(const PrefillConfig& c, bool with_grad_final = true)
      : fwd(c), with_grad_final(with_grad_final) {
    const int64_t t = fwd.tokens(), b = static_cast<int64_t>(c.lengths.size());
    d_out = HostTensor(c.act, {t, c.nv, c.dv});
    d_final = HostTensor(c.state, {b, c.nv, c.dv, c.dk});
    dq = HostTensor(c.act, {t, c.nk, c.dk});
    dk = HostTensor(c.act, {t, c.nk, c.dk});
    dv = HostTensor(c.act, {t, c.nv, c.dv});
    dbeta = HostTensor(c.act, {t, c.nv});
    dg = HostTensor(DType::kF32, {t, c.nv});
    ds0 = HostTensor(c.state, {b, c.nv, c.dv, c.dk});
    InputGenerator gen(c.seed + 1000);
    gen.uniform(&d_out, -1.0, 1.0);
    gen.uniform(&d_final, -0.5, 0.5);
  }
  bool has_g() const { return fwd.config.with_g; }

  // The training forward: the forward's fp32 snapshots after every 64 tokens (checkpoint_every = 64, default
  // starts) into `checkpoints`, in key-major memory ((R, Nv, Dk, Dv), passed as its transposed view) or state-major,
  // and (with_corrected) its corrected values V' into `corrected`; run() then hands them to the backward.
  void record_forward(bool key_major = true, bool with_corrected = true) {
    int64_t rows = 0;
    for (int32_t len : fwd.config.lengths) rows += len / 64;
    const PrefillConfig& c = fwd.config;
    checkpoints = HostTensor(DType::kF32, {std::max<int64_t>(rows, 1), c.nv, key_major ? c.dk : c.dv,
                                           key_major ? c.dv : c.dk});
    std::fill(checkpoints.bytes.begin(), checkpoints.bytes.end(), 0xCD);  // rows the backward must not read
    checkpoints_view = checkpoints.view();
    if (key_major) {
      std::swap(checkpoints_view.shape[2], checkpoints_view.shape[3]);
      std::swap(checkpoints_view.strides[2], checkpoints_view.strides[3]);
    }
    txops::GdrPrefillOptions options;
    options.checkpoint_every = 64;
    options.checkpoints = &checkpoints_view;
    corrected = HostTensor(DType::kF32, {fwd.tokens(), c.nv, c.dv});
    std::fill(corrected.bytes.begin(), corrected.bytes.end(), 0xCD);
    corrected_view = corrected.view();
    if (with_corrected) options.corrected_values = &corrected_view;
    const TensorView gv = fwd.g.view();
    ASSERT_TRUE(txops::chunk_gated_delta_rule(fwd.q.view(), fwd.k.view(), fwd.v.view(), fwd.beta.view(),
                                              fwd.initial_state.view(), fwd.lengths.view(), has_g() ? &gv : nullptr,
                                              fwd.scale(), fwd.out.view(), fwd.final_state.view(), options)
                    .ok());
    use_checkpoints = true;
    use_corrected = with_corrected;
  }

  Status run(bool want_dg = true) {
    const TensorView gv = fwd.g.view(), dfv = d_final.view(), dgv = dg.view();
    forget_plan();
    const Status st = txops::chunk_gated_delta_rule_grad(
        fwd.q.view(), fwd.k.view(), fwd.v.view(), fwd.beta.view(), fwd.initial_state.view(), fwd.lengths.view(),
        has_g() ? &gv : nullptr, fwd.scale(), d_out.view(), with_grad_final ? &dfv : nullptr, dq.view(), dk.view(),
        dv.view(), dbeta.view(), has_g() && want_dg ? &dgv : nullptr, ds0.view(),
        use_checkpoints ? &checkpoints_view : nullptr, use_corrected ? &corrected_view : nullptr);
    if (st.ok()) EXPECT_TRUE(planned_on(txops::active_isa()));
    return st;
  }

  GdrGradients reference() const {
    const TensorView gv = fwd.g.view(), dfv = d_final.view();
    GdrGradients r;
    txops::reference::chunk_gated_delta_rule_grad(fwd.q.view(), fwd.k.view(), fwd.v.view(), fwd.beta.view(),
                                                  fwd.initial_state.view(), fwd.lengths.view(),
                                                  has_g() ? &gv : nullptr, fwd.scale(), d_out.view(),
                                                  with_grad_final ? &dfv : nullptr, &r);
    return r;
  }

  // Every gradient against the reference under "gdr_backward", recorded as "<label> <grad> <dtype>".
  void expect_matches(const GdrGradients& r, const std::string& label) const {
    auto check = [&](const char* name, const HostTensor& y, const std::vector<double>& ref) {
      EXPECT_TRUE(matches_reference("gdr_backward", y.view(), ref,
                                    label + " " + name + " " + txops::dtype_name(y.dtype), &table()));
    };
    check("dq", dq, r.query);
    check("dk", dk, r.key);
    check("dv", dv, r.value);
    check("dbeta", dbeta, r.beta);
    if (has_g()) check("dg", dg, r.g);
    check("dS0", ds0, r.initial_state);
  }

  std::vector<std::vector<uint8_t>> output_bytes() const {
    return {dq.bytes, dk.bytes, dv.bytes, dbeta.bytes, dg.bytes, ds0.bytes};
  }
  void poison_outputs() {
    for (HostTensor* t : {&dq, &dk, &dv, &dbeta, &dg, &ds0}) std::fill(t->bytes.begin(), t->bytes.end(), 0xCD);
  }

  PrefillProblem fwd;
  bool with_grad_final;
  HostTensor d_out, d_final, dq, dk, dv, dbeta, dg, ds0;
  bool use_checkpoints = false, use_corrected = false;
  HostTensor checkpoints, corrected;
  TensorView checkpoints_view, corrected_view;
};

void run_and_check(const PrefillConfig& c, const std::string& label, bool with_grad_final = true) {
  SCOPED_TRACE(c.describe());
  GradProblem p(c, with_grad_final);
  p.poison_outputs();
  ASSERT_TRUE(p.run().ok());
  p.expect_matches(p.reference(), label);
}

// ---- the fp64 reference ------------------------------------------------------------------------------------
// fp64 tensors owned by the test (HostTensor rounds through fp32).
struct F64 {
  F64(std::vector<int64_t> shape_) : shape(std::move(shape_)) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    data.assign(n, 0.0);
  }
  TensorView view() const {
    return TensorView::make(const_cast<double*>(data.data()), DType::kF64, static_cast<int32_t>(shape.size()),
                            shape.data(), nullptr);
  }
  std::vector<int64_t> shape;
  std::vector<double> data;
};

struct TinyProblem {
  TinyProblem(std::vector<int32_t> lens, int64_t nk, int64_t nv, int64_t dk, int64_t dv, bool with_g_)
      : with_g(with_g_),
        lengths_host(DType::kI32, {static_cast<int64_t>(lens.size())}),
        q({total(lens), nk, dk}), k({total(lens), nk, dk}), v({total(lens), nv, dv}), beta({total(lens), nv}),
        g({total(lens), nv}), s0({static_cast<int64_t>(lens.size()), nv, dv, dk}), d_out({total(lens), nv, dv}),
        d_final({static_cast<int64_t>(lens.size()), nv, dv, dk}) {
    for (size_t i = 0; i < lens.size(); ++i) lengths_host.ints()[i] = lens[i];
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.2, 0.9), neg(-0.8, -0.05);
    for (F64* t : {&q, &k, &v, &s0, &d_out, &d_final})
      for (double& x : t->data) x = u(rng) * 0.7;
    for (double& x : beta.data) x = pos(rng);
    for (double& x : g.data) x = neg(rng);
  }
  static int64_t total(const std::vector<int32_t>& l) { return std::accumulate(l.begin(), l.end(), int64_t{0}); }

  // L = Σ dOut ⊙ out + Σ dFinal ⊙ finalState, by the fp64 forward reference.
  double loss() const {
    std::vector<double> out, fin;
    const TensorView gv = g.view();
    txops::reference::chunk_gated_delta_rule(q.view(), k.view(), v.view(), beta.view(), s0.view(),
                                             lengths_host.view(), with_g ? &gv : nullptr, scale, &out, &fin);
    double l = 0;
    for (size_t i = 0; i < out.size(); ++i) l += d_out.data[i] * out[i];
    for (size_t i = 0; i < fin.size(); ++i) l += d_final.data[i] * fin[i];
    return l;
  }
  GdrGradients grads() const {
    GdrGradients r;
    const TensorView gv = g.view(), dfv = d_final.view();
    txops::reference::chunk_gated_delta_rule_grad(q.view(), k.view(), v.view(), beta.view(), s0.view(),
                                                  lengths_host.view(), with_g ? &gv : nullptr, scale, d_out.view(),
                                                  &dfv, &r);
    return r;
  }

  bool with_g;
  float scale = 0.7f;
  HostTensor lengths_host;
  F64 q, k, v, beta, g, s0, d_out, d_final;
};

TEST(GdrBackwardReference, MatchesFiniteDifferences) {
  for (bool with_g : {true, false}) {
    SCOPED_TRACE(with_g ? "with g" : "without g");
    TinyProblem p({3, 0, 4}, 1, 2, 3, 2, with_g);
    const GdrGradients r = p.grads();
    struct Input {
      const char* name;
      F64* x;
      const std::vector<double>* grad;
    };
    std::vector<Input> inputs = {{"q", &p.q, &r.query},      {"k", &p.k, &r.key},
                                 {"v", &p.v, &r.value},      {"beta", &p.beta, &r.beta},
                                 {"S0", &p.s0, &r.initial_state}};
    if (with_g) inputs.push_back({"g", &p.g, &r.g});
    const double eps = 1e-6;
    int checked = 0;
    for (const Input& in : inputs) {
      ASSERT_EQ(in.grad->size(), in.x->data.size()) << in.name;
      for (size_t i = 0; i < in.x->data.size(); ++i) {
        const double x0 = in.x->data[i];
        in.x->data[i] = x0 + eps;
        const double up = p.loss();
        in.x->data[i] = x0 - eps;
        const double down = p.loss();
        in.x->data[i] = x0;
        const double fd = (up - down) / (2 * eps);
        EXPECT_NEAR((*in.grad)[i], fd, 1e-8 + 1e-7 * std::fabs(fd)) << in.name << "[" << i << "]";
        ++checked;
      }
    }
    if (!with_g) EXPECT_TRUE(r.g.empty());
    std::printf("  [info] %d gradient elements checked against central differences (%s)\n", checked,
                with_g ? "with g" : "without g");
  }
}

// out is linear in q (the states do not depend on it), and (out, finalState) jointly linear in (v, initialState)
// for fixed k, β, g: so <dq, q> = <dOut, out> and <dv, v> + <dS0, S0> = <dOut, out> + <dFinal, finalState>.
TEST(GdrBackwardReference, AdjointIdentities) {
  TinyProblem p({5, 9}, 2, 4, 4, 3, true);
  const GdrGradients r = p.grads();
  std::vector<double> out, fin;
  const TensorView gv = p.g.view();
  txops::reference::chunk_gated_delta_rule(p.q.view(), p.k.view(), p.v.view(), p.beta.view(), p.s0.view(),
                                           p.lengths_host.view(), &gv, p.scale, &out, &fin);
  auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  const double out_term = dot(p.d_out.data, out), fin_term = dot(p.d_final.data, fin);
  EXPECT_NEAR(dot(r.query, p.q.data), out_term, 1e-12 * (1 + std::fabs(out_term)));
  const double lhs = dot(r.value, p.v.data) + dot(r.initial_state, p.s0.data);
  EXPECT_NEAR(lhs, out_term + fin_term, 1e-12 * (1 + std::fabs(lhs)));
}

// ---- the kernel against the reference, per ISA ---------------------------------------------------------------
TXOPS_ISA_TEST_SUITE(GdrBackwardOnIsa);

PrefillConfig config(std::vector<int32_t> lengths, int64_t nk, int64_t nv, int64_t dk, int64_t dv) {
  PrefillConfig c;
  c.lengths = std::move(lengths);
  c.nk = nk, c.nv = nv, c.dk = dk, c.dv = dv;
  c.act = DType::kF32;
  return c;
}

TEST_P(GdrBackwardOnIsa, LengthsAroundTheChunk) {
  for (int32_t len : {1, 63, 64, 65, 197}) {
    PrefillConfig c = config({len}, 1, 2, 16, 12);
    run_and_check(c, "lengths");
  }
}

TEST_P(GdrBackwardOnIsa, RaggedBatchesWithEmptySequences) {
  for (bool with_grad_final : {true, false}) {
    PrefillConfig c = config({0, 70, 1, 0, 130}, 2, 4, 8, 8);
    c.seed = 3;
    run_and_check(c, "ragged", with_grad_final);
  }
}

TEST_P(GdrBackwardOnIsa, HeadRatiosAndOddHeadDims) {
  struct Shape { int64_t nk, nv, dk, dv; };
  for (const Shape& s : {Shape{2, 2, 5, 33}, Shape{1, 2, 33, 5}, Shape{2, 8, 7, 9}, Shape{1, 8, 16, 16}}) {
    PrefillConfig c = config({66, 3}, s.nk, s.nv, s.dk, s.dv);
    run_and_check(c, "heads");
  }
}

TEST_P(GdrBackwardOnIsa, WideHeads) {
  run_and_check(config({70}, 1, 1, 128, 128), "wide");
  run_and_check(config({20}, 1, 1, 256, 24), "wide");
}

TEST_P(GdrBackwardOnIsa, WithoutGAndScales) {
  for (bool with_g : {false, true}) {
    for (float scale : {0.3f, 1.7f}) {
      PrefillConfig c = config({80, 17}, 1, 2, 24, 20);
      c.with_g = with_g;
      c.scale = scale;
      run_and_check(c, with_g ? "scale" : "no g");
    }
  }
}

TEST_P(GdrBackwardOnIsa, ActivationAndStateDtypes) {
  for (DType act : {DType::kBF16, DType::kF16, DType::kF32}) {
    for (DType state : {DType::kBF16, DType::kF32}) {
      PrefillConfig c = config({90, 40}, 2, 4, 32, 24);
      c.act = act, c.state = state;
      run_and_check(c, "dtypes");
    }
  }
}

// Outside the caller's usual ranges: a gate of −20 (every state decays to ~2e-9 of itself each token) and β = 1.
TEST_P(GdrBackwardOnIsa, StrongDecayBetaOne) {
  PrefillConfig c = config({70, 3}, 1, 2, 16, 8);
  SCOPED_TRACE(c.describe());
  GradProblem p(c);
  for (int64_t i = 0; i < p.fwd.g.numel(); ++i) p.fwd.g.set(i, (i % 3 == 0) ? -20.0 : -0.1);
  for (int64_t i = 0; i < p.fwd.beta.numel(); ++i) p.fwd.beta.set(i, 1.0);
  ASSERT_TRUE(p.run().ok());
  for (const HostTensor* t : {&p.dq, &p.dk, &p.dv, &p.dbeta, &p.dg, &p.ds0}) EXPECT_TRUE(all_finite(*t));
  p.expect_matches(p.reference(), "g=-20 beta=1");
}

TEST_P(GdrBackwardOnIsa, BitIdenticalForOneToFourThreads) {
  for (bool snapshots : {false, true}) {
    SCOPED_TRACE(snapshots ? "with the forward's snapshots" : "recomputing the states");
    PrefillConfig c = config({70, 0, 129, 5}, 2, 4, 20, 12);
    c.act = DType::kBF16;
    GradProblem p(c);
    if (snapshots) p.record_forward();
    std::vector<std::vector<uint8_t>> one;
    for (int threads : {1, 2, 3, 4}) {
      ScopedThreads scope(threads);
      p.poison_outputs();
      ASSERT_TRUE(p.run().ok());
      EXPECT_TRUE(ran_multithreaded(threads));
      if (threads == 1) {
        one = p.output_bytes();
        continue;
      }
      EXPECT_TRUE(p.output_bytes() == one) << "gradients differ with " << threads << " threads";
    }
    // Three parts of three grains each run by a team of one: part 0's thread takes the others' grains.
    ScopedThreads three(3);
    ScopedEnv grains("TXOPS_GRAINS_PER_PART", "3");
    txops::testing::ScopedTeamOfOne team;
    p.poison_outputs();
    ASSERT_TRUE(p.run().ok());
    EXPECT_TRUE(p.output_bytes() == one) << "gradients differ with stolen grains";
  }
}

// The forward's snapshots handed to the backward (forward_checkpoints), with or without its corrected values V'
// (forward_corrected_values): the gradients match the reference; with
// fp16 / fp32 activations they are the recomputing backward's bits (its checkpoint pass is the forward's
// arithmetic); bf16 activations may differ in the last bits where the forward's grams use vdpbf16ps (AVX512_BF16).
// Both memory orders of the snapshots; lengths around the chunk, ragged batches with empty sequences, GQA.
TEST_P(GdrBackwardOnIsa, ForwardSnapshotsGiveTheSameGradients) {
  struct Case { std::vector<int32_t> lengths; int64_t nk, nv, dk, dv; DType act, state; bool key_major; };
  const Case cases[] = {
      {{1}, 1, 2, 16, 12, DType::kF32, DType::kF32, true},
      {{64}, 1, 2, 16, 12, DType::kF32, DType::kF32, true},
      {{197}, 1, 2, 16, 12, DType::kF32, DType::kF32, false},
      {{0, 70, 1, 0, 130}, 2, 4, 8, 8, DType::kF16, DType::kBF16, true},
      {{129, 63, 65}, 1, 3, 33, 5, DType::kF32, DType::kBF16, true},
      {{200, 64}, 2, 8, 24, 20, DType::kBF16, DType::kF32, true},
      {{130, 7}, 1, 2, 128, 128, DType::kBF16, DType::kBF16, false},
      // key-major with Dv a multiple of 16: with V' the snapshots are read where they lie (no staging copy)
      {{130, 64, 0}, 1, 2, 16, 32, DType::kF32, DType::kF32, true},
      {{70}, 1, 1, 128, 128, DType::kF16, DType::kF32, true},
  };
  for (const Case& k : cases) {
    PrefillConfig c = config(k.lengths, k.nk, k.nv, k.dk, k.dv);
    c.act = k.act, c.state = k.state;
    SCOPED_TRACE(c.describe() + (k.key_major ? " key-major snapshots" : " state-major snapshots"));
    GradProblem p(c);
    ASSERT_TRUE(p.run().ok());
    const std::vector<std::vector<uint8_t>> recomputed = p.output_bytes();
    for (bool with_corrected : {false, true}) {
      SCOPED_TRACE(with_corrected ? "and corrected values" : "states only");
      p.record_forward(k.key_major, with_corrected);
      p.poison_outputs();
      ASSERT_TRUE(p.run().ok());
      p.expect_matches(p.reference(), with_corrected ? "forward's snapshots + V'" : "forward's snapshots");
      if (k.act != DType::kBF16) EXPECT_TRUE(p.output_bytes() == recomputed) << "gradients differ from recomputing";
    }
  }
}

// The forward of one sequence as two calls (the first call's finalState is the second's initialState); the
// backward as two calls in reverse (the second's gradInitialState is the first's gradFinalState) gives the
// gradients of the one call.
TEST_P(GdrBackwardOnIsa, TwoChainedCallsEqualOneCall) {
  for (int32_t split : {64, 70}) {
    SCOPED_TRACE("split at " + std::to_string(split));
    const int32_t total = 197;
    PrefillConfig whole_c = config({total}, 1, 2, 16, 12);
    GradProblem whole(whole_c);
    ASSERT_TRUE(whole.run().ok());
    const GdrGradients ref = whole.reference();
    whole.expect_matches(ref, "chained: one call");

    PrefillConfig c1 = whole_c, c2 = whole_c;
    c1.lengths = {split};
    c2.lengths = {total - split};
    GradProblem first(c1), second(c2);
    // Inputs of the two halves: the rows of the whole sequence.
    auto copy_rows = [](const HostTensor& from, int64_t row0, HostTensor* to) {
      const int64_t row = from.numel() / from.shape[0];
      std::memcpy(to->bytes.data(), from.bytes.data() + row0 * row * txops::dtype_size(from.dtype),
                  to->bytes.size());
    };
    for (auto [half, row0] : {std::pair<GradProblem*, int64_t>{&first, 0}, {&second, split}}) {
      copy_rows(whole.fwd.q, row0, &half->fwd.q);
      copy_rows(whole.fwd.k, row0, &half->fwd.k);
      copy_rows(whole.fwd.v, row0, &half->fwd.v);
      copy_rows(whole.fwd.beta, row0, &half->fwd.beta);
      copy_rows(whole.fwd.g, row0, &half->fwd.g);
      copy_rows(whole.d_out, row0, &half->d_out);
    }
    first.fwd.initial_state = whole.fwd.initial_state;
    ASSERT_TRUE(first.fwd.run().ok());  // forward of the first half
    second.fwd.initial_state = first.fwd.final_state;
    second.d_final = whole.d_final;
    ASSERT_TRUE(second.run().ok());
    first.d_final = second.ds0;
    ASSERT_TRUE(first.run().ok());

    // Concatenated per-token gradients of the halves, and the first's dS0, against the one call's.
    auto joined = [&](const HostTensor& a, const HostTensor& b) {
      HostTensor j(a.dtype, {total});
      j.shape = a.shape;
      j.shape[0] = total;
      j.bytes = a.bytes;
      j.bytes.insert(j.bytes.end(), b.bytes.begin(), b.bytes.end());
      return j;
    };
    auto as_doubles = [](const HostTensor& t) {
      std::vector<double> d(t.numel());
      for (int64_t i = 0; i < t.numel(); ++i) d[i] = t.get(i);
      return d;
    };
    const std::pair<const char*, std::pair<HostTensor, const HostTensor*>> grads[] = {
        {"dq", {joined(first.dq, second.dq), &whole.dq}},
        {"dk", {joined(first.dk, second.dk), &whole.dk}},
        {"dv", {joined(first.dv, second.dv), &whole.dv}},
        {"dbeta", {joined(first.dbeta, second.dbeta), &whole.dbeta}},
        {"dg", {joined(first.dg, second.dg), &whole.dg}},
        {"dS0", {first.ds0, &whole.ds0}}};
    for (const auto& [name, pair] : grads) {
      EXPECT_TRUE(matches_reference("gdr_backward", pair.first.view(), as_doubles(*pair.second),
                                    std::string("chained vs one call ") + name, nullptr));
    }
    // And the halves against the reference of the halves (the second from the first's fp32 final state).
    second.expect_matches(second.reference(), "chained: second half");
    first.expect_matches(first.reference(), "chained: first half");
  }
}

// Every tensor padded and offset (outputs included: nothing outside their views changes); then dOut and
// initialState broadcast with stride 0.
TEST_P(GdrBackwardOnIsa, PaddedAndBroadcastViews) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    PrefillConfig c = config({70, 0, 9}, 2, 4, 16, 12);
    c.act = act;
    SCOPED_TRACE(c.describe());
    GradProblem p(c);
    const GdrGradients ref = p.reference();
    PaddedTensor q(p.fwd.q, 3, 5), k(p.fwd.k, 1, 2), v(p.fwd.v, 4, 1), beta(p.fwd.beta, 2, 3), g(p.fwd.g, 5, 7);
    PaddedTensor s0(p.fwd.initial_state, 3, 1), lengths(p.fwd.lengths, 0, 3), d_out(p.d_out, 2, 2),
        d_final(p.d_final, 1, 4);
    PaddedTensor dq(p.dq, 3, 4), dk(p.dk, 2, 6), dv(p.dv, 1, 1), dbeta(p.dbeta, 3, 2), dg(p.dg, 2, 5),
        ds0(p.ds0, 4, 3);
    forget_plan();
    const Status st = txops::chunk_gated_delta_rule_grad(q.view, k.view, v.view, beta.view, s0.view, lengths.view,
                                                         &g.view, p.fwd.scale(), d_out.view, &d_final.view, dq.view,
                                                         dk.view, dv.view, dbeta.view, &dg.view, ds0.view);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(planned_on(isa()));
    const std::pair<const char*, std::pair<const PaddedTensor*, const std::vector<double>*>> outs[] = {
        {"dq", {&dq, &ref.query}},       {"dk", {&dk, &ref.key}}, {"dv", {&dv, &ref.value}},
        {"dbeta", {&dbeta, &ref.beta}}, {"dg", {&dg, &ref.g}},   {"dS0", {&ds0, &ref.initial_state}}};
    for (const auto& [name, o] : outs) {
      EXPECT_TRUE(matches_reference("gdr_backward", o.first->view, *o.second, std::string("padded ") + name, nullptr));
      EXPECT_TRUE(o.first->outside_untouched()) << name << ": bytes outside the view changed";
    }
  }
  // Stride 0: one dOut row for every token, one initial state for every sequence.
  PrefillConfig c = config({5, 66, 1}, 1, 3, 8, 8);
  GradProblem p(c);
  const TensorView d_out = broadcast_first(p.d_out, 0, p.fwd.tokens());
  const TensorView s0 = broadcast_first(p.fwd.initial_state, 0, 3);
  const TensorView gv = p.fwd.g.view(), dfv = p.d_final.view(), dgv = p.dg.view();
  GdrGradients ref;
  txops::reference::chunk_gated_delta_rule_grad(p.fwd.q.view(), p.fwd.k.view(), p.fwd.v.view(), p.fwd.beta.view(),
                                                s0, p.fwd.lengths.view(), &gv, p.fwd.scale(), d_out, &dfv, &ref);
  ASSERT_TRUE(txops::chunk_gated_delta_rule_grad(p.fwd.q.view(), p.fwd.k.view(), p.fwd.v.view(), p.fwd.beta.view(),
                                                 s0, p.fwd.lengths.view(), &gv, p.fwd.scale(), d_out, &dfv,
                                                 p.dq.view(), p.dk.view(), p.dv.view(), p.dbeta.view(), &dgv,
                                                 p.ds0.view())
                  .ok());
  p.expect_matches(ref, "broadcast");
}

// ---- options -----------------------------------------------------------------------------------------------
// ---- the AMX path (src/ops/gated_delta_rule/backward_amx-inl.h) ----------------------------------------------
// On a CPU and OS with AMX-BF16 the bf16 cases above whose Dk and Dv, rounded up to 16, are multiples of 32 run it
// already. Here, beside the fp32 path on the same problems (keys and values padded inside the 32-wide tiles,
// partial chunks and tiles, GQA, both state dtypes, no g, a scale that is not 1/√Dk, the forward's snapshots):
// both match the reference, the AMX path really ran (the log's tag, bits unlike the fp32 path's), and its bits do
// not depend on the thread count. Skipped, by name, elsewhere.
struct AmxSwitch {  // restores the default (allowed) on exit
  explicit AmxSwitch(bool on) { txops::set_amx_allowed(on); }
  ~AmxSwitch() { txops::set_amx_allowed(true); }
};

std::string grad_verbose_log(GradProblem& p) { return verbose_log_of([&] { return p.run(); }); }

// An output on a 64-byte boundary (HostTensor's storage is 16-byte aligned; the streamed stores need rows on vector
// boundaries), poisoned.
struct AlignedOutput {
  AlignedOutput(DType dtype, std::vector<int64_t> shape) : dtype(dtype), shape(std::move(shape)) {
    int64_t n = 1;
    for (int64_t d : this->shape) n *= d;
    storage.assign(static_cast<size_t>(n * static_cast<int64_t>(txops::dtype_size(dtype)) + 64), 0xCD);
  }
  uint8_t* data() {
    const uintptr_t a = reinterpret_cast<uintptr_t>(storage.data());
    return storage.data() + (64 - a % 64) % 64;
  }
  TensorView view() {
    return TensorView::make(data(), dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr);
  }
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> storage;
};

// Gradients of 4 MiB or more are written with non-temporal stores (the log's "stream=1"): one call on 8 heads whose
// dq, dk and dv take 4 MiB each (aligned, so every row streams) gives, head for head, the bits of calls on one head
// (0.5 MiB each: ordinary stores).
TEST_P(GdrBackwardOnIsa, StreamedGradientsGiveTheBitsOfOrdinaryStores) {
  PrefillConfig c = config({8192}, 8, 8, 32, 32);
  c.act = DType::kBF16;
  GradProblem p(c);
  const int64_t t = p.fwd.tokens();
  // Head h of a (T or B, heads, ...) tensor.
  auto head = [](TensorView v, int64_t h) {
    v.data = static_cast<char*>(v.data) + h * v.strides[1] * static_cast<int64_t>(txops::dtype_size(v.dtype));
    v.shape[1] = 1;
    return v;
  };
  // One call: heads [h, h + heads) of the inputs into the given gradients; returns the verbose log.
  auto call = [&](int64_t h, int64_t heads, const TensorView& dq, const TensorView& dk, const TensorView& dv,
                  const TensorView& dbeta, const TensorView& dg, const TensorView& ds0) {
    auto part = [&](TensorView v) {
      v = head(v, h);
      v.shape[1] = heads;
      return v;
    };
    const TensorView g = part(p.fwd.g.view()), d_final = part(p.d_final.view());
    forget_plan();
    return verbose_log_of([&] {
      return txops::chunk_gated_delta_rule_grad(
          part(p.fwd.q.view()), part(p.fwd.k.view()), part(p.fwd.v.view()), part(p.fwd.beta.view()),
          part(p.fwd.initial_state.view()), p.fwd.lengths.view(), &g, p.fwd.scale(), part(p.d_out.view()), &d_final,
          dq, dk, dv, dbeta, &dg, ds0);
    });
  };
  AlignedOutput dq(c.act, {t, c.nk, c.dk}), dk(c.act, {t, c.nk, c.dk}), dv(c.act, {t, c.nv, c.dv});
  p.poison_outputs();
  const std::string log = call(0, c.nk, dq.view(), dk.view(), dv.view(), p.dbeta.view(), p.dg.view(), p.ds0.view());
  EXPECT_NE(log.find("stream=1"), std::string::npos) << log;
  for (int64_t h = 0; h < c.nk; ++h) {
    SCOPED_TRACE("head " + std::to_string(h));
    HostTensor one_dq(c.act, {t, 1, c.dk}), one_dk(c.act, {t, 1, c.dk}), one_dv(c.act, {t, 1, c.dv}),
        one_dbeta(c.act, {t, 1}), one_dg(DType::kF32, {t, 1}), one_ds0(c.state, {1, 1, c.dv, c.dk});
    for (HostTensor* o : {&one_dq, &one_dk, &one_dv, &one_dbeta, &one_dg, &one_ds0})
      std::fill(o->bytes.begin(), o->bytes.end(), 0xCD);
    const std::string one_log = call(h, 1, one_dq.view(), one_dk.view(), one_dv.view(), one_dbeta.view(),
                                     one_dg.view(), one_ds0.view());
    EXPECT_EQ(one_log.find("stream=1"), std::string::npos) << one_log;
    const std::pair<const HostTensor*, TensorView> pairs[] = {
        {&one_dq, dq.view()},           {&one_dk, dk.view()},     {&one_dv, dv.view()},
        {&one_dbeta, p.dbeta.view()}, {&one_dg, p.dg.view()}, {&one_ds0, p.ds0.view()}};
    for (const auto& [one, whole] : pairs) {
      const TensorView w = head(whole, h);
      const int64_t rows = one->shape[0], element = static_cast<int64_t>(txops::dtype_size(one->dtype));
      const int64_t row_bytes = one->numel() / rows * element;
      for (int64_t r = 0; r < rows; ++r) {
        const void* whole_row = static_cast<const char*>(w.data) + r * w.strides[0] * element;
        ASSERT_EQ(0, std::memcmp(one->bytes.data() + r * row_bytes, whole_row, static_cast<size_t>(row_bytes)))
            << "row " << r << " of a gradient differs from the one-head call's";
      }
    }
  }
}

TEST(GdrBackwardAmx, TilesMatchTheReferenceBesideTheFp32PathForAnyThreadCount) {
  if (!txops::amx_bf16_usable()) GTEST_SKIP() << "no AMX-BF16 on this CPU or OS: the AMX path cannot run here";
  if (!txops::cpu_has_avx512_bf16()) GTEST_SKIP() << "the AMX path rides on the AVX-512 BF16 kernels";
  struct Case { std::vector<int32_t> lengths; int64_t nk, nv, dk, dv; DType state; bool with_g; float scale; bool snapshots; };
  const Case cases[] = {{{70}, 1, 1, 128, 128, DType::kF32, true, 0.0f, false},
                        {{65, 0, 130}, 1, 2, 24, 120, DType::kBF16, true, 0.0f, false},
                        {{1, 63, 64, 197}, 1, 4, 64, 32, DType::kF32, false, 1.7f, true},
                        {{129, 20}, 2, 4, 32, 64, DType::kBF16, true, 0.0f, true}};
  int differing = 0;
  for (const Case& k : cases) {
    PrefillConfig c = config(k.lengths, k.nk, k.nv, k.dk, k.dv);
    c.act = DType::kBF16, c.state = k.state, c.with_g = k.with_g, c.scale = k.scale;
    SCOPED_TRACE(c.describe() + (k.snapshots ? " with the forward's snapshots" : ""));
    GradProblem p(c);
    if (k.snapshots) p.record_forward();
    const GdrGradients ref = p.reference();
    std::vector<std::vector<uint8_t>> amx;
    {
      AmxSwitch on(true);
      for (int threads : {1, 2, 3, 4}) {
        ScopedThreads scope(threads);
        p.poison_outputs();
        if (threads > 1) {
          ASSERT_TRUE(p.run().ok());
          EXPECT_TRUE(p.output_bytes() == amx) << "AMX gradients differ with " << threads << " threads";
          continue;
        }
        const std::string log = grad_verbose_log(p);
        EXPECT_NE(log.find("x=amx"), std::string::npos) << log;
        p.expect_matches(ref, "amx");
        amx = p.output_bytes();
      }
    }
    AmxSwitch off(false);
    p.poison_outputs();
    const std::string log = grad_verbose_log(p);
    EXPECT_EQ(log.find("x=amx"), std::string::npos) << log;
    p.expect_matches(ref, "fp32 path");
    differing += p.output_bytes() != amx;
  }
  EXPECT_GT(differing, 0) << "the AMX path gave the fp32 path's bits on every problem: did it run?";
}

TEST(GdrBackward, GradInitialStateInPlaceOnGradFinalState) {
  PrefillConfig c = config({70, 0, 9}, 1, 2, 12, 8);
  GradProblem p(c);
  ASSERT_TRUE(p.run().ok());
  const std::vector<std::vector<uint8_t>> separate = p.output_bytes();
  HostTensor both = p.d_final;
  const TensorView gv = p.fwd.g.view(), bv = both.view();
  ASSERT_TRUE(txops::chunk_gated_delta_rule_grad(p.fwd.q.view(), p.fwd.k.view(), p.fwd.v.view(), p.fwd.beta.view(),
                                                 p.fwd.initial_state.view(), p.fwd.lengths.view(), &gv,
                                                 p.fwd.scale(), p.d_out.view(), &bv, p.dq.view(), p.dk.view(),
                                                 p.dv.view(), p.dbeta.view(), nullptr, bv)
                  .ok());
  EXPECT_TRUE(both.bytes == p.ds0.bytes) << "in-place gradInitialState differs";
  EXPECT_TRUE(p.dq.bytes == separate[0] && p.dk.bytes == separate[1] && p.dv.bytes == separate[2] &&
              p.dbeta.bytes == separate[3]);
}

TEST(GdrBackward, EmptySequencePassesGradFinalStateThrough) {
  PrefillConfig c = config({5, 0}, 1, 1, 8, 4);
  for (bool with_grad_final : {true, false}) {
    GradProblem p(c, with_grad_final);
    p.poison_outputs();
    ASSERT_TRUE(p.run().ok());
    const int64_t per_seq = 4 * 8;
    for (int64_t e = 0; e < per_seq; ++e)
      EXPECT_EQ(p.ds0.get(per_seq + e), with_grad_final ? p.d_final.get(per_seq + e) : 0.0) << e;
  }
}

TEST(GdrBackward, GradGNotAskedForLeavesItAlone) {
  PrefillConfig c = config({70}, 1, 2, 8, 8);
  GradProblem p(c);
  ASSERT_TRUE(p.run(true).ok());
  const std::vector<std::vector<uint8_t>> with_dg = p.output_bytes();
  std::fill(p.dg.bytes.begin(), p.dg.bytes.end(), 0xAB);
  const std::vector<uint8_t> poisoned = p.dg.bytes;
  ASSERT_TRUE(p.run(false).ok());
  EXPECT_TRUE(p.dg.bytes == poisoned);
  EXPECT_TRUE(p.dq.bytes == with_dg[0] && p.dk.bytes == with_dg[1] && p.ds0.bytes == with_dg[5]);
}

// ---- aclnn -----------------------------------------------------------------------------------------------
struct GradArgs {
  TensorView query, key, value, beta, initial_state, lengths, g, d_out, d_final, dq, dk, dv, dbeta, dg, ds0,
      checkpoints, corrected;
  bool has_g = true, has_final = true, has_dg = true;
  bool has_checkpoints = false, has_corrected = false;  // either: the Ex function
  float scale = 0.5f;
};

GradArgs grad_args(GradProblem* p) {
  GradArgs a;
  a.query = p->fwd.q.view(), a.key = p->fwd.k.view(), a.value = p->fwd.v.view(), a.beta = p->fwd.beta.view();
  a.initial_state = p->fwd.initial_state.view(), a.lengths = p->fwd.lengths.view(), a.g = p->fwd.g.view();
  a.d_out = p->d_out.view(), a.d_final = p->d_final.view(), a.dq = p->dq.view(), a.dk = p->dk.view();
  a.dv = p->dv.view(), a.dbeta = p->dbeta.view(), a.dg = p->dg.view(), a.ds0 = p->ds0.view();
  a.has_g = a.has_dg = p->has_g();
  a.scale = p->fwd.scale();
  a.has_checkpoints = p->use_checkpoints;
  if (p->use_checkpoints) a.checkpoints = p->checkpoints_view;
  a.has_corrected = p->use_corrected;
  if (p->use_corrected) a.corrected = p->corrected_view;
  return a;
}

Status call_cpp(const GradArgs& a) {
  return txops::chunk_gated_delta_rule_grad(a.query, a.key, a.value, a.beta, a.initial_state, a.lengths,
                                            a.has_g ? &a.g : nullptr, a.scale, a.d_out,
                                            a.has_final ? &a.d_final : nullptr, a.dq, a.dk, a.dv, a.dbeta,
                                            a.has_dg ? &a.dg : nullptr, a.ds0,
                                            a.has_checkpoints ? &a.checkpoints : nullptr,
                                            a.has_corrected ? &a.corrected : nullptr);
}

// The aclnn function a call goes to, as its messages name it.
std::string aclnn_name(const GradArgs& a) {
  return a.has_checkpoints || a.has_corrected ? "aclnnChunkGatedDeltaRuleGradEx" : "aclnnChunkGatedDeltaRuleGrad";
}

AclnnOutcome call_aclnn(const GradArgs& a, uint64_t shortfall = 0) {
  AclTensor q(a.query), k(a.key), v(a.value), b(a.beta), s0(a.initial_state), lens(a.lengths),
      g(a.has_g ? a.g : TensorView()), d_out(a.d_out), d_final(a.has_final ? a.d_final : TensorView()), dq(a.dq),
      dk(a.dk), dv(a.dv), db(a.dbeta), dg(a.has_dg ? a.dg : TensorView()), ds0(a.ds0);
  AclTensor checkpoints(a.has_checkpoints ? a.checkpoints : TensorView()),
      corrected(a.has_corrected ? a.corrected : TensorView());
  AclnnOutcome o;
  aclOpExecutor* executor = nullptr;
  const bool ex = a.has_checkpoints || a.has_corrected;
  if (ex) {
    o.status = aclnnChunkGatedDeltaRuleGradExGetWorkspaceSize(
        q.get(), k.get(), v.get(), b.get(), s0.get(), lens.get(), g.get(), a.scale, d_out.get(), d_final.get(),
        checkpoints.get(), corrected.get(), dq.get(), dk.get(), dv.get(), db.get(), dg.get(), ds0.get(),
        &o.workspace_size, &executor);
  } else {
    o.status = aclnnChunkGatedDeltaRuleGradGetWorkspaceSize(q.get(), k.get(), v.get(), b.get(), s0.get(),
                                                            lens.get(), g.get(), a.scale, d_out.get(), d_final.get(),
                                                            dq.get(), dk.get(), dv.get(), db.get(), dg.get(),
                                                            ds0.get(), &o.workspace_size, &executor);
  }
  if (o.status != 0) {
    o.message = aclGetRecentErrMsg();
    return o;
  }
  const uint64_t size = o.workspace_size > shortfall ? o.workspace_size - shortfall : 0;
  std::vector<uint8_t> workspace(size);
  o.status = ex ? aclnnChunkGatedDeltaRuleGradEx(size ? workspace.data() : nullptr, size, executor, nullptr)
                : aclnnChunkGatedDeltaRuleGrad(size ? workspace.data() : nullptr, size, executor, nullptr);
  if (o.status != 0) o.message = aclGetRecentErrMsg();
  return o;
}

TEST(GdrBackwardAclnn, TwoPhaseMatchesCppApi) {
  PrefillConfig c = config({130, 0, 7}, 2, 4, 24, 16);
  c.act = DType::kBF16;
  GradProblem p(c);
  const AclnnOutcome outcome = call_aclnn(grad_args(&p));
  ASSERT_EQ(outcome.status, 0) << outcome.message;
  std::printf("  [info] aclnnChunkGatedDeltaRuleGrad workspace for %s: %llu bytes\n", c.describe().c_str(),
              static_cast<unsigned long long>(outcome.workspace_size));
  p.expect_matches(p.reference(), "aclnn");
  const std::vector<std::vector<uint8_t>> aclnn = p.output_bytes();
  p.poison_outputs();
  ASSERT_TRUE(p.run().ok());
  EXPECT_TRUE(p.output_bytes() == aclnn) << "aclnn and C++ API gradients differ";

  const AclnnOutcome short_by_one = call_aclnn(grad_args(&p), 1);
  EXPECT_EQ(short_by_one.status, 161002);
  EXPECT_EQ(short_by_one.message.rfind("aclnnChunkGatedDeltaRuleGrad: ", 0), 0u) << short_by_one.message;
  EXPECT_TRUE(names_parameter(short_by_one.message, "workspaceSize")) << short_by_one.message;

  // The Ex function with the forward's snapshots: the C++ API's bytes, and a smaller workspace (one chunk's
  // states per thread instead of every chunk's).
  p.record_forward();
  const AclnnOutcome ex = call_aclnn(grad_args(&p));
  ASSERT_EQ(ex.status, 0) << ex.message;
  EXPECT_LT(ex.workspace_size, outcome.workspace_size);
  const std::vector<std::vector<uint8_t>> aclnn_ex = p.output_bytes();
  p.poison_outputs();
  ASSERT_TRUE(p.run().ok());
  EXPECT_TRUE(p.output_bytes() == aclnn_ex) << "aclnn Ex and C++ API gradients differ";
  const AclnnOutcome ex_short = call_aclnn(grad_args(&p), 1);
  EXPECT_EQ(ex_short.status, 161002);
  EXPECT_EQ(ex_short.message.rfind("aclnnChunkGatedDeltaRuleGradEx: ", 0), 0u) << ex_short.message;
}

// ---- validation ----------------------------------------------------------------------------------------------
struct GradRule {
  const char* what;
  std::function<void(GradArgs*, Scratch*)> mutate;
  StatusCode code;
  const char* param;  // the message must name it
};

TEST(GdrBackwardValidation, OneCodeAndMessagePerRule) {
  const StatusCode kNull = StatusCode::kNullptr, kInvalid = StatusCode::kParamInvalid,
                   kTiling = StatusCode::kTilingError;
  PrefillConfig c = config({3, 2}, 2, 4, 4, 6);  // T = 5, B = 2
  c.act = DType::kBF16;
  const std::vector<GradRule> rules = {
      {"null gradOut", [](GradArgs* a, Scratch*) { a->d_out.data = nullptr; }, kNull, "gradOut"},
      {"null gradQuery", [](GradArgs* a, Scratch*) { a->dq.data = nullptr; }, kNull, "gradQuery"},
      {"null gradInitialState", [](GradArgs* a, Scratch*) { a->ds0.data = nullptr; }, kNull, "gradInitialState"},
      {"null query", [](GradArgs* a, Scratch*) { a->query.data = nullptr; }, kNull, "query"},
      {"gradKey dtype", [](GradArgs* a, Scratch* s) { a->dk = s->retype(a->dk, DType::kF32); }, kInvalid, "gradKey"},
      {"gradOut dtype", [](GradArgs* a, Scratch* s) { a->d_out = s->retype(a->d_out, DType::kF16); }, kInvalid,
       "gradOut"},
      {"gradFinalState dtype", [](GradArgs* a, Scratch* s) { a->d_final = s->retype(a->d_final, DType::kBF16); },
       kInvalid, "gradFinalStateOptional"},
      {"gradInitialState dtype", [](GradArgs* a, Scratch* s) { a->ds0 = s->retype(a->ds0, DType::kBF16); },
       kInvalid, "gradInitialState"},
      {"gradG dtype", [](GradArgs* a, Scratch* s) { a->dg = s->retype(a->dg, DType::kBF16); }, kInvalid,
       "gradGOptional"},
      {"gradG without g", [](GradArgs* a, Scratch*) { a->has_g = false; }, kInvalid, "gradGOptional"},
      {"gradQuery shape", [](GradArgs* a, Scratch* s) { a->dq = s->reshape(a->dq, {5, 2, 3}); }, kTiling,
       "gradQuery"},
      {"gradValue shape", [](GradArgs* a, Scratch* s) { a->dv = s->reshape(a->dv, {5, 4, 5}); }, kTiling,
       "gradValue"},
      {"gradBeta shape", [](GradArgs* a, Scratch* s) { a->dbeta = s->reshape(a->dbeta, {5, 2}); }, kTiling,
       "gradBeta"},
      {"gradOut shape", [](GradArgs* a, Scratch* s) { a->d_out = s->reshape(a->d_out, {4, 4, 6}); }, kTiling,
       "gradOut"},
      {"gradG shape", [](GradArgs* a, Scratch* s) { a->dg = s->reshape(a->dg, {5, 3}); }, kTiling, "gradGOptional"},
      {"gradFinalState shape", [](GradArgs* a, Scratch* s) { a->d_final = s->reshape(a->d_final, {1, 4, 6, 4}); },
       kTiling, "gradFinalStateOptional"},
      {"gradInitialState shape", [](GradArgs* a, Scratch* s) { a->ds0 = s->reshape(a->ds0, {2, 4, 4, 6}); },
       kTiling, "gradInitialState"},
      {"Dk over 256",
       [](GradArgs* a, Scratch* s) {
         for (TensorView* v : {&a->query, &a->key, &a->dq, &a->dk}) *v = s->reshape(*v, {5, 2, 257});
       },
       kTiling, "query"},
      {"lengths sum", [](GradArgs* a, Scratch* s) {
         a->lengths = s->make(DType::kI32, {2});
         static_cast<int32_t*>(a->lengths.data)[0] = 3;
         static_cast<int32_t*>(a->lengths.data)[1] = 1;
       },
       kInvalid, "actualSeqLengths"},
      {"gradBeta broadcast", [](GradArgs* a, Scratch*) { a->dbeta.strides[0] = 0; }, kInvalid, "gradBeta"},
      {"gradValue is value", [](GradArgs* a, Scratch*) { a->dv = a->value; }, kInvalid, "gradValue"},
      {"gradKey overlaps gradQuery", [](GradArgs* a, Scratch*) { a->dk = a->dq; }, kInvalid, "gradKey"},
      {"gradInitialState is initialState", [](GradArgs* a, Scratch*) { a->ds0 = a->initial_state; }, kInvalid,
       "gradInitialState"},
      // forwardCheckpointsOptional (T = 5 < 64: R may be anything >= 0 rows needed; R = 1 given)
      {"checkpoints dtype", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kBF16, {1, 4, 6, 4});
         a->has_checkpoints = true;
       },
       kInvalid, "forwardCheckpointsOptional"},
      {"checkpoints rank", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kF32, {4, 6, 4});
         a->has_checkpoints = true;
       },
       kTiling, "forwardCheckpointsOptional"},
      {"checkpoints Dk and Dv swapped", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kF32, {1, 4, 4, 6});
         a->has_checkpoints = true;
       },
       kTiling, "forwardCheckpointsOptional"},
      {"checkpoints overlap gradValue", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kF32, {1, 4, 6, 4});
         a->checkpoints.data = a->dv.data;
         a->has_checkpoints = true;
       },
       kInvalid, "forwardCheckpointsOptional"},
      {"corrected values without checkpoints", [](GradArgs* a, Scratch* s) {
         a->corrected = s->make(DType::kF32, {5, 4, 6});
         a->has_corrected = true;
       },
       kInvalid, "forwardCorrectedValuesOptional"},
      {"corrected values dtype", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kF32, {1, 4, 6, 4});
         a->corrected = s->make(DType::kBF16, {5, 4, 6});
         a->has_checkpoints = a->has_corrected = true;
       },
       kInvalid, "forwardCorrectedValuesOptional"},
      {"corrected values shape", [](GradArgs* a, Scratch* s) {
         a->checkpoints = s->make(DType::kF32, {1, 4, 6, 4});
         a->corrected = s->make(DType::kF32, {5, 4, 4});
         a->has_checkpoints = a->has_corrected = true;
       },
       kTiling, "forwardCorrectedValuesOptional"},
  };
  for (const GradRule& rule : rules) {
    SCOPED_TRACE(rule.what);
    GradProblem p(c);
    GradArgs a = grad_args(&p);
    Scratch scratch;
    rule.mutate(&a, &scratch);
    const Status st = call_cpp(a);
    EXPECT_EQ(static_cast<int>(st.code()), static_cast<int>(rule.code)) << st.message();
    EXPECT_EQ(st.message().rfind("txops::chunk_gated_delta_rule_grad: ", 0), 0u) << st.message();
    EXPECT_TRUE(names_parameter(st.message(), rule.param)) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
    if (rule.code != kNull) EXPECT_NE(st.message().find("got"), std::string::npos) << st.message();
    const AclnnOutcome o = call_aclnn(a);
    EXPECT_EQ(static_cast<int>(o.status), static_cast<int>(rule.code)) << o.message;
    EXPECT_EQ(o.message.rfind(aclnn_name(a) + ": ", 0), 0u) << o.message;
    EXPECT_TRUE(names_parameter(o.message, rule.param)) << o.message;
  }
  // Optional tensors may be absent: no gradFinalState, no g (then no gradG).
  GradProblem p(c);
  GradArgs a = grad_args(&p);
  a.has_final = false;
  EXPECT_TRUE(call_cpp(a).ok());
  a.has_g = a.has_dg = false;
  EXPECT_TRUE(call_cpp(a).ok());
  EXPECT_EQ(call_aclnn(a).status, 0);
}

// forwardCheckpointsOptional must name as many rows as the sequences' full chunks (Σ L_b / 64), and have data.
TEST(GdrBackwardValidation, CheckpointRowsCoverEveryFullChunk) {
  PrefillConfig c = config({130, 64, 63}, 1, 2, 8, 8);  // 2 + 1 + 0 rows
  GradProblem p(c);
  Scratch scratch;
  GradArgs a = grad_args(&p);
  a.has_checkpoints = true;
  a.checkpoints = scratch.make(DType::kF32, {2, 2, 8, 8});
  Status st = call_cpp(a);
  EXPECT_EQ(st.code(), StatusCode::kTilingError) << st.message();
  EXPECT_NE(st.message().find("forwardCheckpointsOptional dim 0 (R) must be >= 3"), std::string::npos)
      << st.message();
  EXPECT_EQ(call_aclnn(a).status, static_cast<int>(StatusCode::kTilingError));
  a.checkpoints = scratch.make(DType::kF32, {3, 2, 8, 8});
  EXPECT_TRUE(call_cpp(a).ok());
  // A view without data (aclnn's null tensor is "absent" instead).
  a.checkpoints.data = nullptr;
  st = call_cpp(a);
  EXPECT_EQ(st.code(), StatusCode::kNullptr) << st.message();
  EXPECT_TRUE(names_parameter(st.message(), "forwardCheckpointsOptional")) << st.message();
}

}  // namespace
}  // namespace gdrtest
