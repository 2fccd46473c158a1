// gdr_problem.cpp — see gdr_problem.h: gated-delta-rule test problems (inputs, op call, fp64 oracle call)
// and the comparison / error-table helpers shared by the tests/gdr_*_test.cpp suites.
#include "support/gdr_problem.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "core/dtype.h"
#include "ops/gated_delta_rule/reference.h"

namespace gdrtest {

// ---- HostTensor -----------------------------------------------------------------------------------------
HostTensor::HostTensor(DType dtype_, std::vector<int64_t> shape_) : dtype(dtype_), shape(std::move(shape_)) {
  bytes.assign(static_cast<size_t>(numel()) * txops::dtype_size(dtype), 0);
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

TensorView HostTensor::view() const {
  return TensorView::make(const_cast<uint8_t*>(bytes.data()), dtype, static_cast<int32_t>(shape.size()),
                          shape.data(), nullptr);
}

double HostTensor::get(int64_t flat) const {
  if (dtype == DType::kI32) return reinterpret_cast<const int32_t*>(bytes.data())[flat];
  return txops::load_f64(bytes.data(), dtype, flat);
}

void HostTensor::set(int64_t flat, double value) {
  if (dtype == DType::kI32) {
    reinterpret_cast<int32_t*>(bytes.data())[flat] = static_cast<int32_t>(value);
    return;
  }
  txops::store_f32(bytes.data(), dtype, flat, static_cast<float>(value));
}

// ---- InputGenerator ---------------------------------------------------------------------------------------
void InputGenerator::uniform(HostTensor* t, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t->numel(); ++i) t->set(i, dist(rng_));
}

void InputGenerator::normal(HostTensor* t, double stddev) {
  std::normal_distribution<double> dist(0.0, stddev);
  for (int64_t i = 0; i < t->numel(); ++i) t->set(i, dist(rng_));
}

void InputGenerator::rows_with_norm(HostTensor* t, double norm) {
  const int64_t dim = t->shape.back();
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> row(dim);
  for (int64_t r = 0; r < t->numel() / dim; ++r) {
    double sum2 = 0;
    for (double& x : row) {
      x = dist(rng_);
      sum2 += x * x;
    }
    const double factor = norm / std::sqrt(sum2);
    for (int64_t j = 0; j < dim; ++j) t->set(r * dim + j, row[j] * factor);
  }
}

void InputGenerator::log_sigmoid(HostTensor* t) {
  std::uniform_real_distribution<double> dist(-3.0, 5.0);
  for (int64_t i = 0; i < t->numel(); ++i) t->set(i, -std::log1p(std::exp(-dist(rng_))));
}

void InputGenerator::sigmoid(HostTensor* t) {
  std::normal_distribution<double> dist(0.0, 1.5);
  for (int64_t i = 0; i < t->numel(); ++i) t->set(i, 1.0 / (1.0 + std::exp(-dist(rng_))));
}

// ---- prefill -----------------------------------------------------------------------------------------------
static std::string join(const std::vector<int32_t>& values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i ? "," : "") + std::to_string(values[i]);
  return s;
}

std::string PrefillConfig::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "prefill L={%s} Nk=%lld Nv=%lld Dk=%lld Dv=%lld g=%d scale=%g act=%s state=%s",
                join(lengths).c_str(), static_cast<long long>(nk), static_cast<long long>(nv),
                static_cast<long long>(dk), static_cast<long long>(dv), with_g ? 1 : 0, scale,
                txops::dtype_name(act), txops::dtype_name(state));
  return buf;
}

PrefillProblem::PrefillProblem(const PrefillConfig& c) : config(c) {
  const int64_t t = std::accumulate(c.lengths.begin(), c.lengths.end(), int64_t{0});
  const int64_t b = static_cast<int64_t>(c.lengths.size());
  q = HostTensor(c.act, {t, c.nk, c.dk});
  k = HostTensor(c.act, {t, c.nk, c.dk});
  v = HostTensor(c.act, {t, c.nv, c.dv});
  beta = HostTensor(c.act, {t, c.nv});
  g = HostTensor(DType::kF32, {t, c.nv});
  initial_state = HostTensor(c.state, {b, c.nv, c.dv, c.dk});
  lengths = HostTensor(DType::kI32, {b});
  out = HostTensor(c.act, {t, c.nv, c.dv});
  final_state = HostTensor(c.state, {b, c.nv, c.dv, c.dk});
  InputGenerator gen(c.seed);
  gen.rows_with_norm(&q, 1.0);
  gen.rows_with_norm(&k, 1.0);
  gen.uniform(&v, -1.0, 1.0);
  gen.sigmoid(&beta);
  gen.log_sigmoid(&g);
  gen.uniform(&initial_state, -0.5, 0.5);
  for (int64_t i = 0; i < b; ++i) lengths.ints()[i] = c.lengths[i];
}

float PrefillProblem::scale() const {
  return config.scale != 0 ? config.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(config.dk)));
}

