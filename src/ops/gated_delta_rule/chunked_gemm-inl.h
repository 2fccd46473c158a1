// chunked_gemm-inl.h — per-target (Highway) micro-kernels of the chunked gated-delta-rule kernel: a register-
// blocked fp32 GEMM C = A·B (+ c_scale·C) that skips the zero triangle of lower-triangular operands, and (AVX3 with
// AVX512_BF16) a vdpbf16ps tile for bf16 grams. Every element of C is accumulated over the depth in one fixed
// order, whatever tile or column panel it falls in, so a column block computed alone has the bits of the whole.
//
// Include after <hwy/highway.h> inside a foreach_target translation unit; per-target include guard below.
#if defined(TXOPS_OPS_GDR_CHUNKED_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GDR_CHUNKED_GEMM_INL_H_
#undef TXOPS_OPS_GDR_CHUNKED_GEMM_INL_H_
#else
#define TXOPS_OPS_GDR_CHUNKED_GEMM_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr_gemm {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Micro-kernel tile: kGemmRows rows of C x kGemmVectors vectors (accumulators + B loads + a broadcast fit the
// register file: AVX3 24 + 4 + 1 of 32, AVX2 12 + 2 + 1 of 16).
constexpr int64_t kGemmRows = 6;
#if HWY_TARGET == HWY_SCALAR
constexpr int kGemmVectors = 1;
#elif HWY_TARGET == HWY_AVX2
constexpr int kGemmVectors = 2;
#else
constexpr int kGemmVectors = 4;
#endif

// C[MR x NRV vectors] = c_scale * C (when accumulate) + A[MR x kd] B[kd x NRV vectors]; A and B row-major.
// The accumulators start from c_scale * C, so nothing but them, the B vectors and one broadcast is live in the
// depth loop (a scale kept for after the loop made GCC spill a B vector on AVX2: 53 % of the FMA peak in cache).
// The loops over the tile are unrolled by pragma, not left to -O3: at -O2 (a RelWithDebInfo build) GCC kept the
// accumulators in memory and the tile ran at a quarter of its speed (39 against 150 GFLOP/s, AVX-512).
template <int MR, int NRV>
HWY_NOINLINE void GemmTile(int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                         bool accumulate, float c_scale) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF acc[MR][NRV];
  if (accumulate) {
    const VF cs = hn::Set(df, c_scale);
    HWY_UNROLL(8) for (int r = 0; r < MR; ++r)
      HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) acc[r][v] = hn::Mul(cs, hn::LoadU(df, c + r * ldc + v * N));
  } else {
    HWY_UNROLL(8) for (int r = 0; r < MR; ++r)
      HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) acc[r][v] = hn::Zero(df);
  }
  for (int64_t p = 0; p < kd; ++p) {
    VF bv[NRV];
    HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) bv[v] = hn::LoadU(df, b + p * ldb + v * N);
    HWY_UNROLL(8) for (int r = 0; r < MR; ++r) {
      const VF ar = hn::Set(df, a[r * lda + p]);
      HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) acc[r][v] = hn::MulAdd(ar, bv[v], acc[r][v]);
    }
  }
  HWY_UNROLL(8) for (int r = 0; r < MR; ++r)
    HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) hn::StoreU(acc[r][v], df, c + r * ldc + v * N);
}

// Rows [0, MR) of C over a column panel [0, cols) (cols a multiple of the vector length). The vectors left after
// the full tiles go in one tile as wide as they are (the triangular products' panels end at 1-3 vectors; a
// 1-vector tile loads a broadcast per FMA), which changes no element's order of accumulation.
template <int MR>
HWY_NOINLINE void GemmRowTile(int64_t cols, int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb,
                              float* c, int64_t ldc, bool accumulate, float c_scale) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t col = 0;
  for (; col + kGemmVectors * N <= cols; col += kGemmVectors * N)
    GemmTile<MR, kGemmVectors>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
  switch ((cols - col) / N) {
#if HWY_TARGET == HWY_AVX3
    case 3: return GemmTile<MR, 3>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
    case 2: return GemmTile<MR, 2>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
#endif
    case 1: return GemmTile<MR, 1>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
    default: return;
  }
}

