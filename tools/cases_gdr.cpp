// cases_gdr.cpp — the gated delta rule suites of docs/measurement.md as bench cases: qwen3-next-prefill
// (ChunkGatedDeltaRule, Nk=16, Nv=32, Dk=Dv=128: one sequence of T, B equal sequences, B ragged ones; and one
// sequence on one head, Nk=Nv=1, the chunk-parallel case) and
// qwen3-next-decode (RecurrentGatedDeltaRule, B sequences x 1 token on a state pool; variant key_major: the pool in
// (pool, Nv, Dk, Dv) memory order, as transformers and fla keep it, read through its transposed view), and
// qwen3-next-train (the training pair on the prefill shapes — one sequence, equal, ragged: the forward writing its
// fp32 snapshots every 64 tokens and its corrected values, and the backward, chunk_gated_delta_rule_grad, reading
// them; dims snapshots=0: neither). bf16 by
// default (q, k, v, beta, out and the states share the dtype; g is fp32); fp32 on request.
// FLOPs: 6*Dk*Dv per token per value head, whatever the algorithm (the backward: 12*Dk*Dv + 64*(4*Dv + 4*Dk)
// reading the forward's snapshots and V', 16*Dk*Dv + 64*(5*Dv + 4*Dk) recomputing them, its chunked algorithm's
// count, src/ops/gated_delta_rule/README.md "Backward"). Bytes: every input and output once;
// decode's state traffic counts each touched state read once and written once per token.
// The fp64 token loop is slow for prefill shapes (~26 GFLOP), so the reference covers the first key heads
// (and their value-head groups) within a fixed budget; heads are independent, so this checks the same code.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench_case.h"
#include "ops/gated_delta_rule/reference.h"
#include "ops/gated_delta_rule/reference_backward.h"

namespace txops {
namespace bench {
namespace {

constexpr double kReferenceFlopBudget = 2.5e9;       // fp64 token-loop FLOPs per case
constexpr double kReferenceStateElements = 24e6;     // doubles of reference state per case

// A view of the first `heads` entries of axis `axis` (same strides, so it reads the op's own memory).
TensorView narrow(const TensorView& v, int axis, int64_t heads) {
  TensorView r = v;
  r.shape[axis] = heads;
  return r;
}

// Key heads the reference covers: as many as the budgets allow, at least one.
int64_t reference_key_heads(int64_t Nk, double flops_all_heads, double state_elems_all_heads) {
  const double fraction =
      std::min(kReferenceFlopBudget / flops_all_heads, kReferenceStateElements / state_elems_all_heads);
  const int64_t kh = static_cast<int64_t>(fraction * Nk);
  return std::max<int64_t>(1, std::min(kh, Nk));
}

std::string heads_note(int64_t kh, int64_t Nk, int64_t Nv) {
  if (kh == Nk) return "";
  return "reference on value heads [0," + std::to_string(kh * (Nv / Nk)) + ") of " + std::to_string(Nv);
}

// Sequence lengths summing to T: one sequence, B equal ones, or B ragged ones (fixed weights).
std::vector<int32_t> sequence_lengths(int64_t T, int64_t B, const std::string& variant) {
  std::vector<int32_t> lens(static_cast<size_t>(B), 0);
  if (variant == "ragged") {
    static const int weights[] = {37, 1, 2, 24, 5, 25, 4, 2};  // mixes long, short and one-token sequences
    int64_t total_w = 0;
    for (int64_t b = 0; b < B; ++b) total_w += weights[b % 8];
    int64_t used = 0;
    for (int64_t b = 0; b < B; ++b) {
      lens[b] = static_cast<int32_t>(T * weights[b % 8] / total_w);
      used += lens[b];
    }
    lens[0] += static_cast<int32_t>(T - used);
  } else {
    for (int64_t b = 0; b < B; ++b) lens[b] = static_cast<int32_t>(T / B + (b < T % B ? 1 : 0));
  }
  return lens;
}

double tb(const HostTensor& t) { return static_cast<double>(t.bytes()); }

// Training (dims "snapshots" = 1): the forward writes its fp32 states after every 64 tokens and its corrected values
// V' (T, Nv, Dv) fp32, the backward reads them (forward_checkpoints, forward_corrected_values) instead of recomputing
// them. The states are stored key-major, (R, Nv, Dk, Dv) in memory, the layout both move as contiguous runs, and
// passed as their (R, Nv, Dv, Dk) view. R = T / 64 covers any lengths summing to T. Empty when not training.
struct TrainingRecord {
  static constexpr int64_t kEvery = 64;
  HostTensor states, corrected;
  TensorView states_view;

