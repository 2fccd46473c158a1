// txops.cpp — the `txops` command: `txops bench` (real-model shape suites timed against same-run machine
// limits and checked against the fp64 references; what `make bench` runs) and `txops info` (ISA, threads,
// probes). Argument parsing only; the work is in bench_runner.cpp.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_runner.h"
#include "bench_util.h"
#include "probes.h"
#include "txops/txops.h"

namespace {

const char kUsage[] =
    "usage: txops bench [options]   run the shape suites (see docs/measurement.md)\n"
    "       txops info              CPU features, threads and a quick probe\n"
    "\n"
    "bench options:\n"
    "  --suite NAME      llama3-8b-train | llama3-8b-decode | deepseek-v3-mla | deepseek-v3-partial |\n"
    "                    llama3-8b-rotary | vllm-rope-cache | qwen3-next-prefill | qwen3-next-decode |\n"
    "                    qwen3-next-train | qwen3-next-serving (default: all)\n"
    "  --op NAME         interleave_rope | inplace_partial_rotary_mul | inplace_partial_rotary_mul_grad |\n"
    "                    apply_rotary_pos_emb | apply_rotary_pos_emb_grad | rotary_position_embedding |\n"
    "                    rotary_position_embedding_grad | rope_with_sin_cos_cache | chunk_gated_delta_rule |\n"
    "                    chunk_gated_delta_rule_grad | recurrent_gated_delta_rule | causal_conv1d_fn |\n"
    "                    causal_conv1d_update (default: all)\n"
    "  --dtype D         bf16 | fp16 | fp32 (default: RoPE in all three, gated delta rule in bf16)\n"
    "  --shape SPEC      KEY=VALUE[,KEY=VALUE...]: set those dimensions; only cases that have every KEY run.\n"
    "                    Keys per op: RoPE grad/V2 B,S,Nq,Nk,D; interleave_rope B,N,S,D; partial B,S,N,D,lo,hi\n"
    "                    (slice [lo,hi)); rotary_position_embedding(_grad) B,S,N,D; rope_with_sin_cos_cache\n"
    "                    T,Nq,Nk,D,P (P cache positions); chunk GDR T,B,Nk,Nv,Dk,Dv (qwen3-next-train also\n"
    "                    snapshots: 1 = the forward writes, the backward reads the states every 64 tokens); recurrent\n"
    "                    GDR B,Nk,Nv,Dk,Dv,pool;\n"
    "                    causal_conv1d_fn T,B,dim,K; causal_conv1d_update B,dim,K,lines.\n"
    "                    Example: --op interleave_rope --shape S=1024 (the table's shape column uses this syntax)\n"
    "  --threads LIST    comma-separated thread counts (default 1,2)\n"
    "  --reps N          timed repetitions per case (default: adaptive, ~0.4 s per case)\n"
    "  --json FILE       write one JSON record per case and thread count\n"
    "  --cold            read 1.5x the last-level cache before every timed call of a large case (>= 4 MB), so\n"
    "                    it finds its tensors in DRAM (as where they do not fit the cache); at most 10 such calls\n"
    "  --quick           tiny shapes and short probes (CI smoke test)\n"
    "  --list            print the selected cases and exit\n"
    "\n"
    "Output: progress on stderr; probes and a results table on stdout; the last line is 'N passed, N failed'.\n"
    "Exit code 0 iff no case failed (a failure: the op returned an error or its output is out of tolerance\n"
    "against the fp64 reference). Counting rules and probes: bench/README.md.\n";

bool parse_threads(const std::string& text, std::vector<int>* out) {
  out->clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1024) return false;
    out->push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return !out->empty();
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "txops bench: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int bench_main(int argc, char** argv) {
  txops::bench::BenchOptions o;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--cold") {
      o.cold = true;
    } else if (a == "--op" || a == "--suite" || a == "--shape" || a == "--json") {
      if (!value(&v)) return usage_error(a + " needs a value");
      (a == "--op" ? o.op : a == "--suite" ? o.suite : a == "--shape" ? o.shape : o.json) = v;
    } else if (a == "--dtype") {
      if (!value(&v) || !txops::bench::parse_dtype(v, &o.dtype))
        return usage_error("--dtype must be bf16, fp16 or fp32, got '" + v + "'");
      o.has_dtype = true;
    } else if (a == "--threads") {
      if (!value(&v) || !parse_threads(v, &o.threads))
        return usage_error("--threads must be a comma-separated list of counts >= 1, got '" + v + "'");
    } else if (a == "--reps") {
      char* end = nullptr;
      const long n = value(&v) ? std::strtol(v.c_str(), &end, 10) : 0;
      if (v.empty() || *end != '\0' || n < 1) return usage_error("--reps must be >= 1, got '" + v + "'");
      o.reps = static_cast<int>(n);
    } else {
      return usage_error("unknown option '" + a + "'");
    }
  }
  return txops::bench::run_bench(o);
}

int info_main() {
  std::printf("txops: active ISA %s, AVX512_BF16 %s, %d thread(s)\n", txops::isa_name(txops::active_isa()),
              txops::cpu_has_avx512_bf16() ? "yes" : "no", txops::num_threads());
  const auto bw = txops::bench::probe_bandwidth(1, txops::bench::default_probe_array_bytes(), 3);
  const auto cp = txops::bench::probe_compute(1, 0.05, 3);
  std::printf("1 thread: copy %.2f GB/s, non-temporal copy %.2f GB/s, triad %.2f GB/s; fp32 FMA (%s) %.1f GFLOP/s, "
              "bf16 dot %.1f GFLOP/s\n",
              bw.copy_gbps, bw.copy_nt_gbps, bw.triad_gbps, cp.isa.c_str(), cp.fma_gflops, cp.bf16_dot_gflops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0) return bench_main(argc - 2, argv + 2);
  if (argc >= 2 && std::strcmp(argv[1], "info") == 0) return info_main();
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("%s", kUsage);
    return 0;
  }
  std::fprintf(stderr, "%s", kUsage);
  return 2;
}
