// bench_report.h — one measured case (CaseResult), the results table on stdout, and the JSON records
// `txops bench --json FILE` writes (one object per case; field list in bench/README.md).
#ifndef TXOPS_TOOLS_BENCH_REPORT_H_
#define TXOPS_TOOLS_BENCH_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_case.h"
#include "probes.h"

namespace txops {
namespace bench {

struct CaseResult {
  std::string suite, op, dtype, shape, check_note, message;
  CaseKind kind = CaseKind::kRope;
  int threads = 1;
  bool passed = false;
  double max_err = 0;
  int reps = 0;
  std::string cache = "warm";  // "cold": the last-level cache evicted before every timed call (--cold)
  int64_t tokens = 0;
  double time_min_s = 0, time_median_s = 0;
  double bytes = 0, gbps = 0, limit_gbps = 0, ratio = 0;
  double copy_gbps = 0, copy_nt_gbps = 0, triad_gbps = 0;  // the same-run probes behind limit_gbps
  double parallel_region_s = 0;  // median empty parallel region on this thread count (fork/join cost)
  double core_round_trip_s = 0;  // a cache line from thread 0 to thread 1 and back, just after the case (0: 1 thread)
  // gated delta rule
  double flops = 0, state_bytes = 0, gflops = 0, limit_gflops = 0, flops_ratio = 0, bf16_dot_gflops = 0, amx_bf16_gflops = 0,
         tokens_per_s = 0;
  double state_gbps = 0, state_ratio = 0;  // decode
  // in-place row-slice ops: the same-run probe of their access pattern (probe_slice), and gbps against the lower
  // of it and limit_gbps (the ratio they are judged by)
  double slice_gbps = 0, slice_ratio = 0;
  std::string slice_pattern;  // e.g. "bytes [256, 384) of 384-byte rows, in place"
  std::string paired_baseline;   // BenchCase::paired_baseline: timed alternating with the case
  double paired_baseline_min_s = 0;
  double paired_median_ratio = 0;  // the median over the pairs of this call's time over the baseline call's before it
  // per-call overhead (decode RoPE): medians of whole calls on the decode shape and on a minimal shape
  bool has_overhead = false;
  double aclnn_call_s = 0, cpp_call_s = 0, aclnn_overhead_s = 0, cpp_overhead_s = 0;
};

void print_table_header(FILE* out);
void print_table_row(FILE* out, const CaseResult& r);
void print_probe_line(FILE* out, const BandwidthProbe& bw, const ComputeProbe* compute, double parallel_region_s,
                      double round_trip_min_s, double round_trip_max_s);
// The fraction of its limit a case is judged by (FMA peak for the gated delta rule's prefill and backward, copy
// bandwidth of the state traffic for its decode, the lower of the copy bandwidth and the slice probe for the
// in-place row-slice ops, copy bandwidth of all bytes otherwise) and that limit's name.
double judged_ratio(const CaseResult& r);
const char* judged_limit(const CaseResult& r);
// One line per (suite, thread count): the worst judged ratio and its case, the median; a regression shows here.
void print_summary(FILE* out, const std::vector<CaseResult>& results);
// Writes the records (a JSON list, one object per case); false when the file cannot be written.
bool write_json(const std::string& path, const std::vector<CaseResult>& results);

}  // namespace bench
}  // namespace txops

#endif  // TXOPS_TOOLS_BENCH_REPORT_H_
