// backward_amx-inl.h — the operand layouts of the gated delta rule's backward on Intel AMX tiles (AVX3 target, CPUs
// with AMX-BF16; GdrGradPlan::amx): row-major bf16 parts on the left (A) and row pairs on the right (B), for
// chunked_amx-inl.h's ProductOnTiles. Why: the backward's ~17 MFLOP per chunk and head are GEMMs of 64-token chunks;
// on such a CPU one core's TDPBF16PS runs ~3.4 TFLOP/s against ~0.23 for fp32 AVX-512 FMAs.
// How the products stay fp32 products: a bf16 operand (K, Q, dO: the inputs themselves) is one part; an fp32
// operand splits into three bf16 parts hi + mid + lo whose sum is the value exactly (chunked_amx-inl.h SplitPairs,
// and SplitRows here). A bf16 operand times a split one is exact part by part, and AMX accumulates in fp32 in one
// fixed order: the bits depend on nothing but the inputs. The three products of two fp32 matrices take the two
// leading parts of each side (hi·hi + hi·mid + mid·hi: a relative error of order 2^-16 per product; they were a
// fifth of the backward as fp32 GEMMs, and all six terms down to 2^-16 ran no faster), README.md "Backward".
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

#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/chunked_amx-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr_amx {

#if TXOPS_GDR_AMX

// The upper 16 bits of 16 fp32 lanes, as 16 u16.
HWY_INLINE __m256i UpperHalves16(__m512i bits) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16)); }

// Rows [0, rows) x columns [0, depth) of src (rows ld floats apart; rows >= valid_rows and columns >= valid_cols read
// as zero) as three row-major bf16 parts (the A operand): part s, row i, column k at dst[s·part + i·depth + k], each
// the truncated remainder of the one before (hi + mid + lo = the fp32 value). depth is a multiple of 16. parts < 3
// stores only the leading ones (the left operands of ProductOnTiles' order 1). Each part is exactly a bf16 value, so
// vcvtne2ps2bf16 packs 32 of them with one instruction (no rounding; it reads an fp32 denormal as zero, as the tile
// unit reads a bf16 one: the products do not change), where taking the upper halves took two per 16.
__attribute__((target("avx512bf16"))) inline void SplitRows(const float* src, int64_t ld, int64_t valid_rows,
                                                            int64_t valid_cols, int64_t rows, int64_t depth,
                                                            int64_t part, uint16_t* dst, int parts = 3) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const auto load = [&](int64_t i, int64_t k) {
    const int64_t left = i < valid_rows ? valid_cols - k : 0;
    const __mmask16 keep = left >= 16 ? 0xFFFF : left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
    return _mm512_maskz_loadu_ps(keep, src + i * ld + k);
  };
  for (int64_t i = 0; i < rows; ++i) {
    int64_t k = 0;
    for (; k + 32 <= depth; k += 32) {
      __m512 a[3], b[3];
      SplitParts(load(i, k), high, a);
      SplitParts(load(i, k + 16), high, b);
      uint16_t* at = dst + i * depth + k;
      for (int s = 0; s < parts; ++s)
        _mm512_storeu_si512(at + s * part, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b[s], a[s])));
    }
    for (; k < depth; k += 16) {
      __m512 a[3];
      SplitParts(load(i, k), high, a);
      uint16_t* at = dst + i * depth + k;
      for (int s = 0; s < parts; ++s) {
        const __m512i bits = s < 2 ? _mm512_castps_si512(a[s]) : _mm512_and_si512(_mm512_castps_si512(a[s]), high);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(at + s * part), UpperHalves16(bits));
      }
    }
  }
}

// SplitPairs of a transpose, which is never stored: rows [0, 2·pairs) x columns [0, cols) of Mᵀ, Mᵀ[v][c] = src[c·ld
// + v] for c < valid (zero beyond), as three bf16 parts in the B-operand layout (chunked_amx-inl.h SplitPairs, the same
// bits). 16 x 16 tiles of src go through registers (TransposeTile16x16), and each pair of the transposed rows is split
// and paired there. 2·pairs and cols multiples of 16; src rows have 2·pairs readable floats (zero past the matrix's
// own columns). The backward's S, ∂L/∂S and Uᵀ as right operands, read from Sᵀ, D and U where they lie.
inline void SplitPairsOfTranspose(const float* src, int64_t ld, int64_t valid, int64_t pairs, int64_t cols,
                                  uint32_t* split, int parts = 3) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const int64_t part = pairs * cols;
  for (int64_t c0 = 0; c0 < cols; c0 += 16) {
    for (int64_t v0 = 0; v0 < 2 * pairs; v0 += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i)
        r[i] = c0 + i < valid ? _mm512_loadu_ps(src + (c0 + i) * ld + v0) : _mm512_setzero_ps();
      TransposeTile16x16(r);  // r[j]: row v0 + j of Mᵀ, columns [c0, c0 + 16)
      for (int j = 0; j < 16; j += 2) {
        __m512i pair[3];
        PairParts(r[j], r[j + 1], high, parts, pair);
        uint32_t* at = split + (v0 + j) / 2 * cols + c0;
        for (int s = 0; s < parts; ++s) _mm512_storeu_si512(at + s * part, pair[s]);
      }
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

#endif  // TXOPS_GDR_AMX

}  // namespace gdr_amx
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
