// probe_grad_acc.cpp — dev probe (not built): why the fused RoPE grad (gradCos/gradSin reduction) was slow on
// AVX-512. Three stand-alone loops over the llama3-8b shape (1, S, 32, 128) fp32, half rule, cos (1, S, 1, 128),
// non-temporal dx stores, 1 thread, best of `reps` per round:
//   memory     the gradCos/gradSin accumulators loaded and stored for every member row (the old kernel's form);
//   registers  the whole row's 16 accumulators in registers over the 32 member rows (kernels_grad_rows-inl.h);
//   triad      an NT triad moving the same bytes (two streams read, one written): what memory allows.
// g++ -O2 -march=native dev/rope/probe_grad_acc.cpp -o /tmp/probe_grad_acc && /tmp/probe_grad_acc 8192 3 4
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static const int D = 128, H = 64, N = 32;

__attribute__((noinline)) void Memory(int S, const float* dy, const float* x, float* out, const float* cs,
                                      const float* sn, float* dc, float* ds) {
  alignas(64) float ac[D], as[D];
  for (int g = 0; g < S; ++g) {
    const float* c = cs + g * D;
    const float* s = sn + g * D;
    std::memset(ac, 0, sizeof ac);
    std::memset(as, 0, sizeof as);
    for (int r = 0; r < N; ++r) {
      const size_t row = (static_cast<size_t>(g) * N + r) * D;
      for (int j = 0; j < H; j += 16) {
        const __m512 d1 = _mm512_load_ps(dy + row + j), d2 = _mm512_load_ps(dy + row + H + j);
        const __m512 x1 = _mm512_load_ps(x + row + j), x2 = _mm512_load_ps(x + row + H + j);
        _mm512_store_ps(ac + j, _mm512_fmadd_ps(d1, x1, _mm512_load_ps(ac + j)));
        _mm512_store_ps(ac + H + j, _mm512_fmadd_ps(d2, x2, _mm512_load_ps(ac + H + j)));
        _mm512_store_ps(as + j, _mm512_fnmadd_ps(d1, x2, _mm512_load_ps(as + j)));
        _mm512_store_ps(as + H + j, _mm512_fmadd_ps(d2, x1, _mm512_load_ps(as + H + j)));
        _mm512_stream_ps(out + row + j,
                         _mm512_fmadd_ps(d1, _mm512_load_ps(c + j), _mm512_mul_ps(d2, _mm512_load_ps(s + H + j))));
        _mm512_stream_ps(out + row + H + j,
                         _mm512_fmsub_ps(d2, _mm512_load_ps(c + H + j), _mm512_mul_ps(d1, _mm512_load_ps(s + j))));
      }
    }
    std::memcpy(dc + g * D, ac, sizeof ac);
    std::memcpy(ds + g * D, as, sizeof as);
  }
}

// Named accumulators (an array indexed in a loop stays in memory with GCC 12).
#define STEP(k, A1, A2, B1, B2)                                                                                      \
  {                                                                                                                  \
    const int j = 16 * k;                                                                                            \
    const __m512 d1 = _mm512_load_ps(in + j), d2 = _mm512_load_ps(in + H + j);                                     \
    const __m512 x1 = _mm512_load_ps(xr + j), x2 = _mm512_load_ps(xr + H + j);                                      \
    A1 = _mm512_fmadd_ps(d1, x1, A1);                                                                                \
    A2 = _mm512_fmadd_ps(d2, x2, A2);                                                                                \
    B1 = _mm512_fnmadd_ps(d1, x2, B1);                                                                               \
    B2 = _mm512_fmadd_ps(d2, x1, B2);                                                                                \
    _mm512_stream_ps(o + j, _mm512_fmadd_ps(d1, _mm512_load_ps(c + j), _mm512_mul_ps(d2, _mm512_load_ps(s + H + j)))); \
    _mm512_stream_ps(o + H + j,                                                                                      \
                     _mm512_fmsub_ps(d2, _mm512_load_ps(c + H + j), _mm512_mul_ps(d1, _mm512_load_ps(s + j))));      \
  }
#define FINISH(k, A1, A2, B1, B2)                  \
  {                                                \
    const int j = 16 * k;                          \
    _mm512_storeu_ps(dc + g * D + j, A1);          \
    _mm512_storeu_ps(dc + g * D + H + j, A2);      \
    _mm512_storeu_ps(ds + g * D + j, B1);          \
    _mm512_storeu_ps(ds + g * D + H + j, B2);      \
  }

__attribute__((noinline)) void Registers(int S, const float* dy, const float* x, float* out, const float* cs,
                                         const float* sn, float* dc, float* ds) {
  for (int g = 0; g < S; ++g) {
    const float* c = cs + g * D;
    const float* s = sn + g * D;
    __m512 a10 = _mm512_setzero_ps(), a20 = a10, b10 = a10, b20 = a10, a11 = a10, a21 = a10, b11 = a10, b21 = a10;
    __m512 a12 = a10, a22 = a10, b12 = a10, b22 = a10, a13 = a10, a23 = a10, b13 = a10, b23 = a10;
    for (int r = 0; r < N; ++r) {
      const size_t row = (static_cast<size_t>(g) * N + r) * D;
      const float* in = dy + row;
      const float* xr = x + row;
      float* o = out + row;
      STEP(0, a10, a20, b10, b20) STEP(1, a11, a21, b11, b21) STEP(2, a12, a22, b12, b22) STEP(3, a13, a23, b13, b23)
    }
    FINISH(0, a10, a20, b10, b20) FINISH(1, a11, a21, b11, b21) FINISH(2, a12, a22, b12, b22)
    FINISH(3, a13, a23, b13, b23)
  }
}

__attribute__((noinline)) void Triad(size_t n, const float* a, const float* b, float* out) {
  for (size_t i = 0; i < n; i += 16)
    _mm512_stream_ps(out + i, _mm512_mul_ps(_mm512_load_ps(a + i), _mm512_load_ps(b + i)));
}

int main(int argc, char** argv) {
  const int S = argc > 1 ? std::atoi(argv[1]) : 8192, reps = argc > 2 ? std::atoi(argv[2]) : 3;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 4;
  const size_t n = static_cast<size_t>(S) * N * D;
  auto alloc = [](size_t floats) { return static_cast<float*>(std::aligned_alloc(64, floats * sizeof(float))); };
  float *dy = alloc(n), *x = alloc(n), *out = alloc(n);
  float *c = alloc(S * D), *s = alloc(S * D), *dc = alloc(S * D), *ds = alloc(S * D);
  for (size_t i = 0; i < n; ++i) dy[i] = 1.0f + static_cast<float>(i % 7), x[i] = 0.5f, out[i] = 0.0f;
  for (int i = 0; i < S * D; ++i) c[i] = 0.3f, s[i] = 0.2f;
  const char* names[3] = {"memory", "registers", "triad"};
  for (int round = 0; round < rounds; ++round) {
    for (int v = 0; v < 3; ++v) {
      double best = 1e9;
      for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        if (v == 0) Memory(S, dy, x, out, c, s, dc, ds);
        if (v == 1) Registers(S, dy, x, out, c, s, dc, ds);
        if (v == 2) Triad(n, dy, x, out);
        _mm_sfence();
        const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (t < best) best = t;
      }
      std::printf("round %d %-9s S=%d: %7.3f ms, %.2f GB/s\n", round, names[v], S, best * 1e3,
                  3.0 * n * sizeof(float) / best / 1e9);
    }
  }
  return 0;
}
