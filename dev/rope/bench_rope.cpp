// bench_rope.cpp — rope-ops' throwaway timing program (not built by CMake): the large suite shapes of
// docs/measurement.md against a same-run non-temporal copy of the same number of bytes, 1 and 2 threads.
// Effective bandwidth = (bytes the op must read + bytes it must write) / time; ratio = op GB/s / copy GB/s.
// Build and run: see dev/rope/README.md.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "txops/txops.h"

using namespace txops;

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes((n + 63) / 64 * 64) {
    p = std::aligned_alloc(64, bytes);
    // small random-ish values (any bit pattern of a 16-bit float in [-2, 2] is fine for timing)
    uint16_t* h = static_cast<uint16_t*>(p);
    for (size_t i = 0; i < bytes / 2; ++i) h[i] = static_cast<uint16_t>(0x3C00 + (i * 2654435761u >> 22) % 0x3FF);
  }
  ~Buffer() { std::free(p); }
  // Every element = value (cos/sin of one angle, so repeated in-place rotations keep x's magnitude and never
  // drift into denormals, which would time the FPU's slow path instead of the kernel).
  void fill(DType dt, float value) {
    const size_t n = bytes / dtype_size(dt);
    for (size_t i = 0; i < n; ++i) {
      if (dt == DType::kF32) {
        static_cast<float*>(p)[i] = value;
      } else {
        uint32_t u;
        std::memcpy(&u, &value, 4);
        uint16_t h = static_cast<uint16_t>(u >> 16);  // bf16 (truncation is fine for timing data)
        if (dt == DType::kF16) h = value == 0.6f ? 0x38CD : 0x3A66;  // 0.6, 0.8 in fp16
        static_cast<uint16_t*>(p)[i] = h;
      }
    }
  }
};

// Streaming copy of `bytes` (read src, write dst with non-temporal stores), static split over threads.
__attribute__((target("avx512f"))) static void nt_copy(const void* src, void* dst, size_t bytes, int threads) {
  const size_t blocks = bytes / 64;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < blocks; ++i) {
    const __m512i v = _mm512_load_si512(static_cast<const char*>(src) + i * 64);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(static_cast<char*>(dst) + i * 64), v);
  }
  _mm_sfence();
}

struct Timing {
  double min_s, median_s;
};
static Timing time_it(const std::function<void()>& fn, int reps);

// The same-run limit: a non-temporal copy moving `bytes` in total (bytes/2 read, bytes/2 written).
static Timing copy_limit(double bytes, int threads, int reps) {
  const size_t half = static_cast<size_t>(bytes / 2) / 64 * 64;
  Buffer src(half), dst(half);
  return time_it([&] { nt_copy(src.p, dst.p, half, threads); }, reps);
}