  void allocate(int64_t T, int64_t Nv, int64_t Dk, int64_t Dv) {
    states = HostTensor(DType::kF32, {std::max<int64_t>(T / kEvery, 1), Nv, Dk, Dv});
    corrected = HostTensor(DType::kF32, {T, Nv, Dv});
    states_view = states.view;
    std::swap(states_view.shape[2], states_view.shape[3]);
    std::swap(states_view.strides[2], states_view.strides[3]);
  }
  bool given() const { return states.bytes() > 0; }
  double bytes() const { return tb(states) + tb(corrected); }
  // The forward's options that write the record.
  GdrPrefillOptions forward_options() const {
    GdrPrefillOptions o;
    o.checkpoint_every = kEvery;
    o.checkpoints = &states_view;
    o.corrected_values = &corrected.view;
    return o;
  }
  // The backward's forward_checkpoints / forward_corrected_values (null when not training).
  const TensorView* checkpoints() const { return given() ? &states_view : nullptr; }
  const TensorView* corrected_values() const { return given() ? &corrected.view : nullptr; }
};

// The prefill. With dims "pool" > 0 (the serving variant) the B states live in a pool of that many rows, read and
// written in place by GdrPrefillOptions::state_indices (rows spread over the pool); the reference then runs on the
// gathered rows and the check gathers the written rows back. Bytes: the activations and the B states read and
// written either way.
class ChunkGdrCase : public BenchCase {
 public:
  ChunkGdrCase(const CaseSpec& spec, const Dims& d) {
    const int64_t T = d.get("T"), B = d.get("B"), Nk = d.get("Nk"), Nv = d.get("Nv"), Dk = d.get("Dk"),
                  Dv = d.get("Dv"), pool = d.get("pool");
    const DType dt = spec.dtype;
    q_ = HostTensor(dt, {T, Nk, Dk});
    k_ = HostTensor(dt, {T, Nk, Dk});
    v_ = HostTensor(dt, {T, Nv, Dv});
    beta_ = HostTensor(dt, {T, Nv});
    g_ = HostTensor(DType::kF32, {T, Nv});
    init_ = HostTensor(dt, {B, Nv, Dv, Dk});
    final_ = HostTensor(dt, {B, Nv, Dv, Dk});
    out_ = HostTensor(dt, {T, Nv, Dv});
    lens_ = int32_tensor(sequence_lengths(T, B, spec.variant));
    fill_unit_rows(&q_, 51);
    fill_unit_rows(&k_, 52);
    fill_uniform(&v_, 53, -1, 1);
    fill_uniform(&beta_, 54, 0.05f, 0.95f);
    fill_uniform(&g_, 55, -0.2f, -0.001f);
    fill_uniform(&init_, 56, -0.1f, 0.1f);
    if (pool > 0) {  // the pool holds init_'s rows at the slots; final_ receives them back for the check
      for (int64_t b = 0; b < B; ++b) slots_.push_back(static_cast<int32_t>((b * 97 + 5) % pool));  // distinct
      idx_ = int32_tensor(slots_);
      pool0_ = HostTensor(dt, {pool, Nv, Dv, Dk});
      fill_uniform(&pool0_, 57, -0.1f, 0.1f);
      row_bytes_ = static_cast<size_t>(Nv * Dv * Dk) * dtype_size(dt);
      for (size_t i = 0; i < slots_.size(); ++i)
        std::memcpy(row(pool0_, slots_[i]), row(init_, static_cast<int64_t>(i)), row_bytes_);
      pool_ = HostTensor(dt, {pool, Nv, Dv, Dk});
      pool_.buffer.copy_from(pool0_.buffer);
    }
    if (d.get("snapshots") != 0) record_.allocate(T, Nv, Dk, Dv);
    scale_ = 1.0f / std::sqrt(static_cast<float>(Dk));
    tokens = T;
    flops = 6.0 * Dk * Dv * T * Nv;
    bytes = tb(q_) + tb(k_) + tb(v_) + tb(beta_) + tb(g_) + tb(init_) + tb(final_) + tb(out_) + tb(lens_) + tb(idx_) +
            record_.bytes();
    kh_ = reference_key_heads(Nk, flops, static_cast<double>(B * Nv * Dv * Dk));
    check_note = heads_note(kh_, Nk, Nv);
    nvh_ = kh_ * (Nv / Nk);
  }
  void compute_reference() override {
    const TensorView g = narrow(g_.view, 1, nvh_);
    reference::chunk_gated_delta_rule(narrow(q_.view, 1, kh_), narrow(k_.view, 1, kh_), narrow(v_.view, 1, nvh_),
                                      narrow(beta_.view, 1, nvh_), narrow(init_.view, 1, nvh_), lens_.view, &g,
                                      scale_, &ref_out_, &ref_final_);
  }
  void reset() override {
    if (!slots_.empty()) pool_.buffer.copy_from(pool0_.buffer);
  }
  Status run() override {
    if (record_.given())
      return chunk_gated_delta_rule(q_.view, k_.view, v_.view, beta_.view, init_.view, lens_.view, &g_.view, scale_,
                                    out_.view, final_.view, record_.forward_options());
    if (slots_.empty())
      return chunk_gated_delta_rule(q_.view, k_.view, v_.view, beta_.view, init_.view, lens_.view, &g_.view, scale_,
                                    out_.view, final_.view);
    GdrPrefillOptions o;
    o.state_indices = &idx_.view;
    return chunk_gated_delta_rule(q_.view, k_.view, v_.view, beta_.view, pool_.view, lens_.view, &g_.view, scale_,
                                  out_.view, pool_.view, o);
  }
  std::vector<TensorView> outputs() const override {
    if (record_.given()) return {out_.view, final_.view, record_.states.view, record_.corrected.view};
    if (slots_.empty()) return {out_.view, final_.view};
    return {out_.view, pool_.view};
  }
  CheckResult check() override {
    for (size_t i = 0; i < slots_.size(); ++i)
      std::memcpy(row(final_, static_cast<int64_t>(i)), row(pool_, slots_[i]), row_bytes_);
    CheckResult r;
    r.passed = true;
    accumulate_check("out", narrow(out_.view, 1, nvh_), ref_out_, "gdr_out", &r);
    accumulate_check("final_state", narrow(final_.view, 1, nvh_), ref_final_, "gdr_state", &r);
    return r;
  }

