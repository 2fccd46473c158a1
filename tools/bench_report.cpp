// bench_report.cpp — the results table (stdout), its per-suite summary, and the JSON records of `txops bench`.
#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "bench_util.h"

namespace txops {
namespace bench {

void print_table_header(FILE* out) {
  std::fprintf(out, "%-20s %-32s %-5s %3s %-50s %10s %10s %8s %6s %8s %6s %9s %s\n", "suite", "op", "dtype", "thr",
               "shape", "min_ms", "median_ms", "GB/s", "%bw", "GFLOP/s", "%peak", "max_err", "result");
}

void print_table_row(FILE* out, const CaseResult& r) {
  char flops[32] = "-", peak[32] = "-";
  if (counts_flops(r.kind)) {
    std::snprintf(flops, sizeof flops, "%.1f", r.gflops);
    std::snprintf(peak, sizeof peak, "%.1f", 100 * r.flops_ratio);
  }
  // Decode GDR: the bandwidth column is the state traffic (its target), not all bytes.
  const double bw = r.kind == CaseKind::kGdrDecode ? r.state_gbps : r.gbps;
  const double bw_ratio = r.kind == CaseKind::kGdrDecode ? r.state_ratio : r.ratio;
  std::fprintf(out, "%-20s %-32s %-5s %3d %-50s %10.4f %10.4f %8.2f %6.1f %8s %6s %9.2e %s\n", r.suite.c_str(),
               r.op.c_str(), r.dtype.c_str(), r.threads, r.shape.c_str(), r.time_min_s * 1e3, r.time_median_s * 1e3,
               bw, 100 * bw_ratio, flops, peak, r.max_err, r.passed ? "ok" : "FAILED");
  if (r.has_overhead)
    std::fprintf(out,
                 "    per-call: minimal shape aclnn two-phase %.2f us (target <= 2), C++ %.2f us (target <= 0.5); "
                 "this shape aclnn %.2f us, C++ %.2f us\n",
                 r.aclnn_overhead_s * 1e6, r.cpp_overhead_s * 1e6, r.aclnn_call_s * 1e6, r.cpp_call_s * 1e6);
  if (r.kind == CaseKind::kGdrDecode)
    std::fprintf(out, "    state traffic %.2f GB/s = %.1f%% of copy limit; %.3g tokens/s%s%s\n", r.state_gbps,
                 100 * r.state_ratio, r.tokens_per_s, r.check_note.empty() ? "" : "; ", r.check_note.c_str());
  else if (r.kind == CaseKind::kGdrPrefill) {
    char amx[64] = "";
    if (r.amx_bf16_gflops > 0) std::snprintf(amx, sizeof(amx), ", AMX bf16 peak %.0f GFLOP/s", r.amx_bf16_gflops);
    std::fprintf(out, "    %.3g tokens/s; fp32 FMA peak %.1f GFLOP/s, bf16 dot peak %.1f GFLOP/s%s%s%s\n",
                 r.tokens_per_s, r.limit_gflops, r.bf16_dot_gflops, amx, r.check_note.empty() ? "" : "; ",
                 r.check_note.c_str());
  }
  if (r.paired_baseline_min_s > 0)
    std::fprintf(out,
                 "    %s timed alternating with it: min %.4f ms; this op / it = %.2f (minima), %.2f (median of the %d "
                 "pairs)\n",
                 r.paired_baseline.c_str(), r.paired_baseline_min_s * 1e3, r.time_min_s / r.paired_baseline_min_s,
                 r.paired_median_ratio, r.reps);
  if (r.slice_gbps > 0)
    std::fprintf(out, "    slice probe (%s) %.2f GB/s = %.1f%% of copy; the op: %.1f%% of the lower of the two\n",
                 r.slice_pattern.c_str(), r.slice_gbps, r.limit_gbps > 0 ? 100 * r.slice_gbps / r.limit_gbps : 0.0,
                 100 * r.slice_ratio);
  if (!r.passed) std::fprintf(out, "    failure: %s\n", r.message.c_str());
}

void print_probe_line(FILE* out, const BandwidthProbe& bw, const ComputeProbe* compute, double parallel_region_s,
                      double round_trip_min_s, double round_trip_max_s) {
  std::fprintf(out,
               "# probes, %d thread(s): copy %.2f GB/s, copy non-temporal %.2f GB/s, triad %.2f GB/s "
               "(arrays of %.0f MiB) -> limit %.2f GB/s",
               bw.threads, bw.copy_gbps, bw.copy_nt_gbps, bw.triad_gbps, bw.array_bytes / 1048576.0, bw.limit_gbps());
  if (compute)
    std::fprintf(out, "; fp32 FMA (%s) %.1f GFLOP/s, bf16 dot %.1f GFLOP/s", compute->isa.c_str(),
                 compute->fma_gflops, compute->bf16_dot_gflops);
  if (compute && compute->amx_bf16_gflops > 0)
    std::fprintf(out, ", AMX bf16 %.0f GFLOP/s", compute->amx_bf16_gflops);
  std::fprintf(out, "; empty parallel region %.2f us", parallel_region_s * 1e6);
  if (round_trip_max_s > 0)  // the host may move the vCPUs during a run
    std::fprintf(out, "; a cache line's round trip between cores %.0f-%.0f ns", round_trip_min_s * 1e9,
                 round_trip_max_s * 1e9);
  std::fprintf(out, "\n");
}

namespace {

std::string quoted(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      r += buf;
    } else r += c;
  }
  return r + "\"";
}

std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char* kind_name(CaseKind k) {
  switch (k) {
    case CaseKind::kRope: return "rope";
    case CaseKind::kGdrPrefill: return "gdr_prefill";
    case CaseKind::kGdrDecode: return "gdr_decode";
    case CaseKind::kConv: return "conv";
  }
  return "?";
}

}  // namespace

