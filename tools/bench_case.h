// bench_case.h — what `txops bench` measures: a CaseSpec names one operator on one real-model shape in one
// dtype (suite, op, variant, KEY=VALUE dims); its factory builds a BenchCase that owns the tensors, runs the
// op through the public C++ API (and, for decode shapes, through the two-phase aclnn API), knows the bytes
// and FLOPs the op must move / do, and checks outputs against the fp64 reference (computed once).
#ifndef TXOPS_TOOLS_BENCH_CASE_H_
#define TXOPS_TOOLS_BENCH_CASE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "bench_util.h"
#include "core/tolerance.h"
#include "txops/txops.h"

namespace txops {
namespace bench {

// kRope and kConv are judged by bandwidth alone; the GDR kinds also by FLOPs (decode: by its state traffic).
enum class CaseKind { kRope, kGdrPrefill, kGdrDecode, kConv };
inline bool counts_flops(CaseKind k) { return k == CaseKind::kGdrPrefill || k == CaseKind::kGdrDecode; }

struct CheckResult {
  bool passed = false;
  double max_err = 0;    // the largest max_rel_err over the checked outputs
  std::string message;   // op error, or the worst comparison's description when out of tolerance
};

class BenchCase {
 public:
  virtual ~BenchCase() = default;
  // Computes the fp64 reference from the pristine inputs (called once, after the first successful run; the
  // reference never reads what the op overwrites: in-place cases keep a pristine copy).
  virtual void compute_reference() = 0;
  // Restores inputs an in-place op modifies to their pristine values.
  virtual void reset() {}
  // One call through the public C++ API.
  virtual Status run() = 0;
  // One two-phase aclnn call (GetWorkspaceSize + run); tensors are created once, in the constructor.
  virtual bool has_aclnn() const { return false; }
  virtual Status run_aclnn() { return Status(StatusCode::kRuntimeError, "no aclnn path for this case"); }
  // Compares the current outputs with the reference.
  virtual CheckResult check() = 0;
  // The (contiguous) tensors the op writes, for the thread-count bit-identity check.
  virtual std::vector<TensorView> outputs() const = 0;
  // A case judged against another call's time (the backward against the training forward that feeds it): one call of
  // that other op, which the runner alternates with run() in the timed loop, so that both minima come from the same
  // minutes of a host whose speed drifts (docs/measurement.md). Empty name: none.
  virtual Status run_paired_baseline() { return Status(StatusCode::kRuntimeError, "no paired baseline"); }
  std::string paired_baseline;  // what run_paired_baseline runs, for the report

  double bytes = 0;        // bytes the op must read + write, each tensor counted once
  double flops = 0;        // GDR: 6*Dk*Dv per token per value head
  double state_bytes = 0;  // GDR decode: read + write of each state touched, once per token
  int64_t tokens = 0;      // GDR: tokens per call
  std::string check_note;  // how much of the output the reference covers, when not all of it
  // Ops that update a slice of every row in place (the partial rotary ops): bytes [slice_lo, slice_hi) of each of
  // slice_rows rows of slice_row_bytes. The bench then also runs the same pattern as a probe (probes.h,
  // probe_slice) and judges the case by the lower of the copy limit and that probe.
  size_t slice_rows = 0, slice_row_bytes = 0, slice_lo = 0, slice_hi = 0;
};

struct CaseSpec {
  std::string suite, op, variant;
  CaseKind kind = CaseKind::kRope;
  DType dtype = DType::kBF16;
  bool optional_dtype = false;  // run only when --dtype asks for it (GDR fp32)
  Dims dims;
  Dims overhead_dims;  // non-empty: also time the C++ and aclnn calls on this minimal shape (per-call overhead)
  std::function<std::unique_ptr<BenchCase>(const CaseSpec& spec, const Dims& dims)> make;
  std::string shape() const { return variant.empty() ? dims.str() : dims.str() + "," + variant; }
};

// The suites of docs/measurement.md. `quick` shrinks every shape to a CI-smoke size.
std::vector<CaseSpec> rope_suites(bool quick);  // cases_rope.cpp
std::vector<CaseSpec> rope_family_suites(bool quick);  // cases_rope_family.cpp
std::vector<CaseSpec> gdr_suites(bool quick);   // cases_gdr.cpp
std::vector<CaseSpec> conv_suites(bool quick);  // cases_conv.cpp

// Shared helpers for the case files.
// Adds the comparison of `y` with `ref` under the tolerance row to `result` (an empty reference fails).
void accumulate_check(const char* name, const TensorView& y, const std::vector<double>& ref,
                      const std::string& tolerance_row, CheckResult* result);
// Turns a failed op status into a failed check.
CheckResult failed_run(const Status& status);
// A 64-bit hash of the bytes of contiguous tensors (the thread-count bit-identity check).
uint64_t hash_outputs(const std::vector<TensorView>& views);

// An aclTensor over a contiguous HostTensor, destroyed with it (the cases' two-phase aclnn path).
class AclView {
 public:
  explicit AclView(const HostTensor& t);
  ~AclView() { aclDestroyTensor(tensor_); }
  AclView(const AclView&) = delete;
  AclView& operator=(const AclView&) = delete;
  aclTensor* get() const { return tensor_; }

 private:
  aclTensor* tensor_ = nullptr;
};

// Grows once, then reused: phase two needs a workspace of the size phase one reported.
struct Workspace {
  Buffer buffer;
  void* get(uint64_t bytes);
};

// An aclnn status code (and the last error message) as a Status.
Status acl_status(aclnnStatus code);

}  // namespace bench
}  // namespace txops

#endif  // TXOPS_TOOLS_BENCH_CASE_H_
