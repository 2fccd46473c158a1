// gdr_problem.h — test helpers for the gated delta rule: owned host tensors, inputs generated as the caller
// guarantees (q, k rows L2-normalised, g <= 0 as a log-sigmoid, 0 < beta < 1), a prefill and a decode
// problem that run the public op and the fp64 oracle, the comparison against tolerance_for("gdr_*"), an
// error table printed once per suite, and the prefill kernel choice. The settings scopes, the per-ISA fixture
// and the plan checks are support/isa_threads.h (shared with the RoPE tests).
#ifndef TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_
#define TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/tolerance.h"
#include "support/isa_threads.h"
#include "txops/txops.h"

namespace gdrtest {

using txops::DType;
using txops::TensorView;
// The settings scopes, the per-ISA fixture and the plan checks both families share (support/isa_threads.h).
using txops::testing::forget_plan;
using txops::testing::last_plan;
using txops::testing::planned_on;
using txops::testing::ran_multithreaded;
using txops::testing::ran_on_threads;
using txops::testing::ScopedCompat;
using txops::testing::ScopedEnv;
using txops::testing::ScopedIsa;
using txops::testing::ScopedThreads;

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
  // txops::chunk_gated_delta_rule into out / final_state; on success also expects the plan to have run the active
  // ISA's kernels and the kernel TXOPS_GDR_KERNEL forces, if any.
  txops::Status run();
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
  // pool <- pool_before, then txops::recurrent_gated_delta_rule on pool; on success also expects the plan to
  // have run the active ISA's kernels.
  txops::Status run();
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

// The prefill kernels (TXOPS_GDR_KERNEL = recurrent | chunked, read by the planner at every call), and a scope
// that forces one; PrefillProblem::run checks the planner took it.
std::vector<const char*> prefill_kernels();
class PrefillKernelScope : public ScopedEnv {
 public:
  explicit PrefillKernelScope(const char* kernel) : ScopedEnv("TXOPS_GDR_KERNEL", kernel) {}
};

// Runs `problem` with 1, 2, 3 and 4 threads (outputs pre-filled with 0xCD each time) and expects out and
// finalState to be bit-identical to the 1-thread run, each multi-thread run on a partition of more than one thread.
void expect_bit_identical_across_threads(PrefillProblem& problem);
// Runs `call` with TXOPS_VERBOSE on, expects it to succeed and returns what it logged (the plan's kernel, mode, tags).
std::string verbose_log_of(const std::function<txops::Status()>& call);
// verbose_log_of the problem's run.
std::string verbose_log(PrefillProblem& problem);
// Chunk, column and pipeline mode (TXOPS_GDR_SPLIT=chunks|columns|pipeline) on 1-4 threads give items mode's bits
// on one thread, and take every thread.
void expect_chunk_mode_bit_identical_to_items_mode(PrefillProblem& problem);

}  // namespace gdrtest

#endif  // TXOPS_TESTS_SUPPORT_GDR_PROBLEM_H_
