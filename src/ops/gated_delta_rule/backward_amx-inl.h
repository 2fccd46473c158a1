// backward_amx-inl.h — the products of the gated delta rule's backward on Intel AMX tiles (AVX3 target, CPUs with
// AMX-BF16; GdrGradPlan::amx): operands in row-major bf16 parts on the left (A) and in row pairs on the right (B),
// one general tile product over those parts. Why: the backward's ~17 MFLOP per chunk and head are GEMMs of 64-token
// chunks; on such a CPU one core's TDPBF16PS runs ~3.4 TFLOP/s against ~0.23 for fp32 AVX-512 FMAs.
// How the products stay fp32 products: a bf16 operand (K, Q, dO: the inputs themselves) is one part; an fp32
// operand splits into three bf16 parts hi + mid + lo whose sum is the value exactly (chunked_amx-inl.h SplitPairs,
// and SplitRows here). A bf16 operand times a split one is exact part by part. (ProductOnTiles can also take two
// split operands, keeping the six part products of order up to 2^-16 and dropping the three of order 2^-24 and below,
// an error of ~2^-22 of |a|·|b|; the backward does not: its three products of two fp32 matrices ran faster as fp32
// GEMMs, README.md "Backward".) AMX accumulates in fp32, one
// rounding per addition, in one fixed order (depth steps of 32, then the part pairs in order): the bits depend on
// neither the thread count nor anything else but the inputs.
//
// Include after chunked_amx-inl.h in a foreach_target translation unit; everything is under TXOPS_GDR_AMX.
#if defined(TXOPS_OPS_GDR_BACKWARD_AMX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GDR_BACKWARD_AMX_INL_H_
#undef TXOPS_OPS_GDR_BACKWARD_AMX_INL_H_
#else
#define TXOPS_OPS_GDR_BACKWARD_AMX_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

#include "ops/gated_delta_rule/chunked_amx-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr_amx {

#if TXOPS_GDR_AMX

// The upper 16 bits of 16 fp32 lanes, as 16 u16.
HWY_INLINE __m256i UpperHalves16(__m512i bits) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)); }

// count (a multiple of 16) floats whose values are bf16 (widened inputs) as bf16 bits.
inline void ToBf16Bits(const float* src, int64_t count, uint16_t* dst) {
  for (int64_t e = 0; e < count; e += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + e), UpperHalves16(_mm512_loadu_si512(src + e)));
}

// Rows [0, rows) x columns [0, depth) of src (rows ld floats apart; rows >= valid_rows and columns >= valid_cols read
// as zero) as three row-major bf16 parts (the A operand): part s, row i, column k at dst[s·part + i·depth + k], each
// the truncated remainder of the one before (hi + mid + lo = the fp32 value). depth is a multiple of 16.
inline void SplitRows(const float* src, int64_t ld, int64_t valid_rows, int64_t valid_cols, int64_t rows,
                      int64_t depth, int64_t part, uint16_t* dst) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t k = 0; k < depth; k += 16) {
      const int64_t left = i < valid_rows ? valid_cols - k : 0;
      const __mmask16 keep = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
      const __m512 x = _mm512_maskz_loadu_ps(keep, src + i * ld + k);
      const __m512 hi = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), high));
      const __m512 rest = _mm512_sub_ps(x, hi);
      const __m512 mid = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(rest), high));
      const __m512 lo = _mm512_sub_ps(rest, mid);
      uint16_t* at = dst + i * depth + k;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), UpperHalves16(_mm512_castps_si512(hi)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + part), UpperHalves16(_mm512_castps_si512(mid)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + 2 * part), UpperHalves16(_mm512_castps_si512(lo)));
    }
  }
}