txops::Status PrefillProblem::run() {
  const TensorView gv = g.view();
  forget_plan();
  const txops::Status st = txops::chunk_gated_delta_rule(q.view(), k.view(), v.view(), beta.view(),
                                                         initial_state.view(), lengths.view(),
                                                         config.with_g ? &gv : nullptr, scale(), out.view(),
                                                         final_state.view());
  if (!st.ok()) return st;
  EXPECT_TRUE(planned_on(txops::active_isa()));
  const char* forced = std::getenv("TXOPS_GDR_KERNEL");
  const bool chunked = std::strcmp(last_plan().kernel, "gdr_prefill_chunked") == 0;
  if (forced != nullptr && std::strcmp(forced, "chunked") == 0)
    EXPECT_TRUE(chunked) << "TXOPS_GDR_KERNEL=chunked, ran " << txops::testing::describe(last_plan());
  if (forced != nullptr && std::strcmp(forced, "recurrent") == 0)
    EXPECT_FALSE(chunked) << "TXOPS_GDR_KERNEL=recurrent, ran " << txops::testing::describe(last_plan());
  return st;
}

void PrefillProblem::reference(std::vector<double>* out_ref, std::vector<double>* state_ref) const {
  const TensorView gv = g.view();
  txops::reference::chunk_gated_delta_rule(q.view(), k.view(), v.view(), beta.view(), initial_state.view(),
                                           lengths.view(), config.with_g ? &gv : nullptr, scale(), out_ref,
                                           state_ref);
}

// ---- decode -------------------------------------------------------------------------------------------------
std::string DecodeConfig::describe() const {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "decode L={%s} idx={%s} accepted={%s} slots=%lld Nk=%lld Nv=%lld Dk=%lld Dv=%lld g=%d gk=%d "
                "scale=%g act=%s state=%s",
                join(lengths).c_str(), join(state_indices).c_str(), join(accepted).c_str(),
                static_cast<long long>(num_slots), static_cast<long long>(nk), static_cast<long long>(nv),
                static_cast<long long>(dk), static_cast<long long>(dv), with_g ? 1 : 0, with_gk ? 1 : 0, scale,
                txops::dtype_name(act), txops::dtype_name(state));
  return buf;
}

DecodeProblem::DecodeProblem(const DecodeConfig& c) : config(c) {
  const int64_t t = static_cast<int64_t>(c.state_indices.size());
  const int64_t b = static_cast<int64_t>(c.lengths.size());
  q = HostTensor(c.act, {t, c.nk, c.dk});
  k = HostTensor(c.act, {t, c.nk, c.dk});
  v = HostTensor(c.act, {t, c.nv, c.dv});
  beta = HostTensor(c.act, {t, c.nv});
  g = HostTensor(DType::kF32, {t, c.nv});
  gk = HostTensor(DType::kF32, {t, c.nv, c.dk});
  lengths = HostTensor(DType::kI32, {b});
  indices = HostTensor(DType::kI32, {t});
  accepted = HostTensor(DType::kI32, {static_cast<int64_t>(c.accepted.size())});
  pool_before = HostTensor(c.state, {c.num_slots, c.nv, c.dv, c.dk});
  out = HostTensor(c.act, {t, c.nv, c.dv});
  InputGenerator gen(c.seed);
  gen.rows_with_norm(&q, 1.0);
  gen.rows_with_norm(&k, 1.0);
  gen.uniform(&v, -1.0, 1.0);
  gen.sigmoid(&beta);
  gen.log_sigmoid(&g);
  gen.log_sigmoid(&gk);
  gen.uniform(&pool_before, -0.5, 0.5);
  for (int64_t i = 0; i < b; ++i) lengths.ints()[i] = c.lengths[i];
  for (int64_t i = 0; i < t; ++i) indices.ints()[i] = c.state_indices[i];
  for (size_t i = 0; i < c.accepted.size(); ++i) accepted.ints()[i] = c.accepted[i];
  pool = pool_before;
}

float DecodeProblem::scale() const {
  return config.scale != 0 ? config.scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(config.dk)));
}

txops::Status DecodeProblem::run() {
  pool = pool_before;
  const TensorView gv = g.view(), gkv = gk.view(), acc = accepted.view();
  forget_plan();
  const txops::Status st = txops::recurrent_gated_delta_rule(
      q.view(), k.view(), v.view(), beta.view(), pool.view(), lengths.view(), indices.view(),
      config.with_g ? &gv : nullptr, config.with_gk ? &gkv : nullptr, config.accepted.empty() ? nullptr : &acc,
      scale(), out.view());
  if (st.ok()) EXPECT_TRUE(planned_on(txops::active_isa()));
  return st;
}

void DecodeProblem::reference(std::vector<double>* out_ref, std::vector<double>* pool_ref) const {
  const TensorView gv = g.view(), gkv = gk.view(), acc = accepted.view();
  txops::reference::recurrent_gated_delta_rule(q.view(), k.view(), v.view(), beta.view(), pool_before.view(),
                                               lengths.view(), indices.view(), config.with_g ? &gv : nullptr,
                                               config.with_gk ? &gkv : nullptr,
                                               config.accepted.empty() ? nullptr : &acc, scale(), out_ref,
                                               pool_ref);
}