double judged_ratio(const CaseResult& r) {
  if (r.kind == CaseKind::kGdrDecode) return r.state_ratio;
  if (r.slice_gbps > 0) return r.slice_ratio;
  return counts_flops(r.kind) ? r.flops_ratio : r.ratio;
}

const char* judged_limit(const CaseResult& r) {
  if (r.kind == CaseKind::kGdrDecode) return "copy (state traffic)";
  if (r.slice_gbps > 0) return r.slice_gbps < r.limit_gbps ? "slice probe" : "copy";
  return counts_flops(r.kind) ? "fp32 FMA peak" : "copy";
}

void print_summary(FILE* out, const std::vector<CaseResult>& results) {
  std::vector<std::pair<std::string, int>> groups;  // (suite, threads) in first-seen order
  for (const CaseResult& r : results)
    if (std::find(groups.begin(), groups.end(), std::make_pair(r.suite, r.threads)) == groups.end())
      groups.emplace_back(r.suite, r.threads);
  const bool cold = std::any_of(results.begin(), results.end(), [](const CaseResult& r) { return r.cache == "cold"; });
  std::fprintf(out, "# summary, ISA %s%s: per suite and thread count, the worst case's fraction of its limit, and the "
                    "median over the suite's cases\n",
               isa_name(active_isa()), cold ? ", caches cold (--cold)" : "");
  for (const auto& g : groups) {
    std::vector<double> ratios;
    const CaseResult* worst = nullptr;
    for (const CaseResult& r : results) {
      if (r.suite != g.first || r.threads != g.second || !r.passed) continue;
      ratios.push_back(judged_ratio(r));
      if (worst == nullptr || judged_ratio(r) < judged_ratio(*worst)) worst = &r;
    }
    if (worst == nullptr) continue;
    std::sort(ratios.begin(), ratios.end());
    const double median = median_of_sorted(ratios);
    std::fprintf(out, "# %-20s %d thr: worst %5.1f %% of %s (%s %s %s), median %5.1f %% over %zu case(s)\n",
                 g.first.c_str(), g.second, 100 * judged_ratio(*worst), judged_limit(*worst), worst->op.c_str(),
                 worst->dtype.c_str(), worst->shape.c_str(), 100 * median, ratios.size());
  }
}