// Rows [0, 2·pairs) x columns [0, cols) of the bf16 rows src (ld elements apart; rows >= valid read as zero) in the
// B-operand layout: u32 (q, c) = src[2q][c] | src[2q + 1][c] << 16. cols is a multiple of 16.
inline void PairRows(const uint16_t* src, int64_t ld, int64_t valid, int64_t pairs, int64_t cols, uint32_t* dst) {
  for (int64_t q = 0; q < pairs; ++q) {
    for (int64_t c = 0; c < cols; c += 16) {
      const int64_t r0 = 2 * q, r1 = 2 * q + 1;
      const __m512i even = r0 < valid ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                            reinterpret_cast<const __m256i*>(src + r0 * ld + c)))
                                      : _mm512_setzero_si512();
      const __m512i odd = r1 < valid ? _mm512_cvtepu16_epi32(_mm256_loadu_si256(
                                           reinterpret_cast<const __m256i*>(src + r1 * ld + c)))
                                     : _mm512_setzero_si512();
      _mm512_storeu_si512(dst + q * cols + c, _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
  }
}

// out rows [0, rows) x columns [0, cols) (rows ldo floats apart) = (accumulate ? out : 0) + Σ_{pa + pb <= 2}
// A_pa B_pb: A in a_parts (1 or 3) row-major bf16 parts `a_part` elements apart (rows depth elements apart, rows up to
// `rows` rounded up to 32 readable: their results are dropped), B in b_parts (1 or 3) row-pair parts `b_part` u32
// apart (depth / 2 pairs of cols). depth a multiple of 32, cols of 16. Tiles 0-3 accumulate a 32 x 32 block, 4-5
// hold 16 rows of an A part each, 6-7 16 columns of a B part each.
__attribute__((target("amx-tile,amx-bf16"))) HWY_NOINLINE inline void ProductOnTiles(
    int64_t rows, int64_t depth, const uint16_t* a, int64_t a_part, int a_parts, const uint32_t* b, int64_t b_part,
    int b_parts, int64_t cols, bool accumulate, float* out, int64_t ldo) {
  LoadTileConfig();
  alignas(64) float block[4][16 * 16];
  const int64_t a_stride = depth * 2, b_stride = cols * 4;
  for (int64_t cb = 0; cb < cols; cb += 32) {
    const bool two_cols = cb + 32 <= cols;
    for (int64_t rb = 0; rb < rows; rb += 32) {
      const bool two_rows = rb + 16 < rows;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t k = 0; k < depth; k += 32) {
        for (int pa = 0; pa < a_parts; ++pa) {
          const uint16_t* ap = a + pa * a_part + rb * depth + k;
          _tile_loadd(4, ap, a_stride);
          if (two_rows) _tile_loadd(5, ap + 16 * depth, a_stride);
          for (int pb = 0; pb < b_parts && pa + pb <= 2; ++pb) {
            const uint32_t* bp = b + pb * b_part + k / 2 * cols + cb;
            _tile_loadd(6, bp, b_stride);
            _tile_dpbf16ps(0, 4, 6);
            if (two_rows) _tile_dpbf16ps(2, 5, 6);
            if (two_cols) {
              _tile_loadd(7, bp + 16, b_stride);
              _tile_dpbf16ps(1, 4, 7);
              if (two_rows) _tile_dpbf16ps(3, 5, 7);
            }
          }
        }
      }
      _tile_stored(0, block[0], 64);
      _tile_stored(1, block[1], 64);
      _tile_stored(2, block[2], 64);
      _tile_stored(3, block[3], 64);
      const int64_t row_end = rb + 32 < rows ? rb + 32 : rows;
      for (int64_t i = rb; i < row_end; ++i) {
        const int64_t t = i - rb < 16 ? 0 : 2, r = (i - rb) % 16;
        for (int64_t h = 0; h < (two_cols ? 2 : 1); ++h) {
          float* o = out + i * ldo + cb + 16 * h;
          const __m512 v = _mm512_load_ps(block[t + h] + r * 16);
          _mm512_storeu_ps(o, accumulate ? _mm512_add_ps(_mm512_loadu_ps(o), v) : v);
        }
      }
    }
  }
  _tile_release();
}

#endif  // TXOPS_GDR_AMX

}  // namespace gdr_amx
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
