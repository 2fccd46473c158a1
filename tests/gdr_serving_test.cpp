// gdr_serving_test.cpp — the prefill's serving options (GdrPrefillOptions, aclnnChunkGatedDeltaRuleEx): states
// read from and written to a pool by index (in place or pool to pool), sequences that start from zero, and
// prefix-cache snapshots. The oracle for the pool is the plain call on the gathered states (bit for bit; the plain
// call is judged against the fp64 oracle by gdr_prefill_test / gdr_chunked_test); for the snapshots, the plain
// call on each prefix (bit for bit) and the fp64 oracle (tolerance), and a restart from every snapshot equals the
// rest of the whole run bit for bit. Both kernels, items and chunk mode, 1-4 threads, every ISA the CPU has; every
// validation rule with its code and parameter name.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_chunk_gated_delta_rule_ex.h"
#include "ops/gated_delta_rule/reference.h"
#include "support/gdr_calls.h"
#include "support/gdr_problem.h"

namespace gdrtest {
namespace {

using txops::GdrKernel;
using txops::GdrPrefillOptions;
using txops::Status;
using txops::StatusCode;

TXOPS_ISA_TEST_SUITE(GdrServingOnIsa);

// Rows [start, start + count) of dim 0 of `v`.
TensorView rows(const TensorView& v, int64_t start, int64_t count) {
  TensorView r = v;
  r.data = static_cast<uint8_t*>(v.data) + start * v.strides[0] * static_cast<int64_t>(txops::dtype_size(v.dtype));
  r.shape[0] = count;
  return r;
}

bool same_bytes(const TensorView& a, const TensorView& b) {  // contiguous views of one shape and dtype
  return a.numel() == b.numel() && a.dtype == b.dtype &&
         std::memcmp(a.data, b.data, static_cast<size_t>(a.numel()) * txops::dtype_size(a.dtype)) == 0;
}

Status call(PrefillProblem& p, const TensorView& initial, const TensorView& lengths, const TensorView& final_state,
            const GdrPrefillOptions& o, int64_t t0 = 0, int64_t tokens = -1, TensorView* out = nullptr) {
  if (tokens < 0) tokens = p.tokens();
  const TensorView gv = rows(p.g.view(), t0, tokens);
  return txops::chunk_gated_delta_rule(rows(p.q.view(), t0, tokens), rows(p.k.view(), t0, tokens),
                                       rows(p.v.view(), t0, tokens), rows(p.beta.view(), t0, tokens), initial,
                                       lengths, p.config.with_g ? &gv : nullptr, p.scale(),
                                       out ? *out : rows(p.out.view(), t0, tokens), final_state, o);
}

HostTensor ints(const std::vector<int32_t>& values) {
  HostTensor t(DType::kI32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.ints()[i] = values[i];
  return t;
}

// The pool case: P rows of random states; sequence b uses row idx[b]; has[b] == 0 starts from zero.
struct PoolCase {
  PrefillConfig config;
  std::vector<int32_t> idx, has;
  int64_t slots = 9;
};

// Pool call (in place, or pool to a second pool) against the plain call on the gathered states: out and the
// written rows bit for bit, every other row untouched.
void check_pool(const PoolCase& pc, bool in_place) {
  SCOPED_TRACE(pc.config.describe() + (in_place ? " in place" : " pool to pool"));
  PrefillProblem p(pc.config);
  const int64_t B = static_cast<int64_t>(pc.idx.size()), nv = pc.config.nv, dv = pc.config.dv, dk = pc.config.dk;
  const int64_t head = nv * dv * dk;
  HostTensor pool(pc.config.state, {pc.slots, nv, dv, dk}), before;
  InputGenerator gen(pc.config.seed + 100);
  gen.normal(&pool, 0.5);
  before = pool;
  HostTensor gathered(pc.config.state, {B, nv, dv, dk}), expected_final(pc.config.state, {B, nv, dv, dk});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t e = 0; e < head; ++e) gathered.set(b * head + e, pc.has[b] ? pool.get(pc.idx[b] * head + e) : 0.0);
  ASSERT_TRUE(call(p, gathered.view(), p.lengths.view(), expected_final.view(), GdrPrefillOptions()).ok());
  const HostTensor expected_out = p.out;
  std::memset(p.out.bytes.data(), 0xCD, p.out.bytes.size());

  HostTensor idx = ints(pc.idx), has = ints(pc.has), second(pc.config.state, {pc.slots, nv, dv, dk});
  std::memset(second.bytes.data(), 0x5A, second.bytes.size());
  const HostTensor second_before = second;
  GdrPrefillOptions o;
  const TensorView idx_view = idx.view(), has_view = has.view();
  o.state_indices = &idx_view;
  o.has_initial_state = &has_view;
  const Status st = call(p, pool.view(), p.lengths.view(), in_place ? pool.view() : second.view(), o);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(same_bytes(p.out.view(), expected_out.view()));
  const HostTensor& written = in_place ? pool : second;
  const HostTensor& untouched = in_place ? before : second_before;
  std::vector<bool> used(static_cast<size_t>(pc.slots), false);
  for (int64_t b = 0; b < B; ++b) {
    used[pc.idx[b]] = true;
    EXPECT_TRUE(same_bytes(rows(written.view(), pc.idx[b], 1), rows(expected_final.view(), b, 1))) << "sequence " << b;
  }
  for (int64_t s = 0; s < pc.slots; ++s)
    if (!used[s]) EXPECT_TRUE(same_bytes(rows(written.view(), s, 1), rows(untouched.view(), s, 1))) << "slot " << s;
  if (!in_place) EXPECT_TRUE(same_bytes(pool.view(), before.view())) << "the source pool was written";
}

PoolCase ragged_pool_case() {
  PoolCase pc;
  pc.config.lengths = {70, 0, 5, 130};
  pc.config.nk = 2, pc.config.nv = 4, pc.config.dk = 32, pc.config.dv = 24;
  pc.idx = {7, 2, 0, 5};
  pc.has = {1, 1, 0, 1};
  return pc;
}

TEST_P(GdrServingOnIsa, PoolEqualsGatherPlainScatter) {
  for (const char* kernel : prefill_kernels()) {
    PrefillKernelScope scope(kernel);
    for (DType state : {DType::kF32, DType::kBF16}) {
      PoolCase pc = ragged_pool_case();
      pc.config.state = state;
      check_pool(pc, true);
      check_pool(pc, false);
    }
    PoolCase one;  // GQA 1:4, no g, fp16, one sequence from zero
    one.config.lengths = {200};
    one.config.nk = 1, one.config.nv = 4, one.config.dk = 16, one.config.dv = 40;
    one.config.with_g = false, one.config.act = DType::kF16;
    one.idx = {3}, one.has = {0}, one.slots = 4;
    check_pool(one, true);
  }
}

TEST_P(GdrServingOnIsa, PoolBitIdenticalAcrossThreadsAndModes) {
  PoolCase pc = ragged_pool_case();
  PrefillProblem p(pc.config);
  HostTensor pool(pc.config.state, {pc.slots, pc.config.nv, pc.config.dv, pc.config.dk});
  InputGenerator(7).normal(&pool, 0.5);
  const HostTensor start = pool;
  HostTensor idx = ints(pc.idx), has = ints(pc.has);
  const TensorView idx_view = idx.view(), has_view = has.view();
  GdrPrefillOptions o;
  o.state_indices = &idx_view, o.has_initial_state = &has_view, o.kernel = GdrKernel::kChunked;
  HostTensor first_out, first_pool;
  for (const char* split : {"items", "chunks", "columns", "pipeline"}) {
    ScopedEnv mode("TXOPS_GDR_SPLIT", split);
    for (int threads = 1; threads <= 4; ++threads) {
      ScopedThreads scope(threads);
      pool = start;
      ASSERT_TRUE(call(p, pool.view(), p.lengths.view(), pool.view(), o).ok());
      if (first_out.bytes.empty()) {
        first_out = p.out, first_pool = pool;
        continue;
      }
      EXPECT_TRUE(same_bytes(p.out.view(), first_out.view())) << split << " threads=" << threads;
      EXPECT_TRUE(same_bytes(pool.view(), first_pool.view())) << split << " threads=" << threads;
    }
  }
}

// ---- snapshots ----

struct SnapshotRun {
  HostTensor checkpoints, final_state;
};

// The whole run with snapshots every `every` tokens into `dtype` rows starting at row `first_row`.
SnapshotRun run_with_snapshots(PrefillProblem& p, int64_t every, DType dtype, int64_t first_row) {
  const PrefillConfig& c = p.config;
  int64_t count = first_row;
  std::vector<int64_t> starts = {first_row};
  for (int32_t len : c.lengths) starts.push_back(count += len / every);
  SnapshotRun r{HostTensor(dtype, {count + 1, c.nv, c.dv, c.dk}),
                HostTensor(c.state, {static_cast<int64_t>(c.lengths.size()), c.nv, c.dv, c.dk})};
  std::memset(r.checkpoints.bytes.data(), 0x7F, r.checkpoints.bytes.size());
  HostTensor starts_t(DType::kI64, {static_cast<int64_t>(starts.size())});
  std::memcpy(starts_t.bytes.data(), starts.data(), starts.size() * sizeof(int64_t));
  const TensorView cp = r.checkpoints.view(), st = starts_t.view();
  GdrPrefillOptions o;
  o.checkpoint_every = every, o.checkpoints = &cp;
  if (first_row != 0) o.checkpoint_starts = &st;  // else the default running sum from 0
  const Status s = call(p, p.initial_state.view(), p.lengths.view(), r.final_state.view(), o);
  EXPECT_TRUE(s.ok()) << s.message();
  return r;
}

// Every snapshot equals the plain chunked call on its prefix (fp32 final state) and the fp64 oracle; a restart from
// it (fp32 states, kChunked) equals the rest of the whole run; rows before first_row and the last row untouched.
void check_snapshots(const PrefillConfig& config, int64_t every, int64_t first_row) {
  SCOPED_TRACE(config.describe() + " every=" + std::to_string(every));
  PrefillProblem p(config);
  const SnapshotRun whole = run_with_snapshots(p, every, DType::kF32, first_row);
  const HostTensor whole_out = p.out;
  const SnapshotRun bf16 = run_with_snapshots(p, every, DType::kBF16, first_row);
  EXPECT_TRUE(same_bytes(p.out.view(), whole_out.view()));
  const int64_t nv = config.nv, dv = config.dv, dk = config.dk;
  int64_t row = first_row, t_begin = 0;
  for (size_t b = 0; b < config.lengths.size(); ++b) {
    const int64_t len = config.lengths[b];
    for (int64_t j = 1; j * every <= len; ++j, ++row) {
      SCOPED_TRACE("sequence " + std::to_string(b) + " snapshot " + std::to_string(j));
      const TensorView snap = rows(whole.checkpoints.view(), row, 1);
      // The plain call on the prefix, fp32 state.
      HostTensor lens = ints({static_cast<int32_t>(j * every)}), prefix_state(DType::kF32, {1, nv, dv, dk});
      HostTensor prefix_out(config.act, {j * every, nv, dv});
      TensorView prefix_out_view = prefix_out.view();
      GdrPrefillOptions chunked;
      chunked.kernel = GdrKernel::kChunked;
      HostTensor init32(DType::kF32, {1, nv, dv, dk});
      for (int64_t e = 0; e < init32.numel(); ++e) init32.set(e, p.initial_state.get(b * nv * dv * dk + e));
      ASSERT_TRUE(call(p, init32.view(), lens.view(), prefix_state.view(), chunked, t_begin, j * every,
                       &prefix_out_view).ok());
      EXPECT_TRUE(same_bytes(snap, prefix_state.view()));
      // bf16 snapshots are the fp32 ones rounded.
      for (int64_t e = 0; e < nv * dv * dk; e += 7) {
        HostTensor one(DType::kBF16, {1});
        one.set(0, whole.checkpoints.get(row * nv * dv * dk + e));
        ASSERT_EQ(bf16.checkpoints.get(row * nv * dv * dk + e), one.get(0));
      }
      // The fp64 oracle of the prefix.
      std::vector<double> out_ref, state_ref;
      const TensorView gv = rows(p.g.view(), t_begin, j * every);
      txops::reference::chunk_gated_delta_rule(
          rows(p.q.view(), t_begin, j * every), rows(p.k.view(), t_begin, j * every),
          rows(p.v.view(), t_begin, j * every), rows(p.beta.view(), t_begin, j * every), init32.view(), lens.view(),
          config.with_g ? &gv : nullptr, p.scale(), &out_ref, &state_ref);
      EXPECT_TRUE(matches_reference("gdr_state", snap, state_ref, "snapshot", nullptr));
      // Restart from the snapshot: the rest of the sequence.
      const int64_t rest = len - j * every;
      if (config.state != DType::kF32) continue;  // exact restarts need fp32 states (the pool's dtype)
      HostTensor rest_lens = ints({static_cast<int32_t>(rest)}), rest_state(DType::kF32, {1, nv, dv, dk});
      HostTensor rest_out(config.act, {std::max<int64_t>(rest, 1), nv, dv});
      if (rest == 0) {
        EXPECT_TRUE(same_bytes(snap, rows(whole.final_state.view(), b, 1)));
        continue;
      }
      TensorView rest_out_view = rest_out.view();
      ASSERT_TRUE(call(p, snap, rest_lens.view(), rest_state.view(), chunked, t_begin + j * every, rest,
                       &rest_out_view).ok());
      EXPECT_TRUE(same_bytes(rest_out_view, rows(whole_out.view(), t_begin + j * every, rest)));
      EXPECT_TRUE(same_bytes(rest_state.view(), rows(whole.final_state.view(), b, 1)));
    }
    t_begin += len;
  }
  // Rows the call does not name (those before first_row, and the spare last row) keep their 0x7F fill.
  const size_t row_bytes = static_cast<size_t>(nv * dv * dk) * 4;
  std::vector<int64_t> spare = {row};
  for (int64_t r = 0; r < first_row; ++r) spare.push_back(r);
  for (int64_t r : spare) {
    const uint8_t* bytes = whole.checkpoints.bytes.data() + r * row_bytes;
    for (size_t i = 0; i < row_bytes; ++i) ASSERT_EQ(bytes[i], 0x7F) << "row " << r;
  }
}

TEST_P(GdrServingOnIsa, SnapshotsEqualPrefixesAndRestartsAreExact) {
  PrefillConfig c;
  c.lengths = {200, 64, 30, 0, 129};
  c.nk = 2, c.nv = 4, c.dk = 32, c.dv = 24;
  check_snapshots(c, 64, 0);
  c.act = DType::kF32, c.seed = 3;
  check_snapshots(c, 128, 3);
  c.state = DType::kBF16, c.act = DType::kBF16, c.with_g = false, c.seed = 4;
  check_snapshots(c, 64, 1);
}

TEST_P(GdrServingOnIsa, SnapshotsBitIdenticalAcrossThreadsAndModes) {
  PrefillConfig c;
  c.lengths = {300, 5, 192};
  c.nk = 1, c.nv = 2, c.dk = 16, c.dv = 48;
  PrefillProblem p(c);
  HostTensor first;
  for (const char* split : {"items", "chunks", "columns", "pipeline"}) {
    ScopedEnv mode("TXOPS_GDR_SPLIT", split);
    for (int threads = 1; threads <= 4; ++threads) {
      ScopedThreads scope(threads);
      const SnapshotRun r = run_with_snapshots(p, 64, DType::kF32, 0);
      if (first.bytes.empty()) {
        first = r.checkpoints;
        continue;
      }
      EXPECT_TRUE(same_bytes(r.checkpoints.view(), first.view())) << split << " threads=" << threads;
    }
  }
}

// ---- validation ----

struct Refusal {
  const char* what;
  StatusCode code;
  const char* param;
};

TEST(GdrServingValidation, EveryRuleHasItsCodeAndNamesItsParameter) {
  PrefillConfig c;
  c.lengths = {130, 6};  // two snapshots at checkpointEvery = 64
  c.nk = 1, c.nv = 2, c.dk = 8, c.dv = 8;
  PrefillProblem p(c);
  HostTensor pool(DType::kF32, {4, 2, 8, 8}), pool3(DType::kF32, {4, 2, 8}), other_pool(DType::kF32, {5, 2, 8, 8});
  HostTensor idx = ints({1, 3}), idx_range = ints({1, 4}), idx_neg = ints({-1, 0}), idx_dup = ints({2, 2});
  HostTensor idx_i64(DType::kI64, {2}), idx_short = ints({1});
  HostTensor has_f32(DType::kF32, {2}), has_short = ints({1}), has = ints({1, 0});
  HostTensor cps(DType::kF32, {2, 2, 8, 8}), cps_f16(DType::kF16, {2, 2, 8, 8}), cps_small(DType::kF32, {1, 2, 8, 8});
  HostTensor cps_shape(DType::kF32, {2, 2, 8, 4});
  HostTensor starts(DType::kI64, {3}), starts_i32 = ints({0, 2, 2});
  reinterpret_cast<int64_t*>(starts.bytes.data())[1] = 1;  // should be 2 (130 / 64)
  reinterpret_cast<int64_t*>(starts.bytes.data())[2] = 1;
  struct Case {
    Refusal r;
    GdrPrefillOptions o;
    TensorView initial, final_state;
  };
  std::vector<std::unique_ptr<TensorView>> keep;  // the views the options point to
  auto opt = [&](const HostTensor* i, const HostTensor* h, int64_t every, const HostTensor* cp, const HostTensor* st,
                 GdrKernel kernel = GdrKernel::kAuto) {
    GdrPrefillOptions o;
    auto take = [&](const HostTensor* t) -> const TensorView* {
      if (t == nullptr) return nullptr;
      keep.emplace_back(new TensorView(t->view()));
      return keep.back().get();
    };
    o.state_indices = take(i), o.has_initial_state = take(h), o.checkpoint_every = every;
    o.checkpoints = take(cp), o.checkpoint_starts = take(st), o.kernel = kernel;
    return o;
  };
  const TensorView pv = pool.view();
  const Case cases[] = {
      {{"index out of range", StatusCode::kParamInvalid, "stateIndicesOptional"}, opt(&idx_range, nullptr, 0, nullptr, nullptr), pv, pv},
      {{"negative index", StatusCode::kParamInvalid, "stateIndicesOptional"}, opt(&idx_neg, nullptr, 0, nullptr, nullptr), pv, pv},
      {{"duplicate index", StatusCode::kParamInvalid, "stateIndicesOptional"}, opt(&idx_dup, nullptr, 0, nullptr, nullptr), pv, pv},
      {{"int64 indices", StatusCode::kParamInvalid, "stateIndicesOptional"}, opt(&idx_i64, nullptr, 0, nullptr, nullptr), pv, pv},
      {{"indices (1,)", StatusCode::kTilingError, "stateIndicesOptional"}, opt(&idx_short, nullptr, 0, nullptr, nullptr), pv, pv},
      {{"pool 3-D", StatusCode::kTilingError, "initialState"}, opt(&idx, nullptr, 0, nullptr, nullptr), pool3.view(), pv},
      {{"final pool of 5 rows", StatusCode::kTilingError, "finalState"}, opt(&idx, nullptr, 0, nullptr, nullptr), pv, other_pool.view()},
      {{"has fp32", StatusCode::kParamInvalid, "hasInitialStateOptional"}, opt(&idx, &has_f32, 0, nullptr, nullptr), pv, pv},
      {{"has (1,)", StatusCode::kTilingError, "hasInitialStateOptional"}, opt(&idx, &has_short, 0, nullptr, nullptr), pv, pv},
      {{"every 32", StatusCode::kParamInvalid, "checkpointEvery"}, opt(nullptr, nullptr, 32, &cps, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"every -64", StatusCode::kParamInvalid, "checkpointEvery"}, opt(nullptr, nullptr, -64, &cps, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"snapshots without every", StatusCode::kParamInvalid, "checkpointsOptional"}, opt(nullptr, nullptr, 0, &cps, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"every without snapshots", StatusCode::kNullptr, "checkpointsOptional"}, opt(nullptr, nullptr, 64, nullptr, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"recurrent with snapshots", StatusCode::kParamInvalid, "kernel"}, opt(nullptr, nullptr, 64, &cps, nullptr, GdrKernel::kRecurrent), p.initial_state.view(), p.final_state.view()},
      {{"fp16 snapshots", StatusCode::kParamInvalid, "checkpointsOptional"}, opt(nullptr, nullptr, 64, &cps_f16, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"snapshot rows too few", StatusCode::kTilingError, "checkpointsOptional"}, opt(nullptr, nullptr, 64, &cps_small, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"snapshot shape", StatusCode::kTilingError, "checkpointsOptional"}, opt(nullptr, nullptr, 64, &cps_shape, nullptr), p.initial_state.view(), p.final_state.view()},
      {{"starts inconsistent", StatusCode::kParamInvalid, "checkpointStartsOptional"}, opt(nullptr, nullptr, 64, &cps, &starts), p.initial_state.view(), p.final_state.view()},
      {{"starts int32", StatusCode::kParamInvalid, "checkpointStartsOptional"}, opt(nullptr, nullptr, 64, &cps, &starts_i32), p.initial_state.view(), p.final_state.view()},
      {{"snapshots overlap finalState", StatusCode::kParamInvalid, "checkpointsOptional"}, opt(nullptr, nullptr, 64, &cps, nullptr), p.initial_state.view(), p.final_state.view()},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const Case& k = cases[i];
    GdrPrefillOptions o = k.o;
    const TensorView overlap = p.final_state.view();  // (2, Nv, Dv, Dk): snapshot rows over finalState's bytes
    if (std::string(k.r.what) == "snapshots overlap finalState") o.checkpoints = &overlap;
    const Status st = call(p, k.initial, p.lengths.view(), k.final_state, o);
    EXPECT_EQ(st.code(), k.r.code) << k.r.what << ": " << st.message();
    EXPECT_TRUE(names_parameter(st.message(), k.r.param)) << k.r.what << ": " << st.message();
  }
  // The plain rules still hold with the options: a (B, ...) initial state with indices is a pool of B rows.
  GdrPrefillOptions ok = opt(&idx, &has, 0, nullptr, nullptr);
  EXPECT_TRUE(call(p, pv, p.lengths.view(), pv, ok).ok());
}

// correctedValuesOptional (T, Nv, Dv) fp32, chunked kernel only, overlapping nothing; given, every element is written.
TEST(GdrServingValidation, CorrectedValuesRules) {
  PrefillConfig c;
  c.lengths = {130, 6};
  c.nk = 1, c.nv = 2, c.dk = 8, c.dv = 8;
  PrefillProblem p(c);
  HostTensor cv(DType::kF32, {136, 2, 8}), cv_bf16(DType::kBF16, {136, 2, 8}), cv_shape(DType::kF32, {136, 2, 4});
  struct Case { const char* what; const HostTensor* t; GdrKernel kernel; StatusCode code; const char* param; };
  const Case cases[] = {
      {"bf16", &cv_bf16, GdrKernel::kAuto, StatusCode::kParamInvalid, "correctedValuesOptional"},
      {"shape", &cv_shape, GdrKernel::kAuto, StatusCode::kTilingError, "correctedValuesOptional"},
      {"recurrent kernel", &cv, GdrKernel::kRecurrent, StatusCode::kParamInvalid, "kernel"},
      {"overlaps out", nullptr, GdrKernel::kAuto, StatusCode::kParamInvalid, "correctedValuesOptional"},
  };
  c.act = DType::kF32;
  PrefillProblem pf(c);  // fp32 activations: out has V's dtype and shape, so it can alias
  for (const Case& k : cases) {
    GdrPrefillOptions o;
    o.kernel = k.kernel;
    TensorView v = k.t != nullptr ? k.t->view() : pf.out.view();
    o.corrected_values = &v;
    PrefillProblem& q = k.t != nullptr ? p : pf;
    const Status st = call(q, q.initial_state.view(), q.lengths.view(), q.final_state.view(), o);
    EXPECT_EQ(st.code(), k.code) << k.what << ": " << st.message();
    EXPECT_TRUE(names_parameter(st.message(), k.param)) << k.what << ": " << st.message();
  }
  std::fill(cv.bytes.begin(), cv.bytes.end(), 0xFF);  // NaN: an element left unwritten fails all_finite
  GdrPrefillOptions o;
  const TensorView v = cv.view();
  o.corrected_values = &v;
  ASSERT_TRUE(call(p, p.initial_state.view(), p.lengths.view(), p.final_state.view(), o).ok());
  EXPECT_TRUE(all_finite(cv));
}

// ---- aclnn ----

TEST(GdrServingAclnn, ExMatchesTheCppCall) {
  PoolCase pc = ragged_pool_case();
  PrefillProblem p(pc.config);
  HostTensor pool(DType::kF32, {pc.slots, pc.config.nv, pc.config.dv, pc.config.dk});
  InputGenerator(11).normal(&pool, 0.5);
  HostTensor pool2 = pool;
  HostTensor idx = ints(pc.idx), has = ints(pc.has);
  std::vector<int64_t> starts = {0};
  for (int32_t len : pc.config.lengths) starts.push_back(starts.back() + len / 64);
  HostTensor cps(DType::kF32, {starts.back(), pc.config.nv, pc.config.dv, pc.config.dk}), cps2 = cps;
  HostTensor starts_t(DType::kI64, {static_cast<int64_t>(starts.size())});
  std::memcpy(starts_t.bytes.data(), starts.data(), starts.size() * sizeof(int64_t));
  const TensorView idx_view = idx.view(), has_view = has.view(), cps_view = cps.view(), starts_view = starts_t.view();
  GdrPrefillOptions o;
  o.state_indices = &idx_view, o.has_initial_state = &has_view, o.checkpoint_every = 64, o.checkpoints = &cps_view;
  o.checkpoint_starts = &starts_view;
  ASSERT_TRUE(call(p, pool.view(), p.lengths.view(), pool.view(), o).ok());
  const HostTensor cpp_out = p.out;

  std::memset(p.out.bytes.data(), 0, p.out.bytes.size());
  AclTensor q(p.q.view()), k(p.k.view()), v(p.v.view()), beta(p.beta.view()), s(pool2.view()), lens(p.lengths.view());
  AclTensor g(p.g.view()), ai(idx.view()), ah(has.view()), ast(starts_t.view()), out(p.out.view()), cp(cps2.view());
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ASSERT_EQ(aclnnChunkGatedDeltaRuleExGetWorkspaceSize(q.get(), k.get(), v.get(), beta.get(), s.get(), lens.get(),
                                                       g.get(), ai.get(), ah.get(), ast.get(), p.scale(), 64, 1,
                                                       out.get(), s.get(), cp.get(), nullptr, &ws, &ex),
            0);
  std::vector<uint8_t> workspace(ws + 64);
  ASSERT_EQ(aclnnChunkGatedDeltaRuleEx(ws ? workspace.data() : nullptr, ws, ex, nullptr), 0);
  EXPECT_TRUE(same_bytes(p.out.view(), cpp_out.view()));
  EXPECT_TRUE(same_bytes(pool2.view(), pool.view()));
  EXPECT_TRUE(same_bytes(cps2.view(), cps.view()));
  // kernelMode out of range, and a duplicate index, refused in phase one with the codes of the C++ call.
  ex = nullptr;
  EXPECT_EQ(aclnnChunkGatedDeltaRuleExGetWorkspaceSize(q.get(), k.get(), v.get(), beta.get(), s.get(), lens.get(),
                                                       g.get(), ai.get(), ah.get(), ast.get(), p.scale(), 64, 3,
                                                       out.get(), s.get(), cp.get(), nullptr, &ws, &ex),
            161002);
}

}  // namespace
}  // namespace gdrtest