// ---- checking --------------------------------------------------------------------------------------------------
void ErrorTable::add(const std::string& label, const txops::CompareReport& report) {
  Row& row = rows_[label];
  row.max_rel = std::fmax(row.max_rel, report.max_rel_err);
  row.rel_rms = std::fmax(row.rel_rms, report.rel_rms_err);
  ++row.cases;
}

void ErrorTable::print(const char* title) const {
  if (rows_.empty()) return;
  std::printf("\n%s — worst over all cases of max|y-ref|/max(|ref|,RMS(ref)) and RMS(y-ref)/RMS(ref)\n", title);
  std::printf("  %-54s %12s %12s %7s\n", "output", "max_rel", "rel_rms", "runs");
  for (const auto& entry : rows_) {
    std::printf("  %-54s %12.3e %12.3e %7lld\n", entry.first.c_str(), entry.second.max_rel, entry.second.rel_rms,
                static_cast<long long>(entry.second.cases));
  }
  std::fflush(stdout);
}

::testing::AssertionResult matches_reference(const char* row, const TensorView& y, const std::vector<double>& ref,
                                             const std::string& label, ErrorTable* table) {
  const txops::CompareReport report = txops::compare_with_reference(y, ref, txops::tolerance_for(row, y.dtype));
  if (static_cast<int64_t>(ref.size()) != y.numel()) {
    return ::testing::AssertionFailure() << label << ": reference has " << ref.size() << " elements, output "
                                         << y.numel();
  }
  if (table) table->add(label, report);
  if (report.passed) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << label << " " << y.shape_string() << ": " << report.describe(y);
}

bool all_finite(const HostTensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) return false;
  return true;
}

std::vector<const char*> prefill_kernels() { return {"recurrent", "chunked"}; }

std::string verbose_log_of(const std::function<txops::Status()>& call) {
  const bool was_verbose = txops::verbose();
  txops::set_verbose(true);
  ::testing::internal::CaptureStderr();
  const txops::Status st = call();
  const std::string log = ::testing::internal::GetCapturedStderr();
  txops::set_verbose(was_verbose);
  EXPECT_TRUE(st.ok()) << st.message();
  return log;
}

std::string verbose_log(PrefillProblem& problem) { return verbose_log_of([&] { return problem.run(); }); }

void expect_chunk_mode_bit_identical_to_items_mode(PrefillProblem& problem) {
  std::vector<uint8_t> out_items, state_items;
  {
    ScopedEnv split("TXOPS_GDR_SPLIT", "items");
    ScopedThreads threads(1);
    ASSERT_TRUE(problem.run().ok());
    out_items = problem.out.bytes;
    state_items = problem.final_state.bytes;
  }
  for (const char* mode : {"chunks", "columns", "pipeline"}) {
    ScopedEnv split("TXOPS_GDR_SPLIT", mode);
    for (int n : {1, 2, 3, 4}) {
      ScopedThreads threads(n);
      std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
      std::fill(problem.final_state.bytes.begin(), problem.final_state.bytes.end(), 0xCD);
      ASSERT_TRUE(problem.run().ok());
      EXPECT_TRUE(ran_on_threads(n));  // chunk, column and pipeline mode take every thread they are given
      EXPECT_TRUE(problem.out.bytes == out_items) << "out differs, " << mode << " mode on " << n << " threads";
      EXPECT_TRUE(problem.final_state.bytes == state_items)
          << "finalState differs, " << mode << " mode on " << n << " threads";
    }
  }
}

void expect_bit_identical_across_threads(PrefillProblem& problem) {
  std::vector<uint8_t> out_one, state_one;
  for (int threads : {1, 2, 3, 4}) {
    ScopedThreads threads_scope(threads);
    std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
    std::fill(problem.final_state.bytes.begin(), problem.final_state.bytes.end(), 0xCD);
    ASSERT_TRUE(problem.run().ok());
    // A multi-thread run that planned one thread would compare the 1-thread partition with itself.
    EXPECT_TRUE(ran_multithreaded(threads));
    if (threads == 1) {
      out_one = problem.out.bytes;
      state_one = problem.final_state.bytes;
      continue;
    }
    EXPECT_TRUE(problem.out.bytes == out_one) << "out differs with " << threads << " threads";
    EXPECT_TRUE(problem.final_state.bytes == state_one) << "finalState differs with " << threads << " threads";
  }
  // Three parts of three grains each run by a team of one: part 0's thread takes the others' grains from their back.
  ScopedThreads three(3);
  ScopedEnv grains("TXOPS_GRAINS_PER_PART", "3");
  txops::testing::ScopedTeamOfOne team;
  std::fill(problem.out.bytes.begin(), problem.out.bytes.end(), 0xCD);
  std::fill(problem.final_state.bytes.begin(), problem.final_state.bytes.end(), 0xCD);
  ASSERT_TRUE(problem.run().ok());
  EXPECT_TRUE(problem.out.bytes == out_one) << "out differs with stolen grains";
  EXPECT_TRUE(problem.final_state.bytes == state_one) << "finalState differs with stolen grains";
}

}  // namespace gdrtest
