// probe_kernels.cpp — the inner loops of the machine-limit probes, one version per vector width, each
// compiled for its ISA with a target attribute (the binary itself targets baseline x86-64) and chosen at run
// time: copy with ordinary stores, copy with non-temporal stores, STREAM triad, the in-place update of a byte
// slice of every row, independent-accumulator FMA, vdpbf16ps and AMX TDPBF16PS loops. Arrays come from Buffer (64-byte aligned)
// and ranges are multiples of 16 floats except possibly the last, whose tail is copied scalar.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/amx.h"
#include "core/prefetch.h"
#include "probes.h"
#include "txops/txops.h"

namespace txops {
namespace bench {

ProbeIsa probe_isa() {
  const Isa isa = active_isa();
  if (isa == Isa::kAvx512 && __builtin_cpu_supports("avx512f")) return ProbeIsa::kAvx512;
  if (isa != Isa::kScalar && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ProbeIsa::kAvx2;
  return ProbeIsa::kScalar;
}

namespace {

__attribute__((target("avx512f"))) void copy512(float* dst, const float* src, size_t b, size_t e, bool nt) {
  size_t i = b;
  if (nt) {
    for (; i + 64 <= e; i += 64) {
      const __m512 v0 = _mm512_load_ps(src + i), v1 = _mm512_load_ps(src + i + 16);
      const __m512 v2 = _mm512_load_ps(src + i + 32), v3 = _mm512_load_ps(src + i + 48);
      _mm512_stream_ps(dst + i, v0);
      _mm512_stream_ps(dst + i + 16, v1);
      _mm512_stream_ps(dst + i + 32, v2);
      _mm512_stream_ps(dst + i + 48, v3);
    }
    _mm_sfence();
  } else {
    for (; i + 64 <= e; i += 64) {
      const __m512 v0 = _mm512_load_ps(src + i), v1 = _mm512_load_ps(src + i + 16);
      const __m512 v2 = _mm512_load_ps(src + i + 32), v3 = _mm512_load_ps(src + i + 48);
      _mm512_store_ps(dst + i, v0);
      _mm512_store_ps(dst + i + 16, v1);
      _mm512_store_ps(dst + i + 32, v2);
      _mm512_store_ps(dst + i + 48, v3);
    }
  }
  for (; i < e; ++i) dst[i] = src[i];
}

__attribute__((target("avx2"))) void copy256(float* dst, const float* src, size_t b, size_t e, bool nt) {
  size_t i = b;
  if (nt) {
    for (; i + 32 <= e; i += 32) {
      const __m256 v0 = _mm256_load_ps(src + i), v1 = _mm256_load_ps(src + i + 8);
      const __m256 v2 = _mm256_load_ps(src + i + 16), v3 = _mm256_load_ps(src + i + 24);
      _mm256_stream_ps(dst + i, v0);
      _mm256_stream_ps(dst + i + 8, v1);
      _mm256_stream_ps(dst + i + 16, v2);
      _mm256_stream_ps(dst + i + 24, v3);
    }
    _mm_sfence();
  } else {
    for (; i + 32 <= e; i += 32) {
      const __m256 v0 = _mm256_load_ps(src + i), v1 = _mm256_load_ps(src + i + 8);
      const __m256 v2 = _mm256_load_ps(src + i + 16), v3 = _mm256_load_ps(src + i + 24);
      _mm256_store_ps(dst + i, v0);
      _mm256_store_ps(dst + i + 8, v1);
      _mm256_store_ps(dst + i + 16, v2);
      _mm256_store_ps(dst + i + 24, v3);
    }
  }
  for (; i < e; ++i) dst[i] = src[i];
}

void copy_scalar(float* dst, const float* src, size_t b, size_t e) {
  // volatile-free but opaque to memcpy recognition: copy through a register one element at a time
  for (size_t i = b; i < e; ++i) {
    float v;
    std::memcpy(&v, src + i, 4);
    __asm__("" : "+x"(v));
    dst[i] = v;
  }
}

__attribute__((target("avx512f"))) void triad512(float* a, const float* b, const float* c, float s, size_t lo,
                                                 size_t hi) {
  const __m512 vs = _mm512_set1_ps(s);
  size_t i = lo;
  for (; i + 16 <= hi; i += 16)
    _mm512_store_ps(a + i, _mm512_fmadd_ps(vs, _mm512_load_ps(c + i), _mm512_load_ps(b + i)));
  for (; i < hi; ++i) a[i] = b[i] + s * c[i];
}

__attribute__((target("avx2,fma"))) void triad256(float* a, const float* b, const float* c, float s, size_t lo,
                                                  size_t hi) {
  const __m256 vs = _mm256_set1_ps(s);
  size_t i = lo;
  for (; i + 8 <= hi; i += 8)
    _mm256_store_ps(a + i, _mm256_fmadd_ps(vs, _mm256_load_ps(c + i), _mm256_load_ps(b + i)));
  for (; i < hi; ++i) a[i] = b[i] + s * c[i];
}

// 16 independent zmm accumulators: enough to cover FMA latency (4) x pipes (2) with margin.
__attribute__((target("avx512f"))) double fma512(long iterations, float* sink) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(0.001f * j);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
  }
  __m512 total = acc[0];
  for (int j = 1; j < 16; ++j) total = _mm512_add_ps(total, acc[j]);
  *sink += _mm512_reduce_add_ps(total);
  return static_cast<double>(iterations) * 16 * 16 * 2;
}

// 12 ymm accumulators (16 registers in AVX2, two hold the constants).
__attribute__((target("avx2,fma"))) double fma256(long iterations, float* sink) {
  __m256 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(0.001f * j);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, a);
  }
  __m256 total = acc[0];
  for (int j = 1; j < 12; ++j) total = _mm256_add_ps(total, acc[j]);
  float lanes[8];
  _mm256_storeu_ps(lanes, total);
  for (float v : lanes) *sink += v;
  return static_cast<double>(iterations) * 12 * 8 * 2;
}