 private:
  char* row(const HostTensor& t, int64_t i) const { return static_cast<char*>(t.view.data) + i * row_bytes_; }
  HostTensor q_, k_, v_, beta_, g_, init_, final_, out_, lens_, idx_, pool_, pool0_;
  TrainingRecord record_;       // training: what the forward writes for the backward
  std::vector<int32_t> slots_;  // serving: the pool row of each sequence
  size_t row_bytes_ = 0;
  float scale_;
  int64_t kh_, nvh_;
  std::vector<double> ref_out_, ref_final_;
};

class RecurrentGdrCase : public BenchCase {
 public:
  RecurrentGdrCase(const CaseSpec& spec, const Dims& d) {
    const int64_t B = d.get("B"), Nk = d.get("Nk"), Nv = d.get("Nv"), Dk = d.get("Dk"), Dv = d.get("Dv"),
                  pool = d.get("pool");
    const int64_t T = B;  // one token per sequence
    const DType dt = spec.dtype;
    q_ = HostTensor(dt, {T, Nk, Dk});
    k_ = HostTensor(dt, {T, Nk, Dk});
    v_ = HostTensor(dt, {T, Nv, Dv});
    beta_ = HostTensor(dt, {T, Nv});
    g_ = HostTensor(DType::kF32, {T, Nv});
    // key_major: the pool in (pool, Nv, Dk, Dv) memory order (transformers' and fla's state), read through its
    // (pool, Nv, Dv, Dk) transposed view
    const bool key_major = spec.variant == "key_major";
    state_ = key_major ? HostTensor(dt, {pool, Nv, Dk, Dv}) : HostTensor(dt, {pool, Nv, Dv, Dk});
    state0_ = key_major ? HostTensor(dt, {pool, Nv, Dk, Dv}) : HostTensor(dt, {pool, Nv, Dv, Dk});
    if (key_major) {
      for (TensorView* view : {&state_.view, &state0_.view}) {
        std::swap(view->shape[2], view->shape[3]);
        std::swap(view->strides[2], view->strides[3]);
      }
    }
    out_ = HostTensor(dt, {T, Nv, Dv});
    lens_ = int32_tensor(std::vector<int32_t>(static_cast<size_t>(B), 1));
    std::vector<int32_t> slots(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) slots[t] = static_cast<int32_t>((t * 97 + 5) % pool);  // distinct when pool >= T
    slots_ = int32_tensor(slots);
    fill_unit_rows(&q_, 61);
    fill_unit_rows(&k_, 62);
    fill_uniform(&v_, 63, -1, 1);
    fill_uniform(&beta_, 64, 0.05f, 0.95f);
    fill_uniform(&g_, 65, -0.2f, -0.001f);
    fill_uniform(&state0_, 66, -0.1f, 0.1f);
    reset();
    scale_ = 1.0f / std::sqrt(static_cast<float>(Dk));
    tokens = T;
    flops = 6.0 * Dk * Dv * T * Nv;
    state_bytes = 2.0 * T * Nv * Dv * Dk * dtype_size(dt);
    bytes = state_bytes + tb(q_) + tb(k_) + tb(v_) + tb(beta_) + tb(g_) + tb(out_) + tb(lens_) + tb(slots_);
    kh_ = reference_key_heads(Nk, flops, static_cast<double>(pool * Nv * Dv * Dk));
    check_note = heads_note(kh_, Nk, Nv);
    nvh_ = kh_ * (Nv / Nk);
  }
  void compute_reference() override {
    const TensorView g = narrow(g_.view, 1, nvh_);
    reference::recurrent_gated_delta_rule(narrow(q_.view, 1, kh_), narrow(k_.view, 1, kh_),
                                          narrow(v_.view, 1, nvh_), narrow(beta_.view, 1, nvh_),
                                          narrow(state0_.view, 1, nvh_), lens_.view, slots_.view, &g, nullptr,
                                          nullptr, scale_, &ref_out_, &ref_state_);
  }
  void reset() override { state_.buffer.copy_from(state0_.buffer); }
  Status run() override {
    return recurrent_gated_delta_rule(q_.view, k_.view, v_.view, beta_.view, state_.view, lens_.view, slots_.view,
                                      &g_.view, nullptr, nullptr, scale_, out_.view);
  }
  std::vector<TensorView> outputs() const override { return {out_.view, state_.view}; }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("out", narrow(out_.view, 1, nvh_), ref_out_, "gdr_out", &r);
    accumulate_check("state", narrow(state_.view, 1, nvh_), ref_state_, "gdr_state", &r);
    return r;
  }

