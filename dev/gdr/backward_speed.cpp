// dev/gdr/backward_speed.cpp — throwaway: the backward (txops::chunk_gated_delta_rule_grad) against the forward
// (txops::chunk_gated_delta_rule) on one Qwen3-Next-like shape: one sequence of T tokens, Nk = 16, Nv = 32,
// Dk = Dv = 128, bf16 activations, fp32 state, g present; wall-clock best of `reps` alternating runs, for each
// thread count given. Prints each time, the ratio, and a hash of the gradients. DEV_SNAPSHOTS=1: the forward
// writes its fp32 snapshots every 64 tokens and the backward reads them. Memory experiments (session 42): DEV_NK /
// DEV_NV other head counts; DEV_HUGE=1 the large buffers on 2 MiB pages; DEV_HEAD_MAJOR=1 the token-major tensors in
// head-major memory (DEV_HM_SET=q,k,v,beta,g,out,dout,dq,dk,dv,db,dg,cv: only those); in-process A/B of the backward
// (the host's drift cancelled): DEV_AB_HM=1 token-major against head-major views of the same memory,
// DEV_AB_ENV=NAME=a,b an environment knob read at plan time (e.g. TXOPS_GRAINS_PER_PART=1,8); DEV_AB_FORWARD=1 runs
// the forward (untimed) before each backward, as the bench's paired loop and training do.
// Usage: BUILD_DIR=build-bwd dev/gdr/build.sh backward_speed; build-bwd/dev_backward_speed [T] [reps] [threads...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "txops/txops.h"

using namespace txops;

static bool g_head_major = std::getenv("DEV_HEAD_MAJOR") != nullptr;