double fma_scalar(long iterations, float* sink) {
  float acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = 0.001f * j;
  for (long it = 0; it < iterations; ++it)
    for (int j = 0; j < 8; ++j) acc[j] = __builtin_fmaf(acc[j], 0.999999f, 1e-7f);
  for (float v : acc) *sink += v;
  return static_cast<double>(iterations) * 8 * 2;
}

}  // namespace

void copy_stores(float* dst, const float* src, size_t begin, size_t end, ProbeIsa isa) {
  if (isa == ProbeIsa::kAvx512) copy512(dst, src, begin, end, false);
  else if (isa == ProbeIsa::kAvx2) copy256(dst, src, begin, end, false);
  else copy_scalar(dst, src, begin, end);
}

void copy_streaming(float* dst, const float* src, size_t begin, size_t end, ProbeIsa isa) {
  if (isa == ProbeIsa::kAvx512) copy512(dst, src, begin, end, true);
  else if (isa == ProbeIsa::kAvx2) copy256(dst, src, begin, end, true);
  else copy_scalar(dst, src, begin, end);  // no streaming stores without SIMD
}

void triad(float* a, const float* b, const float* c, float s, size_t begin, size_t end, ProbeIsa isa) {
  if (isa == ProbeIsa::kAvx512) triad512(a, b, c, s, begin, end);
  else if (isa == ProbeIsa::kAvx2) triad256(a, b, c, s, begin, end);
  else
    for (size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

double fma_loop(long iterations, ProbeIsa isa, float* sink) {
  if (isa == ProbeIsa::kAvx512) return fma512(iterations, sink);
  if (isa == ProbeIsa::kAvx2) return fma256(iterations, sink);
  return fma_scalar(iterations, sink);
}

// Bytes [lo, hi) of rows [row_begin, row_end) (row_bytes apart) loaded and stored back in place, xor `key` (a
// run-time zero: the pass cannot be optimised away and changes nothing). ahead > 0: each row's slice is first
// prefetched into L2 `ahead` rows further on, as the RoPE row loops do for such slices (the hardware prefetchers do
// not follow the gaps); probe_slice (probes.cpp) runs several distances and takes the fastest.
static inline void prefetch_slice_l2(const char* p, size_t lo, size_t hi) {
  txops::PrefetchBytesL2(p + lo, static_cast<int64_t>(hi - lo));  // the row loops' own helper
}

__attribute__((target("avx512f"))) void slice512(char* base, size_t row_bytes, size_t lo, size_t hi, size_t rb,
                                                 size_t re, uint64_t key, size_t ahead) {
  const __m512i k = _mm512_set1_epi64(static_cast<long long>(key));
  for (size_t r = rb; r < re; ++r) {
    char* p = base + r * row_bytes;
    if (ahead > 0 && r + ahead < re) prefetch_slice_l2(p + ahead * row_bytes, lo, hi);
    size_t b = lo;
    for (; b + 64 <= hi; b += 64)
      _mm512_storeu_si512(p + b, _mm512_xor_si512(_mm512_loadu_si512(p + b), k));
    for (; b < hi; ++b) p[b] = static_cast<char>(p[b] ^ static_cast<char>(key));
  }
}

__attribute__((target("avx2"))) void slice256(char* base, size_t row_bytes, size_t lo, size_t hi, size_t rb,
                                              size_t re, uint64_t key, size_t ahead) {
  const __m256i k = _mm256_set1_epi64x(static_cast<long long>(key));
  for (size_t r = rb; r < re; ++r) {
    char* p = base + r * row_bytes;
    if (ahead > 0 && r + ahead < re) prefetch_slice_l2(p + ahead * row_bytes, lo, hi);
    size_t b = lo;
    for (; b + 32 <= hi; b += 32) {
      __m256i* q = reinterpret_cast<__m256i*>(p + b);
      _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), k));
    }
    for (; b < hi; ++b) p[b] = static_cast<char>(p[b] ^ static_cast<char>(key));
  }
}

