// probe_irope.cpp — dev experiment (not built): InterleaveRope bf16 (1,128,4096,64) out of place, 1 thread,
// variants of the row loop (software prefetch distance, streaming vs ordinary stores) against a
// non-temporal copy of the same bytes, interleaved repetitions (the machine is shared and noisy).
// g++ -std=gnu++17 -O2 -march=native -Iinclude -Isrc dev/rope/probe_irope.cpp -lhwy -o /tmp/probe_irope
#include <hwy/cache_control.h>
#include <hwy/highway.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/simd_convert-inl.h"

namespace hn = hwy::HWY_NAMESPACE;
using txops::HWY_NAMESPACE::LoadF32;
using txops::HWY_NAMESPACE::StoreF32;
using txops::HWY_NAMESPACE::StreamF32;
using T = hwy::bfloat16_t;

static bool getenv_hot = getenv("HOT") != nullptr;
static const int64_t N = getenv("NSMALL") ? 1 : 128; constexpr int64_t S = 4096, D = 64, H = D / 2;

template <bool kStream>
static void rows(const T* x, T* out, const T* cos, const T* sin, int prefetch_rows) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = hn::Lanes(df);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t s = 0; s < S; ++s) {
      const T* in = x + (n * S + s) * D;
      T* o = out + (n * S + s) * D;
      const T* c = cos + (getenv_hot ? 0 : s * D);
      const T* sn = sin + (getenv_hot ? 0 : s * D);
      if (prefetch_rows) {
        hwy::Prefetch(in + prefetch_rows * D);
        hwy::Prefetch(in + prefetch_rows * D + 32);
      }
      for (int64_t k = 0; k < H; k += lanes) {
        const auto c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + H + k);
        const auto s1 = LoadF32(df, sn + k), s2 = LoadF32(df, sn + H + k);
        const auto lo = LoadF32(df, in + 2 * k), hi = LoadF32(df, in + 2 * k + lanes);
        const auto xe = hn::ConcatEven(df, hi, lo), xo = hn::ConcatOdd(df, hi, lo);
        const auto y1 = hn::MulAdd(xe, c1, hn::Neg(hn::Mul(xo, s1)));
        const auto y2 = hn::MulAdd(xo, c2, hn::Mul(xe, s2));
        if (kStream) {
          StreamF32(df, y1, o + k);
          StreamF32(df, y2, o + H + k);
        } else {
          StoreF32(df, y1, o + k);
          StoreF32(df, y2, o + H + k);
        }
      }
    }
  }
  if (kStream) hwy::FlushStream();
}

static void nt_copy(const void* src, void* dst, size_t bytes) {
  for (size_t i = 0; i < bytes / 64; ++i) {
    _mm512_stream_si512(reinterpret_cast<__m512i*>(static_cast<char*>(dst) + i * 64),
                        _mm512_load_si512(static_cast<const char*>(src) + i * 64));
  }
  _mm_sfence();
}

int main() {
  const size_t n = N * S * D;
  T* x = static_cast<T*>(std::aligned_alloc(64, n * 2));
  T* out = static_cast<T*>(std::aligned_alloc(64, n * 2 + 4096)) + (getenv("OUT_SHIFT") ? atoi(getenv("OUT_SHIFT")) : 0);
  T* c = static_cast<T*>(std::aligned_alloc(64, S * D * 2));
  T* s = static_cast<T*>(std::aligned_alloc(64, S * D * 2));
  for (size_t i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(x)[i] = 0x3C00 + i % 255;
  for (size_t i = 0; i < S * D; ++i) reinterpret_cast<uint16_t*>(c)[i] = reinterpret_cast<uint16_t*>(s)[i] = 0x3F00;
  std::fill(reinterpret_cast<uint16_t*>(out), reinterpret_cast<uint16_t*>(out) + n, 0);
  const char* names[] = {"nt-copy", "stream pf0", "stream pf4", "stream pf16", "store pf0", "stream pf64"};
  std::vector<double> best(6, 1e9);
  const int reps = N == 1 ? 500 : 9;
  for (int rep = 0; rep < reps; ++rep) {
    for (int v = 0; v < 6; ++v) {
      const auto t0 = std::chrono::steady_clock::now();
      switch (v) {
        case 0: nt_copy(x, out, n * 2); break;
        case 1: rows<true>(x, out, c, s, 0); break;
        case 2: rows<true>(x, out, c, s, 4); break;
        case 3: rows<true>(x, out, c, s, 16); break;
        case 4: rows<false>(x, out, c, s, 0); break;
        case 5: rows<true>(x, out, c, s, 64); break;
      }
      best[v] = std::min(best[v], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  for (int v = 0; v < 6; ++v) {
    std::printf("%-12s %7.2f ms  %5.1f%% of nt-copy\n", names[v], best[v] * 1e3, 100.0 * best[0] / best[v]);
  }
}
