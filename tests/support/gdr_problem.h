// gdr_problem.h — test helpers for the gated delta rule: owned host tensors, inputs generated as the caller
// guarantees (q, k rows L2-normalised, g <= 0 as a log-sigmoid, 0 < beta < 1), a prefill and a decode
// problem that run the public op and the fp64 oracle, the comparison against tolerance_for("gdr_*"), an
// error table printed once per suite, and scopes that restore the global settings (ISA, threads, compat).
#ifndef TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_
#define TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/tolerance.h"
#include "txops/txops.h"

namespace gdrtest {

using txops::DType;
using txops::TensorView;

// A contiguous host tensor that owns its bytes (fp32 / fp16 / bf16 / int32).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);
  TensorView view() const;
  int64_t numel() const;
  double get(int64_t flat) const;          // widened to double
  void set(int64_t flat, double value);    // rounded to the dtype (round-to-nearest-even)
  int32_t* ints() { return reinterpret_cast<int32_t*>(bytes.data()); }
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Deterministic input generation.
class InputGenerator {
 public:
  explicit InputGenerator(uint32_t seed) : rng_(seed) {}
  void uniform(HostTensor* t, double lo, double hi);
  void normal(HostTensor* t, double stddev);
  // Each row of the last dimension scaled to Euclidean norm `norm` (1 = the caller's guarantee).
  void rows_with_norm(HostTensor* t, double norm);
  void log_sigmoid(HostTensor* t);  // g <= 0: log(sigmoid(x)), x ~ U(-3, 5)
  void sigmoid(HostTensor* t);      // 0 < beta < 1

 private:
  std::mt19937 rng_;
};

// ---- prefill -------------------------------------------------------------------------------------------
struct PrefillConfig {
  std::vector<int32_t> lengths = {8};
  int64_t nk = 1, nv = 1, dk = 16, dv = 16;
  bool with_g = true;
  float scale = 0;  // 0 means 1/sqrt(dk)
  DType act = DType::kBF16;
  DType state = DType::kF32;
  uint32_t seed = 1;
  std::string describe() const;
};

struct PrefillProblem {
  explicit PrefillProblem(const PrefillConfig& config);  // random inputs, zeroed outputs
  int64_t tokens() const { return q.shape[0]; }
  float scale() const;
  txops::Status run();  // txops::chunk_gated_delta_rule into out / final_state
  void reference(std::vector<double>* out_ref, std::vector<double>* state_ref) const;
  PrefillConfig config;
  HostTensor q, k, v, beta, g, initial_state, lengths, out, final_state;
};

// ---- decode -------------------------------------------------------------------------------------------
struct DecodeConfig {
  std::vector<int32_t> lengths = {1};
  std::vector<int32_t> state_indices = {0};  // one per token
  std::vector<int32_t> accepted;             // empty: numAcceptedTokens null
  int64_t num_slots = 2;
  int64_t nk = 1, nv = 1, dk = 16, dv = 16;
  bool with_g = true, with_gk = false;
  float scale = 0;  // 0 means 1/sqrt(dk)
  DType act = DType::kBF16;
  DType state = DType::kF32;
  uint32_t seed = 1;
  std::string describe() const;
};

struct DecodeProblem {
  explicit DecodeProblem(const DecodeConfig& config);
  float scale() const;
  txops::Status run();  // pool <- pool_before, then txops::recurrent_gated_delta_rule on pool
  void reference(std::vector<double>* out_ref, std::vector<double>* pool_ref) const;
  DecodeConfig config;
  HostTensor q, k, v, beta, g, gk, lengths, indices, accepted, pool_before, pool, out;
};

// ---- checking -------------------------------------------------------------------------------------------
// Max relative and RMS relative errors per label, printed as a table (once per suite, at exit).
class ErrorTable {
 public:
  void add(const std::string& label, const txops::CompareReport& report);
  void print(const char* title) const;

 private:
  struct Row { double max_rel = 0, rel_rms = 0; int64_t cases = 0; };
  std::map<std::string, Row> rows_;
};

// Compares y with ref under tolerance_for(row, y.dtype), records it under `label` in `table` (may be null).
::testing::AssertionResult matches_reference(const char* row, const TensorView& y, const std::vector<double>& ref,
                                             const std::string& label, ErrorTable* table);

bool all_finite(const HostTensor& t);

// ISAs this CPU can run, scalar first.
std::vector<txops::Isa> isas_to_test();

class IsaScope {
 public:
  explicit IsaScope(txops::Isa isa) : saved_(txops::active_isa()) { txops::set_max_isa(isa); }
  ~IsaScope() { txops::set_max_isa(saved_); }

 private:
  txops::Isa saved_;
};
// Sets an environment variable (value null: unsets it) for its lifetime, then restores it.
class EnvScope {
 public:
  EnvScope(const char* name, const char* value);
  ~EnvScope();
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  std::string name_, saved_;
  bool had_ = false;
};

// A prefill kernel (TXOPS_GDR_KERNEL = recurrent | chunked, read by the planner at every call) and an ISA.
struct PrefillVariant {
  const char* kernel;
  txops::Isa isa;
  std::string name() const;  // "kernel=chunked isa=avx512"
};
std::vector<PrefillVariant> prefill_variants();  // every prefill kernel on every ISA

// Selects a variant for its lifetime; restores TXOPS_GDR_KERNEL and the ISA cap after.
class PrefillVariantScope {
 public:
  explicit PrefillVariantScope(const PrefillVariant& variant)
      : isa_(variant.isa), kernel_("TXOPS_GDR_KERNEL", variant.kernel) {}

 private:
  IsaScope isa_;
  EnvScope kernel_;
};

class ThreadsScope {
 public:
  explicit ThreadsScope(int n) : saved_(txops::num_threads()) { txops::set_num_threads(n); }
  ~ThreadsScope() { txops::set_num_threads(saved_); }

 private:
  int saved_;
};
// Runs `problem` with 1, 2, 3 and 4 threads (outputs pre-filled with 0xCD each time) and expects out and
// finalState to be bit-identical to the 1-thread run.
void expect_bit_identical_across_threads(PrefillProblem& problem);

class CompatScope {
 public:
  explicit CompatScope(txops::Compat mode) : saved_(txops::compat_mode()) { txops::set_compat_mode(mode); }
  ~CompatScope() { txops::set_compat_mode(saved_); }

 private:
  txops::Compat saved_;
};

}  // namespace gdrtest

#endif  // TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_