struct Buf {
  Buf(DType d, std::vector<int64_t> s) : dtype(d), shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    // DEV_HUGE=1: on 2 MiB pages (madvise; transparent huge pages are `madvise` on the hosts measured; never freed).
    static const bool huge = std::getenv("DEV_HUGE") != nullptr;
    const size_t size = static_cast<size_t>(n) * dtype_size(d);
    if (huge && size >= (size_t{2} << 20)) {
      const size_t align = size_t{2} << 20, rounded = (size + align - 1) / align * align;
      base = static_cast<uint8_t*>(std::aligned_alloc(align, rounded));
      madvise(base, rounded, MADV_HUGEPAGE);
      std::memset(base, 0, size);
    } else {
      bytes.assign(size + 64, 0);  // 64-byte aligned, as the bench's and PyTorch's buffers (the streamed stores need it)
      base = bytes.data() + (64 - reinterpret_cast<uintptr_t>(bytes.data()) % 64) % 64;
    }
    nbytes = size;
  }
  uint8_t* base = nullptr;
  size_t nbytes = 0;
  // DEV_HEAD_MAJOR=1: the token-major tensors ((T, H, D), (T, H)) in head-major memory, passed as strided views.
  TensorView view() {
    const bool hm = g_head_major;
    const int32_t ndim = static_cast<int32_t>(shape.size());
    if (!hm || !token_major) return TensorView::make(base, dtype, ndim, shape.data(), nullptr);
    std::vector<int64_t> st = shape.size() == 3 ? std::vector<int64_t>{shape[2], shape[0] * shape[2], 1}
                                                : std::vector<int64_t>{1, shape[0]};
    return TensorView::make(base, dtype, ndim, shape.data(), st.data());
  }
  bool token_major = false;
  int64_t numel() const { return static_cast<int64_t>(nbytes / dtype_size(dtype)); }
  void fill(std::mt19937& rng, double lo, double hi) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (int64_t i = 0; i < numel(); ++i) store_f32(base, dtype, i, static_cast<float>(u(rng)));
  }
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int main(int argc, char** argv) {
  const int64_t T = argc > 1 ? std::atoll(argv[1]) : 8192;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<int> thread_counts;
  for (int i = 3; i < argc; ++i) thread_counts.push_back(std::atoi(argv[i]));
  if (thread_counts.empty()) thread_counts = {1, 2};
  // DEV_NK / DEV_NV: other head counts (a smaller working set).
  const int64_t Nk = std::getenv("DEV_NK") ? std::atoll(std::getenv("DEV_NK")) : 16;
  const int64_t Nv = std::getenv("DEV_NV") ? std::atoll(std::getenv("DEV_NV")) : 32, D = 128;
  const DType act = DType::kBF16, st = DType::kF32;
  std::mt19937 rng(1);
  Buf q(act, {T, Nk, D}), k(act, {T, Nk, D}), v(act, {T, Nv, D}), beta(act, {T, Nv}), g(DType::kF32, {T, Nv});
  Buf s0(st, {1, Nv, D, D}), lens(DType::kI32, {1}), out(act, {T, Nv, D}), fin(st, {1, Nv, D, D});
  Buf d_out(act, {T, Nv, D}), d_fin(st, {1, Nv, D, D}), dq(act, {T, Nk, D}), dk(act, {T, Nk, D}),
      dv(act, {T, Nv, D}), db(act, {T, Nv}), dg(DType::kF32, {T, Nv}), ds0(st, {1, Nv, D, D});
  // q, k rows of norm ~1 (uniform entries scaled), g <= 0, 0 < beta < 1.
  const double r = std::sqrt(3.0 / D);
  q.fill(rng, -r, r), k.fill(rng, -r, r), v.fill(rng, -1, 1), beta.fill(rng, 0.1, 0.9), g.fill(rng, -0.5, -0.01);
  s0.fill(rng, -0.1, 0.1), d_out.fill(rng, -1, 1), d_fin.fill(rng, -0.1, 0.1);
  reinterpret_cast<int32_t*>(lens.base)[0] = static_cast<int32_t>(T);
  {  // DEV_HM_SET: which of them (names below, comma-separated; default all)
    const char* set = std::getenv("DEV_HM_SET");
    const std::pair<const char*, Buf*> named[] = {{"q", &q}, {"k", &k}, {"v", &v}, {"beta", &beta}, {"g", &g},
                                                  {"out", &out}, {"dout", &d_out}, {"dq", &dq}, {"dk", &dk},
                                                  {"dv", &dv}, {"db", &db}, {"dg", &dg}};
    const std::string listed = std::string(",") + (set != nullptr ? set : "") + ",";
    for (const auto& nb : named)
      nb.second->token_major = set == nullptr || listed.find(std::string(",") + nb.first + ",") != std::string::npos;
  }
  const TensorView gv = g.view(), dfv = d_fin.view(), dgv = dg.view();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // DEV_SNAPSHOTS=1: the training pair — the forward writes its fp32 snapshots every 64 tokens, the backward
  // reads them (forward_checkpoints) instead of recomputing the states.
  const bool snapshots = std::getenv("DEV_SNAPSHOTS") != nullptr && std::atoi(std::getenv("DEV_SNAPSHOTS")) != 0;
  // DEV_SNAPSHOTS=2: the snapshots in key-major memory order ((R, Nv, Dk, Dv), passed as its transposed view);
  // 3: key-major and the corrected values V' too.
  const int mode = snapshots ? std::atoi(std::getenv("DEV_SNAPSHOTS")) : 0;
  const bool key_major = mode >= 2;
  Buf corrected(DType::kF32, {mode == 3 ? T : 1, Nv, D});
  const char* hm_set = std::getenv("DEV_HM_SET");
  corrected.token_major = mode == 3 && (hm_set == nullptr || std::string(hm_set).find("cv") != std::string::npos);
  const TensorView cvv = corrected.view();
  Buf cps(DType::kF32, {snapshots ? T / 64 : 1, Nv, D, D});
  TensorView cpv = cps.view();
  if (key_major) std::swap(cpv.strides[2], cpv.strides[3]);
  GdrPrefillOptions options;
  if (snapshots) options.checkpoint_every = 64, options.checkpoints = &cpv;
  if (mode == 3) options.corrected_values = &cvv;
  auto forward = [&] {
    Status s = chunk_gated_delta_rule(q.view(), k.view(), v.view(), beta.view(), s0.view(), lens.view(), &gv, scale,
                                      out.view(), fin.view(), options);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.message().c_str()), std::exit(1);
  };
  auto backward = [&] {
    Status s = chunk_gated_delta_rule_grad(q.view(), k.view(), v.view(), beta.view(), s0.view(), lens.view(), &gv,
                                           scale, d_out.view(), &dfv, dq.view(), dk.view(), dv.view(), db.view(),
                                           &dgv, ds0.view(), snapshots ? &cpv : nullptr, mode == 3 ? &cvv : nullptr);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.message().c_str()), std::exit(1);
  };
  std::printf("T=%lld B=1 Nk=%lld Nv=%lld Dk=Dv=%lld bf16 state=fp32 g isa=%s snapshots=%d\n",
              static_cast<long long>(T), static_cast<long long>(Nk), static_cast<long long>(Nv),
              static_cast<long long>(D), isa_name(active_isa()), snapshots ? 1 : 0);
  for (int threads : thread_counts) {
    set_num_threads(threads);
    forward(), backward();  // warm-up (workspace allocation, pages)
    double best_f = 1e30, best_b = 1e30;
    // DEV_BACKWARD_ONLY=1: time (and profile) the backward alone.
    const bool backward_only = std::getenv("DEV_BACKWARD_ONLY") != nullptr;
    // DEV_AB_HM=1: the backward alternately on the token-major views and the head-major ones (DEV_HM_SET's tensors;
    // the same memory read in another order: the values differ, the work does not).
    if (std::getenv("DEV_AB_HM") != nullptr) {
      double best[2] = {1e30, 1e30};
      for (int i = 0; i < 2 * reps; ++i) {
        g_head_major = i % 2 == 1;
        const double t0 = now();
        backward();
        best[i % 2] = std::min(best[i % 2], now() - t0);
      }
      g_head_major = false;
      std::printf("threads=%d A/B token-major %.1f ms, head-major (%s) %.1f ms, B/A %.3f\n", threads, best[0] * 1e3,
                  std::getenv("DEV_HM_SET") ? std::getenv("DEV_HM_SET") : "all", best[1] * 1e3, best[1] / best[0]);
      continue;
    }
    // DEV_AB_ENV="NAME=a,b": the backward alternately with NAME=a and NAME=b (setenv between calls: read at plan
    // time), min of each (in-process A/B, the host's drift cancelled).
    if (const char* ab = std::getenv("DEV_AB_ENV")) {
      const std::string spec(ab), name = spec.substr(0, spec.find('=')), vals = spec.substr(spec.find('=') + 1);
      const std::string a = vals.substr(0, vals.find(',')), b2 = vals.substr(vals.find(',') + 1);
      double best[2] = {1e30, 1e30};
      for (int i = 0; i < 2 * reps; ++i) {
        setenv(name.c_str(), (i % 2 ? b2 : a).c_str(), 1);
        if (std::getenv("DEV_AB_FORWARD") != nullptr) forward();  // as in training: the forward's record just written
        const double t0 = now();
        backward();
        best[i % 2] = std::min(best[i % 2], now() - t0);
      }
      std::printf("threads=%d A/B %s: %s %.1f ms, %s %.1f ms, B/A %.3f\n", threads, name.c_str(), a.c_str(),
                  best[0] * 1e3, b2.c_str(), best[1] * 1e3, best[1] / best[0]);
      continue;
    }
    for (int i = 0; i < reps; ++i) {
      double t0 = now();
      if (!backward_only) forward();
      best_f = std::min(best_f, now() - t0);
      t0 = now();
      backward();
      best_b = std::min(best_b, now() - t0);
    }
    const double flops = 6.0 * D * D * T * Nv;  // the forward's counted FLOPs
    std::printf("threads=%d forward %.1f ms (%.1f GFLOP/s counted)  backward %.1f ms  ratio %.2f\n", threads,
                best_f * 1e3, flops / best_f * 1e-9, best_b * 1e3, best_b / best_f);
    std::fflush(stdout);
  }
  // FNV-1a over the gradients' bytes: a layout change that keeps the arithmetic must keep this.
  uint64_t hash = 1469598103934665603ull;
  for (const Buf* g : {&dq, &dk, &dv, &db, &dg, &ds0})
    for (size_t i = 0; i < g->nbytes; ++i) hash = (hash ^ g->base[i]) * 1099511628211ull;
  std::printf("gradients hash %016llx\n", static_cast<unsigned long long>(hash));
  return 0;
}