bool write_json(const std::string& path, const std::vector<CaseResult>& results) {
  std::ostringstream o;
  o << "[\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    o << "  {\"op\": " << quoted(r.op) << ", \"suite\": " << quoted(r.suite) << ", \"kind\": " << quoted(kind_name(r.kind))
      << ", \"dtype\": " << quoted(r.dtype) << ", \"shape\": " << quoted(r.shape) << ", \"threads\": " << r.threads
      << ", \"reps\": " << r.reps << ", \"cache\": " << quoted(r.cache) << ", \"time_min_s\": " << number(r.time_min_s)
      << ", \"time_median_s\": " << number(r.time_median_s) << ", \"bytes\": " << number(r.bytes)
      << ", \"gbps\": " << number(r.gbps) << ", \"limit_gbps\": " << number(r.limit_gbps)
      << ", \"ratio\": " << number(r.ratio) << ", \"copy_gbps\": " << number(r.copy_gbps)
      << ", \"copy_nt_gbps\": " << number(r.copy_nt_gbps) << ", \"triad_gbps\": " << number(r.triad_gbps)
      << ", \"parallel_region_s\": " << number(r.parallel_region_s)
      << ", \"core_round_trip_s\": " << number(r.core_round_trip_s) << ", \"max_err\": " << number(r.max_err)
      << ", \"passed\": " << (r.passed ? "true" : "false") << ", \"isa\": " << quoted(isa_name(active_isa()))
      << ", \"judged_ratio\": " << number(judged_ratio(r)) << ", \"judged_limit\": " << quoted(judged_limit(r));
    if (counts_flops(r.kind))
      o << ", \"flops\": " << number(r.flops) << ", \"gflops\": " << number(r.gflops)
        << ", \"limit_gflops\": " << number(r.limit_gflops) << ", \"flops_ratio\": " << number(r.flops_ratio)
        << ", \"bf16_dot_gflops\": " << number(r.bf16_dot_gflops) << ", \"amx_bf16_gflops\": " << number(r.amx_bf16_gflops)
        << ", \"tokens_per_s\": " << number(r.tokens_per_s);
    if (r.kind == CaseKind::kGdrDecode)
      o << ", \"state_gbps\": " << number(r.state_gbps) << ", \"state_ratio\": " << number(r.state_ratio);
    if (r.slice_gbps > 0)
      o << ", \"slice_gbps\": " << number(r.slice_gbps) << ", \"slice_ratio\": " << number(r.slice_ratio)
        << ", \"slice_pattern\": " << quoted(r.slice_pattern);
    if (r.has_overhead)
      o << ", \"aclnn_call_s\": " << number(r.aclnn_call_s) << ", \"cpp_call_s\": " << number(r.cpp_call_s)
        << ", \"aclnn_overhead_s\": " << number(r.aclnn_overhead_s)
        << ", \"cpp_overhead_s\": " << number(r.cpp_overhead_s);
    if (r.paired_baseline_min_s > 0)
      o << ", \"paired_baseline\": " << quoted(r.paired_baseline)
        << ", \"paired_baseline_min_s\": " << number(r.paired_baseline_min_s)
        << ", \"paired_ratio\": " << number(r.time_min_s / r.paired_baseline_min_s)
        << ", \"paired_median_ratio\": " << number(r.paired_median_ratio);
    if (!r.check_note.empty()) o << ", \"check_note\": " << quoted(r.check_note);
    if (!r.passed) o << ", \"message\": " << quoted(r.message);
    o << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  o << "]\n";
  std::ofstream f(path);
  if (!f) return false;
  f << o.str();
  return static_cast<bool>(f);
}

}  // namespace bench
}  // namespace txops