void slice_rmw(char* base, size_t row_bytes, size_t lo, size_t hi, size_t row_begin, size_t row_end, uint64_t key,
               ProbeIsa isa, size_t ahead) {
  if (isa == ProbeIsa::kAvx512) return slice512(base, row_bytes, lo, hi, row_begin, row_end, key, ahead);
  if (isa == ProbeIsa::kAvx2) return slice256(base, row_bytes, lo, hi, row_begin, row_end, key, ahead);
  for (size_t r = row_begin; r < row_end; ++r) {
    if (ahead > 0 && r + ahead < row_end) prefetch_slice_l2(base + (r + ahead) * row_bytes, lo, hi);
    for (size_t b = lo; b < hi; ++b) base[r * row_bytes + b] = static_cast<char>(base[r * row_bytes + b] ^ key);
  }
}

// 16 independent accumulators of vdpbf16ps (each: 16 fp32 lanes += two bf16 products = 4 FLOPs per lane).
__attribute__((target("avx512f,avx512bf16"))) double bf16_dot_loop(long iterations, float* sink) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(0.001f * j);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3C00);  // bf16 0.0078125
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3400);  // bf16 ~1.2e-7
  for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  __m512 total = acc[0];
  for (int j = 1; j < 16; ++j) total = _mm512_add_ps(total, acc[j]);
  *sink += _mm512_reduce_add_ps(total);
  return static_cast<double>(iterations) * 16 * 16 * 4;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// Four independent TDPBF16PS accumulator tiles (16 x 16 fp32, each += a 16 x 32 by 32 x 16 bf16 product).
__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16_loop(long iterations, float* sink) {
  alignas(64) static const uint16_t operand[16 * 32] = {};  // zeros: the timing does not depend on the values
  alignas(64) float out[16 * 16];
  _tile_loadconfig(&kAmxTiles16x64);  // core/amx.h, as the kernels
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (long it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  *sink += out[0];
  return static_cast<double>(iterations) * 4 * 16 * 16 * 32 * 2;
}
#else
double amx_bf16_loop(long, float*) { return 0; }
#endif

}  // namespace bench
}  // namespace txops