 private:
  HostTensor q_, k_, v_, beta_, g_, state_, state0_, out_, lens_, slots_;
  float scale_;
  int64_t kh_, nvh_;
  std::vector<double> ref_out_, ref_state_;
};

// The prefill's backward on the prefill's shapes: gradOut and gradFinalState random, every gradient written (dg
// included). The reference (fp64, every state of a sequence kept: T * Dv * Dk doubles per value head at a time)
// covers the first key head and its value heads, whatever the budgets say: the backward's heads are independent
// as the forward's, its tokens are not.
class ChunkGdrGradCase : public BenchCase {
 public:
  ChunkGdrGradCase(const CaseSpec& spec, const Dims& d) {
    const int64_t T = d.get("T"), B = d.get("B"), Nk = d.get("Nk"), Nv = d.get("Nv"), Dk = d.get("Dk"),
                  Dv = d.get("Dv");
    const DType dt = spec.dtype;
    for (HostTensor* t : {&q_, &k_, &dq_, &dk_}) *t = HostTensor(dt, {T, Nk, Dk});
    for (HostTensor* t : {&v_, &dout_, &dv_}) *t = HostTensor(dt, {T, Nv, Dv});
    beta_ = HostTensor(dt, {T, Nv});
    dbeta_ = HostTensor(dt, {T, Nv});
    g_ = HostTensor(DType::kF32, {T, Nv});
    dg_ = HostTensor(DType::kF32, {T, Nv});
    for (HostTensor* t : {&init_, &dfinal_, &dinit_}) *t = HostTensor(dt, {B, Nv, Dv, Dk});
    lens_ = int32_tensor(sequence_lengths(T, B, spec.variant));
    fill_unit_rows(&q_, 71);
    fill_unit_rows(&k_, 72);
    fill_uniform(&v_, 73, -1, 1);
    fill_uniform(&beta_, 74, 0.05f, 0.95f);
    fill_uniform(&g_, 75, -0.2f, -0.001f);
    fill_uniform(&init_, 76, -0.1f, 0.1f);
    fill_uniform(&dout_, 77, -1, 1);
    fill_uniform(&dfinal_, 78, -0.1f, 0.1f);
    scale_ = 1.0f / std::sqrt(static_cast<float>(Dk));
    if (d.get("snapshots") != 0) {  // the training forward's record, written here and by each paired call
      record_.allocate(T, Nv, Dk, Dv);
      out_ = HostTensor(dt, {T, Nv, Dv});
      final_ = HostTensor(dt, {B, Nv, Dv, Dk});
      setup_status_ = run_paired_baseline();
      paired_baseline = "the training forward (chunk_gated_delta_rule writing its snapshots and V')";
    }
    tokens = T;
    // (with the forward's states and V' there is no checkpoint pass: two state-sized GEMMs and the forward
    // substitution fewer)
    flops = (record_.given() ? 12.0 * Dk * Dv + 64.0 * (4.0 * Dv + 4.0 * Dk)
                                      : 16.0 * Dk * Dv + 64.0 * (5.0 * Dv + 4.0 * Dk)) * T * Nv;
    bytes = record_.bytes();
    for (const HostTensor* t : {&q_, &k_, &v_, &beta_, &g_, &init_, &dout_, &dfinal_, &dq_, &dk_, &dv_, &dbeta_,
                                &dg_, &dinit_, &lens_})
      bytes += tb(*t);
    nvh_ = Nv / Nk;
    if (Nk > 1) check_note = heads_note(1, Nk, Nv);
  }
  void compute_reference() override {
    const TensorView g = narrow(g_.view, 1, nvh_), dfinal = narrow(dfinal_.view, 1, nvh_);
    reference::chunk_gated_delta_rule_grad(narrow(q_.view, 1, 1), narrow(k_.view, 1, 1), narrow(v_.view, 1, nvh_),
                                           narrow(beta_.view, 1, nvh_), narrow(init_.view, 1, nvh_), lens_.view, &g,
                                           scale_, narrow(dout_.view, 1, nvh_), &dfinal, &ref_);
  }
  // The forward that writes the record the backward reads (the same bits every call): the training suite's ratio
  // of the backward to it is timed in the same minutes (BenchCase::run_paired_baseline).
  Status run_paired_baseline() override {
    return chunk_gated_delta_rule(q_.view, k_.view, v_.view, beta_.view, init_.view, lens_.view, &g_.view, scale_,
                                  out_.view, final_.view, record_.forward_options());
  }
  Status run() override {
    if (!setup_status_.ok()) return setup_status_;
    return chunk_gated_delta_rule_grad(q_.view, k_.view, v_.view, beta_.view, init_.view, lens_.view, &g_.view,
                                       scale_, dout_.view, &dfinal_.view, dq_.view, dk_.view, dv_.view, dbeta_.view,
                                       &dg_.view, dinit_.view, record_.checkpoints(), record_.corrected_values());
  }
  std::vector<TensorView> outputs() const override {
    return {dq_.view, dk_.view, dv_.view, dbeta_.view, dg_.view, dinit_.view};
  }
  CheckResult check() override {
    CheckResult r;
    r.passed = true;
    accumulate_check("dq", narrow(dq_.view, 1, 1), ref_.query, "gdr_backward", &r);
    accumulate_check("dk", narrow(dk_.view, 1, 1), ref_.key, "gdr_backward", &r);
    accumulate_check("dv", narrow(dv_.view, 1, nvh_), ref_.value, "gdr_backward", &r);
    accumulate_check("dbeta", narrow(dbeta_.view, 1, nvh_), ref_.beta, "gdr_backward", &r);
    accumulate_check("dg", narrow(dg_.view, 1, nvh_), ref_.g, "gdr_backward", &r);
    accumulate_check("dInitialState", narrow(dinit_.view, 1, nvh_), ref_.initial_state, "gdr_backward", &r);
    return r;
  }

