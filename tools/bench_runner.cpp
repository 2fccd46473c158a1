// bench_runner.cpp — the `txops bench` loop. Probes first; then for each selected case: build it (tensors
// filled with fixed seeds), and on each thread count restore the inputs, run once, check against the fp64
// reference (computed once, after the first successful run) and the first thread count's bits (a failed
// status, an out-of-tolerance output or differing bits fail the case), warm up, time adaptive repetitions;
// short probes between cases and full ones at the end; finally divide by the best probes of each thread count.
#include "bench_runner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "bench_case.h"
#include "bench_report.h"
#include "probes.h"

namespace txops {
namespace bench {
namespace {

struct Timing {
  double min_s = 0, median_s = 0;
  int reps = 0;
};

// Times `fn` (after one warm-up call): `reps` calls, or when 0 as many as fit in ~target_s (bounded). With an
// evictor, the caches are evicted before every call (the eviction is not timed). `before` runs, untimed, ahead of
// every call (and of its eviction).
template <class Fn, class Before>
Timing time_calls_after(Fn fn, Before before, int reps, double target_s, int min_reps, int max_reps,
                        CacheEvictor* evictor) {
  before();
  if (evictor != nullptr) evictor->evict();
  double t0 = now_seconds();
  fn();
  const double first = now_seconds() - t0;
  if (reps <= 0) {
    const double fit = target_s / std::max(first, 1e-9);
    reps = static_cast<int>(std::min<double>(max_reps, std::max<double>(min_reps, fit)));
  }
  std::vector<double> times(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    before();
    if (evictor != nullptr) evictor->evict();
    t0 = now_seconds();
    fn();
    times[i] = now_seconds() - t0;
  }
  std::sort(times.begin(), times.end());
  Timing t;
  t.reps = reps;
  t.min_s = times.front();
  t.median_s = median_of_sorted(times);
  return t;
}

template <class Fn>
Timing time_calls(Fn fn, int reps, double target_s, int min_reps, int max_reps, CacheEvictor* evictor = nullptr) {
  return time_calls_after(fn, [] {}, reps, target_s, min_reps, max_reps, evictor);
}

// As time_calls, with `baseline` timed (its caches evicted first, as fn's) ahead of every call of fn: both minima
// from the same minutes (BenchCase::run_paired_baseline). Also the median over the pairs of fn's time over the
// baseline's just before it, which a moment of the host that only one of the two minima met does not move.
struct PairedTiming {
  Timing fn;
  double baseline_min_s = 0, median_pair_ratio = 0;
};
template <class Fn, class Base>
PairedTiming time_calls_paired(Fn fn, Base baseline, int reps, double target_s, int min_reps, int max_reps,
                               CacheEvictor* evictor) {
  PairedTiming out;
  double last_baseline = 0;
  std::vector<double> ratios;
  const auto timed_baseline = [&] {
    if (evictor != nullptr) evictor->evict();
    const double t0 = now_seconds();
    baseline();
    last_baseline = now_seconds() - t0;
    if (out.baseline_min_s == 0 || last_baseline < out.baseline_min_s) out.baseline_min_s = last_baseline;
  };
  const auto timed_fn = [&] {
    const double t0 = now_seconds();
    fn();
    ratios.push_back((now_seconds() - t0) / std::max(last_baseline, 1e-12));
  };
  out.fn = time_calls_after(timed_fn, timed_baseline, reps, target_s, min_reps, max_reps, evictor);
  ratios.erase(ratios.begin());  // the warm-up pair
  std::sort(ratios.begin(), ratios.end());
  out.median_pair_ratio = median_of_sorted(ratios);
  return out;
}

bool selected(const CaseSpec& s, const BenchOptions& o, Dims* dims) {
  if (!o.op.empty() && s.op != o.op) return false;
  if (!o.suite.empty() && s.suite != o.suite) return false;
  if (o.has_dtype ? s.dtype != o.dtype : s.optional_dtype) return false;
  *dims = s.dims;
  if (!o.shape.empty()) {
    Dims override_dims;
    std::string error;
    Dims::parse(o.shape, &override_dims, &error);
    for (const auto& kv : override_dims.items()) {
      if (!dims->has(kv.first)) return false;
      dims->set(kv.first, kv.second);
    }
  }
  return true;
}

struct Probes {
  std::map<int, BandwidthProbe> bandwidth;
  std::map<int, ComputeProbe> compute;
  std::map<int, double> parallel_region_s;
  std::map<int, double> round_trip_min_s, round_trip_max_s;  // over the run: the host may move the vCPUs
  void add_round_trip(int threads, double s) {
    if (round_trip_min_s.count(threads) == 0 || s < round_trip_min_s[threads]) round_trip_min_s[threads] = s;
    round_trip_max_s[threads] = std::max(round_trip_max_s[threads], s);
  }
};


// Divides a measured case by the probes of its thread count.
void apply_limits(const BandwidthProbe& bw, const ComputeProbe* cp, CaseResult* r) {
  r->limit_gbps = bw.limit_gbps();
  r->copy_gbps = bw.copy_gbps;
  r->copy_nt_gbps = bw.copy_nt_gbps;
  r->triad_gbps = bw.triad_gbps;
  if (r->time_min_s <= 0) return;
  r->gbps = r->bytes / r->time_min_s * 1e-9;
  r->ratio = r->limit_gbps > 0 ? r->gbps / r->limit_gbps : 0;
  if (counts_flops(r->kind) && cp != nullptr) {
    r->gflops = r->flops / r->time_min_s * 1e-9;
    r->limit_gflops = cp->fma_gflops;
    r->bf16_dot_gflops = cp->bf16_dot_gflops;
    r->amx_bf16_gflops = cp->amx_bf16_gflops;
    r->flops_ratio = cp->fma_gflops > 0 ? r->gflops / cp->fma_gflops : 0;
    r->tokens_per_s = r->tokens / r->time_min_s;
  }
  if (r->slice_gbps > 0 && r->limit_gbps > 0)
    r->slice_ratio = r->gbps / std::min(r->slice_gbps, r->limit_gbps);
  if (r->kind == CaseKind::kGdrDecode) {
    r->state_gbps = r->state_bytes / r->time_min_s * 1e-9;
    r->state_ratio = r->limit_gbps > 0 ? r->state_gbps / r->limit_gbps : 0;
  }
}

// Builds one case and measures it on every thread count: check (reference + bit identity), timing,
// per-call overhead. Appends one result per thread count.
void measure_case(const CaseSpec& spec, const Dims& dims, const BenchOptions& options, double target_s, int index,
                  int total, CacheEvictor* evictor, std::vector<CaseResult>* results) {
  const std::string shape = spec.variant.empty() ? dims.str() : dims.str() + "," + spec.variant;
  std::fprintf(stderr, "[%d/%d] %s %s %s %s: preparing...\n", index, total, spec.suite.c_str(), spec.op.c_str(),
               dtype_name(spec.dtype), shape.c_str());
  std::unique_ptr<BenchCase> bc, minimal;
  std::string build_error;
  try {
    bc = spec.make(spec, dims);
    if (!spec.overhead_dims.items().empty()) minimal = spec.make(spec, spec.overhead_dims);
  } catch (const std::exception& e) {
    build_error = std::string("cannot build the case: ") + e.what();
  }
  bool have_reference = false, have_hash = false;
  uint64_t first_hash = 0;
  int first_threads = 0;
  for (int t : options.threads) {
    CaseResult r;
    r.suite = spec.suite;
    r.op = spec.op;
    r.dtype = dtype_name(spec.dtype);
    r.shape = shape;
    r.kind = spec.kind;
    r.threads = t;
    if (!bc) r.message = build_error;
    if (bc) {
      set_num_threads(t);
      r.bytes = bc->bytes;
      r.flops = bc->flops;
      r.state_bytes = bc->state_bytes;
      r.tokens = bc->tokens;
      r.check_note = bc->check_note;
      bc->reset();
      const Status st = bc->run();
      if (st.ok() && !have_reference) {
        std::fprintf(stderr, "[%d/%d] computing the fp64 reference...\n", index, total);
        bc->compute_reference();
        have_reference = true;
      }
      CheckResult check = st.ok() ? bc->check() : failed_run(st);
      if (st.ok()) {  // every thread count must give the same bits
        const uint64_t h = hash_outputs(bc->outputs());
        if (!have_hash) {
          have_hash = true;
          first_hash = h;
          first_threads = t;
        } else if (h != first_hash && check.passed) {
          check.passed = false;
          check.message = "outputs on " + std::to_string(t) + " threads differ from those on " +
                          std::to_string(first_threads) + " (results must be bit-identical for any thread count)";
        }
      }
      r.passed = check.passed;
      r.max_err = check.max_err;
      r.message = check.message;
      if (st.ok()) {
        const bool small = bc->bytes < 4e6;
        // --cold: the large cases' calls (the decode GDR and conv cases too: a serving step finds its states evicted
        // by the other layers'), at most 10 of them (each eviction reads 1.5x the last-level cache). Small cases stay
        // warm: their figure of merit is the time of a call whose inputs were just made (docs/measurement.md). With
        // --quick every case is small, and all are evicted (the smoke test runs the eviction).
        CacheEvictor* const case_evictor = small && !options.quick ? nullptr : evictor;
        const int max_reps = case_evictor != nullptr ? 10 : small ? 20000 : 200;
        const int min_reps = std::min(small ? 20 : 3, max_reps);
        Timing tm;
        if (bc->paired_baseline.empty()) {
          tm = time_calls([&] { (void)bc->run(); }, options.reps, target_s, min_reps, max_reps, case_evictor);
        } else {
          const Status base_st = bc->run_paired_baseline();
          if (!base_st.ok() && r.passed) {
            r.passed = false;
            r.message = bc->paired_baseline + ": " + base_st.message();
          }
          const PairedTiming pt = time_calls_paired([&] { (void)bc->run(); }, [&] { (void)bc->run_paired_baseline(); },
                                                    options.reps, target_s, min_reps, max_reps, case_evictor);
          tm = pt.fn;
          r.paired_baseline_min_s = pt.baseline_min_s;
          r.paired_median_ratio = pt.median_pair_ratio;
          r.paired_baseline = bc->paired_baseline;
        }
        r.cache = case_evictor != nullptr ? "cold" : "warm";
        r.reps = tm.reps;
        r.time_min_s = tm.min_s;
        r.time_median_s = tm.median_s;
        if (bc->slice_rows > 0) {  // the op's own access pattern, on the same thread count, right after it
          r.slice_gbps = probe_slice(t, bc->slice_rows, bc->slice_row_bytes, bc->slice_lo, bc->slice_hi,
                                     options.quick ? 1 : 10, case_evictor);
          r.slice_pattern = "bytes [" + std::to_string(bc->slice_lo) + ", " + std::to_string(bc->slice_hi) + ") of " +
                            std::to_string(bc->slice_row_bytes) + "-byte rows, in place";
        }
        if (minimal && bc->has_aclnn()) {
          const int calls = options.quick ? 200 : 5000;
          r.has_overhead = true;
          r.cpp_call_s = tm.median_s;
          r.aclnn_call_s = time_calls([&] { (void)bc->run_aclnn(); }, 0, target_s, 20, calls).median_s;
          r.cpp_overhead_s = time_calls([&] { (void)minimal->run(); }, calls, 0, 0, 0).median_s;
          r.aclnn_overhead_s = time_calls([&] { (void)minimal->run_aclnn(); }, calls, 0, 0, 0).median_s;
          const Status acl_st = bc->run_aclnn();
          if (!acl_st.ok() && r.passed) {
            r.passed = false;
            r.message = "aclnn path: " + acl_st.message();
          }
        }
      }
    }
    if (r.passed)
      std::fprintf(stderr, "[%d/%d] %s %s %s threads=%d: ok, min %.4f ms, %.2f GB/s, max_err %.2e\n", index, total,
                   spec.suite.c_str(), spec.op.c_str(), r.dtype.c_str(), t, r.time_min_s * 1e3,
                   r.time_min_s > 0 ? r.bytes / r.time_min_s * 1e-9 : 0.0, r.max_err);
    else
      std::fprintf(stderr, "[%d/%d] %s %s %s threads=%d: FAILED: %s\n", index, total, spec.suite.c_str(),
                   spec.op.c_str(), r.dtype.c_str(), t, r.message.c_str());
    results->push_back(r);
  }
}

}  // namespace

int run_bench(const BenchOptions& options) {
  if (!options.shape.empty()) {
    Dims d;
    std::string error;
    if (!Dims::parse(options.shape, &d, &error)) {
      std::fprintf(stderr, "txops bench: %s\n", error.c_str());
      return 2;
    }
  }
  std::vector<CaseSpec> all = rope_suites(options.quick);
  for (CaseSpec& s : rope_family_suites(options.quick)) all.push_back(std::move(s));
  for (CaseSpec& s : gdr_suites(options.quick)) all.push_back(std::move(s));
  for (CaseSpec& s : conv_suites(options.quick)) all.push_back(std::move(s));
  // Table order: suite (as performance.md lists them), op, variant, then dtype (generation order).
  const std::vector<std::string> suite_order = {"llama3-8b-train", "llama3-8b-decode", "deepseek-v3-mla",
                                                "deepseek-v3-partial", "llama3-8b-rotary", "vllm-rope-cache",
                                                "qwen3-next-prefill", "qwen3-next-serving",
                                                "qwen3-next-decode"};
  auto rank = [&](const CaseSpec& s) {
    return std::find(suite_order.begin(), suite_order.end(), s.suite) - suite_order.begin();
  };
  std::stable_sort(all.begin(), all.end(), [&](const CaseSpec& a, const CaseSpec& b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    if (a.op != b.op) return a.op < b.op;
    return a.variant < b.variant;
  });
  std::vector<std::pair<CaseSpec, Dims>> cases;
  for (const CaseSpec& s : all) {
    Dims d;
    if (selected(s, options, &d)) cases.emplace_back(s, d);
  }
  if (options.list) {
    for (const auto& c : cases)
      std::printf("%-20s %-32s %-5s %s\n", c.first.suite.c_str(), c.first.op.c_str(), dtype_name(c.first.dtype),
                  (c.second.str() + (c.first.variant.empty() ? "" : "," + c.first.variant)).c_str());
    return 0;
  }
  if (cases.empty()) {
    std::fprintf(stderr, "txops bench: no case matches the selection (see txops bench --help)\n");
    std::printf("0 passed, 0 failed\n");
    return 2;
  }

  // Probes on every thread count, in this process: once before the cases and once after; each limit is the
  // better of the two, so a probe that met a noisy moment does not inflate the ratios.
  bool any_gdr = false;
  for (const auto& c : cases) any_gdr = any_gdr || counts_flops(c.first.kind);
  Probes probes;
  const size_t array_bytes = options.quick ? (size_t{16} << 20) : default_probe_array_bytes();
  auto run_probes = [&](const char* when) {
    for (int t : options.threads) {
      std::fprintf(stderr, "probing memory bandwidth%s on %d thread(s) (%s)...\n", any_gdr ? " and compute peak" : "",
                   t, when);
      const double region = probe_parallel_region(t, options.quick ? 200 : 2000);
      if (probes.parallel_region_s.count(t) == 0 || region < probes.parallel_region_s[t])
        probes.parallel_region_s[t] = region;
      probes.add_round_trip(t, probe_core_round_trip(t, options.quick ? 200 : 2000));
      BandwidthProbe bw = probe_bandwidth(t, array_bytes, options.quick ? 2 : 6);
      BandwidthProbe& best = probes.bandwidth[t];
      if (best.threads == 0 || bw.limit_gbps() > best.limit_gbps()) best = bw;
      if (any_gdr) {
        ComputeProbe cp = probe_compute(t, options.quick ? 0.02 : 0.1, options.quick ? 2 : 4);
        ComputeProbe& best_cp = probes.compute[t];
        best_cp.isa = cp.isa;
        best_cp.threads = t;
        best_cp.fma_gflops = std::max(best_cp.fma_gflops, cp.fma_gflops);
        best_cp.bf16_dot_gflops = std::max(best_cp.bf16_dot_gflops, cp.bf16_dot_gflops);
        best_cp.amx_bf16_gflops = std::max(best_cp.amx_bf16_gflops, cp.amx_bf16_gflops);
      }
    }
  };
  run_probes("before the cases");
  // Between cases, a short copy probe (and FMA probe when GDR cases run) per thread count keeps the limits at
  // the best the machine showed during the run, as the op times are minima too.
  auto refresh_probes = [&]() {
    if (options.quick) return;
    for (int t : options.threads) {
      BandwidthProbe bw = probe_bandwidth(t, array_bytes / 2, 1);
      BandwidthProbe& best = probes.bandwidth[t];
      if (bw.limit_gbps() > best.limit_gbps()) best = bw;
      if (any_gdr) {
        const ComputeProbe cp = probe_compute(t, 0.03, 1);
        probes.compute[t].fma_gflops = std::max(probes.compute[t].fma_gflops, cp.fma_gflops);
        probes.compute[t].bf16_dot_gflops = std::max(probes.compute[t].bf16_dot_gflops, cp.bf16_dot_gflops);
        probes.compute[t].amx_bf16_gflops = std::max(probes.compute[t].amx_bf16_gflops, cp.amx_bf16_gflops);
      }
    }
  };

  const double target_s = options.quick ? 0.02 : 0.4;
  std::unique_ptr<CacheEvictor> evictor;
  if (options.cold) {
    evictor.reset(new CacheEvictor());
    std::fprintf(stderr, "--cold: every timed call of a large case follows a read of %.0f MiB (1.5x the last-level cache)\n",
                 evictor->bytes() / 1048576.0);
  }
  std::vector<CaseResult> results;
  const int total = static_cast<int>(cases.size());
  int index = 0;
  for (const auto& entry : cases) {
    ++index;
    const size_t first_new = results.size();
    measure_case(entry.first, entry.second, options, target_s, index, total, evictor.get(), &results);
    refresh_probes();
    // The cores' distance right after the case, for its records (it can change within a run).
    for (int t : options.threads) {
      if (t < 2) continue;
      const double round_trip = probe_core_round_trip(t, options.quick ? 20 : 200);
      probes.add_round_trip(t, round_trip);
      for (size_t k = first_new; k < results.size(); ++k)
        if (results[k].threads == t) results[k].core_round_trip_s = round_trip;
    }
  }
  set_num_threads(0);
  run_probes("after the cases");

  // Ratios against the limits, then the table (stdout) and the records.
  for (int t : options.threads)
    print_probe_line(stdout, probes.bandwidth[t], any_gdr ? &probes.compute[t] : nullptr,
                     probes.parallel_region_s[t], probes.round_trip_min_s[t], probes.round_trip_max_s[t]);
  print_table_header(stdout);
  int passed = 0, failed = 0;
  for (CaseResult& r : results) {
    apply_limits(probes.bandwidth[r.threads], any_gdr ? &probes.compute[r.threads] : nullptr, &r);
    r.parallel_region_s = probes.parallel_region_s[r.threads];
    print_table_row(stdout, r);
    (r.passed ? passed : failed) += 1;
  }
  print_summary(stdout, results);
  if (!options.json.empty() && !write_json(options.json, results))
    std::fprintf(stderr, "txops bench: cannot write %s\n", options.json.c_str());
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace bench
}  // namespace txops