// Which part of a product is needed when C or A is triangular (row i of C needs columns j <= i; row i of A is zero
// beyond column i, or before it): the rest is neither computed nor read.
enum class Triangle { kFull, kLowerC, kLowerA, kUpperA };

// C (m x cols) = [c_scale * C +] A (m x kd) B (kd x cols). Column panels of 64 floats outermost, so the B panel
// stays in L1 while the row tiles of A stream past it.
inline void Gemm(int64_t m, int64_t cols, int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, bool accumulate, float c_scale = 1.0f, Triangle tri = Triangle::kFull) {
  constexpr int64_t kPanel = 64;
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t c0 = 0; c0 < cols; c0 += kPanel) {
    for (int64_t row = 0; row < m; row += kGemmRows) {
      const int64_t rows = m - row < kGemmRows ? m - row : kGemmRows;
      int64_t end = cols - c0 < kPanel ? cols : c0 + kPanel, depth = kd, first = 0;
      if (tri == Triangle::kLowerC) end = std::min(end, (row + rows + N - 1) / N * N);
      if (tri == Triangle::kLowerA) depth = std::min(kd, row + rows);
      if (tri == Triangle::kUpperA) first = std::min(kd, row), depth = kd - first;
      if (end <= c0) continue;
      const float* ar = a + row * lda + first;
      const float* bp = b + first * ldb + c0;
      float* cr = c + row * ldc + c0;
      const int64_t w = end - c0;
      switch (rows) {
        case 6: GemmRowTile<6>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
        case 5: GemmRowTile<5>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
        case 4: GemmRowTile<4>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
        case 3: GemmRowTile<3>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
        case 2: GemmRowTile<2>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
        default: GemmRowTile<1>(w, depth, ar, lda, bp, ldb, cr, ldc, accumulate, c_scale); break;
      }
    }
  }
}

#if HWY_TARGET == HWY_AVX3
// The grams [K; Q] Kᵀ with vdpbf16ps: bf16 activations are exact, products of two bf16 are exact in fp32, so only
// the accumulation order differs from the fp32 GEMM (2x its rate on Zen 4; half of it on the Xeons with AMX, which
// take the AMX path instead: README.md "Speed, session 43"). A tile: MR rows x NRV vectors of 16 columns.
template <int MR, int NRV>
__attribute__((target("avx512bf16"))) HWY_NOINLINE void GramTileBf16(int64_t pairs, const uint16_t* a, int64_t lda,
                                                                    const uint16_t* b, float* c) {
  constexpr int64_t C = kGdrChunk;
  __m512 acc[MR][NRV];
  HWY_UNROLL(8) for (int r = 0; r < MR; ++r)
    HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    __m512bh bv[NRV];
    HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + (q * C + v * 16) * 2);
    HWY_UNROLL(8) for (int r = 0; r < MR; ++r) {
      uint32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * q, 4);
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  HWY_UNROLL(8) for (int r = 0; r < MR; ++r)
    HWY_UNROLL(8) for (int v = 0; v < NRV; ++v) _mm512_storeu_ps(c + r * C + v * 16, acc[r][v]);
}

template <int MR>
inline void GramRowsBf16(int64_t vectors, int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b, float* c) {
  switch (vectors) {
    case 1: return GramTileBf16<MR, 1>(pairs, a, lda, b, c);
    case 2: return GramTileBf16<MR, 2>(pairs, a, lda, b, c);
    case 3: return GramTileBf16<MR, 3>(pairs, a, lda, b, c);
    default: return GramTileBf16<MR, 4>(pairs, a, lda, b, c);
  }
}
#endif  // HWY_TARGET == HWY_AVX3

}  // namespace gdr_gemm
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