static Timing time_it(const std::function<void()>& fn, int reps) {
  fn();  // warm-up (page faults)
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    fn();
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

static void report(const char* name, DType dt, int threads, double bytes, const Timing& op, const Timing& copy) {
  const double op_gbs = bytes / op.min_s / 1e9, copy_gbs = bytes / copy.min_s / 1e9;
  std::printf("%-44s %-4s thr=%d  op %7.2f ms (med %7.2f) %6.2f GB/s | nt-copy %6.2f GB/s | ratio %5.1f%%\n", name,
              dtype_name(dt), threads, op.min_s * 1e3, op.median_s * 1e3, op_gbs, copy_gbs, 100.0 * op_gbs / copy_gbs);
  std::fflush(stdout);
}

static void check(const Status& st) {
  if (!st.ok()) {
    std::fprintf(stderr, "op failed: %s\n", st.message().c_str());
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const std::string only = argc > 2 ? argv[2] : "";
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    const size_t es = dtype_size(dt);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      // deepseek-v3-mla InterleaveRope prefill: x (1, 128, 4096, 64), cos (1, 1, 4096, 64), out of place
      if (only.empty() || only == "irope") {
        const int64_t B = 1, N = 128, S = 4096, D = 64;
        Buffer x(B * N * S * D * es), out(B * N * S * D * es), c(S * D * es), s(S * D * es);
        TensorView xv(x.p, dt, {B, N, S, D}), ov(out.p, dt, {B, N, S, D});
        TensorView cv(c.p, dt, {1, 1, S, D}), sv(s.p, dt, {1, 1, S, D});
        c.fill(dt, 0.6f);
        s.fill(dt, 0.8f);
        x.fill(dt, 0.8f);
        const double bytes = 2.0 * B * N * S * D * es + 2.0 * S * D * es;
        const Timing copy = copy_limit(bytes, threads, reps);
        report("interleave_rope (1,128,4096,64) out-of-place", dt, threads, bytes,
               time_it([&] { check(interleave_rope(xv, cv, sv, ov)); }, reps), copy);
        report("interleave_rope (1,128,4096,64) in place", dt, threads, bytes,
               time_it([&] { check(interleave_rope(xv, cv, sv, xv)); }, reps), copy);
      }
      // deepseek-v3-partial IPRM (4, 4096, 16, 192) slice [128, 192), cos (1, 4096, 1, 64), all four modes
      if (only.empty() || only == "iprm") {
        const int64_t B = 4, S = 4096, N = 16, D = 192, L = 64;
        Buffer x(B * S * N * D * es), c(S * L * es), s(S * L * es);
        TensorView xv(x.p, dt, {B, S, N, D});
        TensorView cv(c.p, dt, {1, S, 1, L}), sv(s.p, dt, {1, S, 1, L});
        c.fill(dt, 0.6f);
        s.fill(dt, 0.8f);
        x.fill(dt, 0.8f);
        const double bytes = 2.0 * B * S * N * L * es + 2.0 * S * L * es;  // the slice, read and written
        const Timing copy = copy_limit(bytes, threads, reps);
        for (RotaryMode m : {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter,
                             RotaryMode::kInterleaveHalf}) {
          for (bool bwd : {false, true}) {
            std::string name = std::string("iprm") + (bwd ? "_grad " : " ") + rotary_mode_name(m) + " (4,4096,16,192)[128:192]";
            report(name.c_str(), dt, threads, bytes, time_it([&] {
                     check(bwd ? inplace_partial_rotary_mul_grad(xv, cv, sv, m, 128, 192)
                               : inplace_partial_rotary_mul(xv, cv, sv, m, 128, 192));
                   }, reps), copy);
          }
        }
      }
      // llama3-8b-train ApplyRotaryPosEmbGrad BSND: q (1, 8192, 32, 128), k (1, 8192, 8, 128), cos (1, 8192, 1, 128)
      if (only.empty() || only == "grad") {
        const int64_t S = 8192, Nq = 32, Nk = 8, D = 128;
        const int64_t qn = S * Nq * D, kn = S * Nk * D, cn = S * D;
        Buffer gq(qn * es), gk(kn * es), q(qn * es), k(kn * es), dq(qn * es), dk(kn * es);
        Buffer c(cn * es), s(cn * es), dc(cn * es), ds(cn * es);
        TensorView gqv(gq.p, dt, {1, S, Nq, D}), gkv(gk.p, dt, {1, S, Nk, D});
        TensorView qv(q.p, dt, {1, S, Nq, D}), kv(k.p, dt, {1, S, Nk, D});
        TensorView dqv(dq.p, dt, {1, S, Nq, D}), dkv(dk.p, dt, {1, S, Nk, D});
        TensorView cv(c.p, dt, {1, S, 1, D}), sv(s.p, dt, {1, S, 1, D});
        TensorView dcv(dc.p, dt, {1, S, 1, D}), dsv(ds.p, dt, {1, S, 1, D});
        c.fill(dt, 0.6f);
        s.fill(dt, 0.8f);
        for (Buffer* b : {&gq, &gk, &q, &k}) b->fill(dt, 0.8f);
        const double plain = (2.0 * (qn + kn) + 2.0 * cn) * es;             // read embeds + cos/sin, write grads
        const double fused = (3.0 * (qn + kn) + 4.0 * cn) * es;             // + q, k read, dcos/dsin written
        const Timing copy_plain = copy_limit(plain, threads, reps);
        report("rope_grad llama3-8b no q/k", dt, threads, plain, time_it([&] {
                 check(apply_rotary_pos_emb_grad(gqv, gkv, cv, sv, nullptr, nullptr, RotaryMode::kHalf,
                                                 Layout::kBSND, dqv, dkv, nullptr, nullptr));
               }, reps), copy_plain);
        const Timing copy_fused = copy_limit(fused, threads, reps);
        report("rope_grad llama3-8b with q/k (dcos, dsin)", dt, threads, fused, time_it([&] {
                 check(apply_rotary_pos_emb_grad(gqv, gkv, cv, sv, &qv, &kv, RotaryMode::kHalf, Layout::kBSND,
                                                 dqv, dkv, &dcv, &dsv));
               }, reps), copy_fused);
      }
    }
  }
  return 0;
}
