// probe_cpu.cpp — dev probe (not built): in-cache compute cost of the RoPE row kernels as CPU time per element
// (CLOCK_THREAD_CPUTIME_ID, min over repetitions: robust to other jobs on the shared box), AVX-512, 1 thread.
// Cases: interleave_rope (1,8,256,64) out of place; inplace_partial_rotary_mul half/interleave on (1,256,8,64);
// apply_rotary_pos_emb_grad BSND (1,64,8,128) half without and with q/k. bf16/fp16/fp32 (cos dtype = x).
// g++ -std=gnu++17 -O2 -fopenmp -Iinclude -Isrc dev/rope/probe_cpu.cpp build-ropespeed/libtxops_internal.a -lhwy -lpthread -o /tmp/probe_cpu
// /tmp/probe_cpu [isa: avx512|avx2|scalar] [reps]
#include <time.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include "txops/txops.h"
#include "core/dtype.h"
using namespace txops;
static double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static void fill(std::vector<char>& v, DType dt, unsigned seed) {
  srand(seed);
  const size_t es = dtype_size(dt), n = v.size() / es;
  for (size_t i = 0; i < n; ++i) {
    float f = (rand() / (float)RAND_MAX) * 2 - 1;
    if (dt == DType::kF32) memcpy(&v[i * 4], &f, 4);
    else { uint16_t b = dt == DType::kBF16 ? f32_to_bf16(f) : f32_to_f16(f); memcpy(&v[i * 2], &b, 2); }
  }
}
static double best(const std::function<void()>& f, int reps, int64_t elems) {
  double b = 1e9;
  for (int r = 0; r < reps; ++r) {
    double t0 = cpu_now();
    for (int k = 0; k < 4; ++k) f();
    double t = (cpu_now() - t0) / 4;
    if (t < b) b = t;
  }
  return b * 1e9 / elems;
}
int main(int argc, char** argv) {
  set_num_threads(1);
  Isa isa = Isa::kAvx512;
  if (argc > 1 && !strcmp(argv[1], "avx2")) isa = Isa::kAvx2;
  if (argc > 1 && !strcmp(argv[1], "scalar")) isa = Isa::kScalar;
  const int reps = argc > 2 ? atoi(argv[2]) : 300;
  set_max_isa(isa);
  printf("isa=%s  ns/element (CPU time, min of %d)\n%-6s %8s %8s %8s %8s %8s\n", isa_name(isa), reps, "dtype", "irope",
         "half", "intlv", "grad", "grad+qk");
  for (DType dt : {DType::kBF16, DType::kF16, DType::kF32}) {
    const size_t es = dtype_size(dt);
    const int64_t B = 1, N = 8, S = 256, D = 64;
    std::vector<char> x(B * N * S * D * es), o(x.size()), c(S * D * es), s(S * D * es);
    fill(x, dt, 1);
    // cos/sin of real angles: the in-place cases rotate x again and again, which must not drift into denormals
    for (size_t i = 0; i < c.size() / es; ++i) {
      const float a = 0.001f * i, cf = std::cos(a), sf = std::sin(a);
      if (dt == DType::kF32) { memcpy(&c[4 * i], &cf, 4); memcpy(&s[4 * i], &sf, 4); continue; }
      const uint16_t cb = dt == DType::kBF16 ? f32_to_bf16(cf) : f32_to_f16(cf), sb = dt == DType::kBF16 ? f32_to_bf16(sf) : f32_to_f16(sf);
      memcpy(&c[2 * i], &cb, 2); memcpy(&s[2 * i], &sb, 2);
    }
    TensorView xv(x.data(), dt, {B, N, S, D}), ov(o.data(), dt, {B, N, S, D}), cv(c.data(), dt, {1, 1, S, D}),
        sv(s.data(), dt, {1, 1, S, D});
    TensorView xp(x.data(), dt, {1, S, N, D}), cp(c.data(), dt, {1, S, 1, D}), sp(s.data(), dt, {1, S, 1, D});
    const double irope = best([&] { interleave_rope(xv, cv, sv, ov); }, reps, B * N * S * D);
    const double half = best([&] { inplace_partial_rotary_mul(xp, cp, sp, RotaryMode::kHalf, 0, D); }, reps, B * N * S * D);
    const double intl = best([&] { inplace_partial_rotary_mul(xp, cp, sp, RotaryMode::kInterleave, 0, D); }, reps, B * N * S * D);
    // grad: BSND (1, Sg, Nq, 128), Nk = Nq/4
    const int64_t Sg = 64, Nq = 8, Nk = 2, Dg = 128;
    std::vector<char> dq(Sg * Nq * Dg * es), dk(Sg * Nk * Dg * es), q(dq.size()), k(dk.size()), gq(dq.size()),
        gk(dk.size()), cg(Sg * Dg * es), sg(cg.size()), gc(cg.size()), gs(cg.size());
    fill(dq, dt, 4); fill(dk, dt, 5); fill(q, dt, 6); fill(k, dt, 7); fill(cg, dt, 8); fill(sg, dt, 9);
    TensorView dqv(dq.data(), dt, {1, Sg, Nq, Dg}), dkv(dk.data(), dt, {1, Sg, Nk, Dg}), qv(q.data(), dt, {1, Sg, Nq, Dg}),
        kv(k.data(), dt, {1, Sg, Nk, Dg}), gqv(gq.data(), dt, {1, Sg, Nq, Dg}), gkv(gk.data(), dt, {1, Sg, Nk, Dg}),
        cgv(cg.data(), dt, {1, Sg, 1, Dg}), sgv(sg.data(), dt, {1, Sg, 1, Dg}), gcv(gc.data(), dt, {1, Sg, 1, Dg}),
        gsv(gs.data(), dt, {1, Sg, 1, Dg});
    const int64_t ge = Sg * (Nq + Nk) * Dg;
    const double grad = best([&] {
      apply_rotary_pos_emb_grad(dqv, dkv, cgv, sgv, nullptr, nullptr, RotaryMode::kHalf, Layout::kBSND, gqv, gkv, nullptr, nullptr);
    }, reps, ge);
    const double gradqk = best([&] {
      apply_rotary_pos_emb_grad(dqv, dkv, cgv, sgv, &qv, &kv, RotaryMode::kHalf, Layout::kBSND, gqv, gkv, &gcv, &gsv);
    }, reps, ge);
    printf("%-6s %8.3f %8.3f %8.3f %8.3f %8.3f\n", dtype_name(dt), irope, half, intl, grad, gradqk);
  }
}