 private:
  HostTensor q_, k_, v_, beta_, g_, init_, dout_, dfinal_, dq_, dk_, dv_, dbeta_, dg_, dinit_, lens_;
  HostTensor out_, final_;  // training: the paired forward's outputs
  TrainingRecord record_;
  Status setup_status_;
  float scale_;
  int64_t nvh_;
  reference::GdrGradients ref_;
};

template <class Case>
std::unique_ptr<BenchCase> make_case(const CaseSpec& spec, const Dims& dims) {
  return std::unique_ptr<BenchCase>(new Case(spec, dims));
}

}  // namespace

std::vector<CaseSpec> gdr_suites(bool quick) {
  std::vector<CaseSpec> specs;
  for (DType dt : {DType::kBF16, DType::kF32}) {
    // one_head: one sequence on one head (a tensor-parallel shard at its smallest), which only the chunk-parallel
    // mode of the chunked kernel spreads over threads.
    struct Prefill { const char* variant; int64_t T, B, Nk, Nv; };
    const Prefill prefill[] = {{"one_sequence", 8192, 1, 16, 32}, {"equal", 8192, 8, 16, 32},
                               {"ragged", 8192, 8, 16, 32}, {"one_head", 8192, 1, 1, 1}};
    for (const Prefill& p : prefill) {
      CaseSpec s;
      s.suite = "qwen3-next-prefill";
      s.op = "chunk_gated_delta_rule";
      s.kind = CaseKind::kGdrPrefill;
      s.variant = p.variant;
      s.dtype = dt;
      s.optional_dtype = dt != DType::kBF16;
      s.dims = quick ? Dims{{"T", 160}, {"B", p.B}, {"Nk", std::min<int64_t>(p.Nk, 2)}, {"Nv", std::min<int64_t>(p.Nv, 4)},
                            {"Dk", 32}, {"Dv", 32}}
                     : Dims{{"T", p.T}, {"B", p.B}, {"Nk", p.Nk}, {"Nv", p.Nv}, {"Dk", 128}, {"Dv", 128}};
      s.make = make_case<ChunkGdrCase>;
      specs.push_back(s);
      if (std::string(p.variant) != "one_head") {  // the backward's items are (sequence, key head) pairs
        // The training pair: the forward writing its snapshots, then the backward reading them (snapshots=0: the
        // inference forward and the backward that recomputes the states).
        s.suite = "qwen3-next-train";
        s.dims.set("snapshots", 1);
        specs.push_back(s);
        s.op = "chunk_gated_delta_rule_grad";
        s.make = make_case<ChunkGdrGradCase>;
        specs.push_back(s);
      }
    }
    CaseSpec pool_spec;  // serving: 16 prefills into a pool of 256 states
    pool_spec.suite = "qwen3-next-serving";
    pool_spec.op = "chunk_gated_delta_rule";
    pool_spec.kind = CaseKind::kGdrPrefill;
    pool_spec.variant = "pool";
    pool_spec.dtype = dt;
    pool_spec.optional_dtype = dt != DType::kBF16;
    pool_spec.dims = quick ? Dims{{"T", 160}, {"B", 4}, {"Nk", 2}, {"Nv", 4}, {"Dk", 32}, {"Dv", 32}, {"pool", 16}}
                           : Dims{{"T", 8192}, {"B", 16}, {"Nk", 16}, {"Nv", 32}, {"Dk", 128}, {"Dv", 128},
                                  {"pool", 256}};
    pool_spec.make = make_case<ChunkGdrCase>;
    specs.push_back(pool_spec);
    CaseSpec s;
    s.suite = "qwen3-next-decode";
    s.op = "recurrent_gated_delta_rule";
    s.kind = CaseKind::kGdrDecode;
    s.dtype = dt;
    s.optional_dtype = dt != DType::kBF16;
    s.dims = quick ? Dims{{"B", 4}, {"Nk", 2}, {"Nv", 4}, {"Dk", 32}, {"Dv", 32}, {"pool", 16}}
                   : Dims{{"B", 64}, {"Nk", 16}, {"Nv", 32}, {"Dk", 128}, {"Dv", 128}, {"pool", 256}};
    s.make = make_case<RecurrentGdrCase>;
    specs.push_back(s);
    s.variant = "key_major";
    specs.push_back(s);
  }
  return specs;
}

}  // namespace bench
}  // namespace txops
