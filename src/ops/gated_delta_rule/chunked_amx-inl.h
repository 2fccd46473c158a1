// chunked_amx-inl.h — the chunked prefill's products on Intel AMX tiles (AVX3 target, CPUs with AMX-BF16;
// GdrPlan::amx): X = [K; Q] Sᵀ, the state update Kᵀ (decay ⊙ V') and the raw grams [K; Q] Kᵀ. Why: on such a CPU one
// core's TDPBF16PS runs ~3.4 TFLOP/s against ~0.23 for fp32 AVX-512 FMAs, and these are ~80 % of the kernel's FLOPs.
// How the products stay fp32 products: with bf16 activations K and Q are exact bf16, and an fp32 operand (the state,
// decay ⊙ V') splits exactly into three bf16 parts, hi + mid + lo (each the truncated remainder of the last: 8 + 8 +
// 8 significant bits), so every product is exact and AMX accumulates in fp32 with one rounding per addition, as an
// fp32 GEMM does. X's rows are scaled afterwards (β⊙e^G for K, e^G·scale for Q) where the fp32 path scales K and Q
// before the product, and decay multiplies V' where the fp32 path folds it into Kᵀ: the same quantities, rounded
// differently (a different ISA path may give different bits; a thread count or a column block never does: every
// element sums over the depth in one fixed order, 32 at a time, hi then mid then lo). AMX treats bf16 denormals as
// zero and flushes denormal results, so parts below ~1e-38 drop out (nothing an fp32 output can show).
//
// Include after <hwy/highway.h> in a foreach_target translation unit; callers test TXOPS_GDR_AMX (below).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TXOPS_GDR_AMX_COMPILER 1  // GCC on x86-64: the tile intrinsics under a target attribute
#else
#define TXOPS_GDR_AMX_COMPILER 0
#endif
#undef TXOPS_GDR_AMX
#define TXOPS_GDR_AMX (TXOPS_GDR_AMX_COMPILER && HWY_TARGET == HWY_AVX3)

#if defined(TXOPS_OPS_GDR_CHUNKED_AMX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GDR_CHUNKED_AMX_INL_H_
#undef TXOPS_OPS_GDR_CHUNKED_AMX_INL_H_
#else
#define TXOPS_OPS_GDR_CHUNKED_AMX_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/amx.h"
#include "ops/gated_delta_rule/chunked_gemm-inl.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr_amx {

#if TXOPS_GDR_AMX

// x = part[0] + part[1] + part[2] exactly (hi, mid, lo): each the truncated remainder of the one before, and each a
// bf16 value (8 significant bits; the low 16 bits of hi's and mid's fp32 patterns are zero).
HWY_INLINE void SplitParts(__m512 x, __m512i high, __m512* part) {
  part[0] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), high));
  const __m512 rest = _mm512_sub_ps(x, part[0]);  // exact
  part[1] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(rest), high));
  part[2] = _mm512_sub_ps(rest, part[1]);  // exact
}

// The first `parts` parts of two rows in the B-operand layout: pair[s] = bf16 of part s of even | that of odd << 16
// (the even row's upper half shifted down, or the odd row's upper half: one ternary-logic operation, A | (B & C)).
HWY_INLINE void PairParts(__m512 even, __m512 odd, __m512i high, int parts, __m512i* pair) {
  __m512 e[3], o[3];
  SplitParts(even, high, e);
  SplitParts(odd, high, o);
  for (int s = 0; s < parts; ++s)
    pair[s] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(_mm512_castps_si512(e[s]), 16), _mm512_castps_si512(o[s]),
                                        high, 0xF8);
}

// Rows [0, 2·pairs) x columns [0, cols) of src (rows ld floats apart; rows >= valid read as zero; row j multiplied
// by row_scale[j] first when row_scale is given) as three bf16 parts in the AMX B-operand layout: part s, row pair
// q, column c at split[(s·pairs + q)·cols + c] = bf16 of row 2q | bf16 of row 2q + 1 << 16 (PairParts), so that hi +
// mid + lo is the fp32 value exactly. cols is a multiple of 16. parts < 3 stores only the leading ones (a product
// that reads no more: ProductOnTiles' order 1).
inline void SplitPairs(const float* src, int64_t ld, int64_t valid, int64_t pairs, const float* row_scale,
                       int64_t cols, uint32_t* split, int parts = 3) {
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  const int64_t part = pairs * cols;
  const auto row = [&](int64_t j, int64_t c) {
    if (j >= valid) return _mm512_setzero_ps();
    const __m512 x = _mm512_loadu_ps(src + j * ld + c);
    return row_scale != nullptr ? _mm512_mul_ps(x, _mm512_set1_ps(row_scale[j])) : x;
  };
  for (int64_t q = 0; q < pairs; ++q) {
    for (int64_t c = 0; c < cols; c += 16) {
      __m512i pair[3];
      PairParts(row(2 * q, c), row(2 * q + 1, c), high, parts, pair);
      for (int s = 0; s < parts; ++s) _mm512_storeu_si512(split + s * part + q * cols + c, pair[s]);
    }
  }
}

// Every tile function here uses core/amx.h's configuration, the eight tiles of 16 rows x 64 bytes.
__attribute__((target("amx-tile"))) HWY_INLINE void LoadTileConfig() { _tile_loadconfig(&kAmxTiles16x64); }

// Accumulates A (tile 4, and tile 5 when two_rows) times `parts` (three unless given) split parts of one 16-pair
// step, the first part at b and the next ones `part` further (rows b_stride bytes apart), into the 32 x 32 block of tiles 0-3 (1 and 3
// only when two_cols): each element adds hi, then mid, then lo, which fixes the order of its additions.
__attribute__((target("amx-tile,amx-bf16"))) HWY_INLINE void AccumulateParts(const uint32_t* b, int64_t part,
                                                                               int64_t b_stride, bool two_rows,
                                                                               bool two_cols, int parts = 3) {
  for (int s = 0; s < parts; ++s, b += part) {
    _tile_loadd(6, b, b_stride);
    _tile_dpbf16ps(0, 4, 6);
    if (two_rows) _tile_dpbf16ps(2, 5, 6);
    if (two_cols) {
      _tile_loadd(7, b + 16, b_stride);
      _tile_dpbf16ps(1, 4, 7);
      if (two_rows) _tile_dpbf16ps(3, 5, 7);
    }
  }
}

// out rows [0, rows) x columns [0, cols) (rows ldo floats apart) = (accumulate ? out : 0) + row_scale[i] ·
// Σ_{pa + pb <= order} A_pa B_pb (no row_scale: the sums as they are). A: a_parts (1 to 3) row-major bf16 parts
// `a_part` elements apart, rows `depth` elements apart; rows up to `rows` rounded up to 32 are read (their results are
// dropped). B: b_parts (1 or 3) parts in SplitPairs' row-pair layout, `b_part` u32 apart (depth / 2 pairs of cols).
// depth a multiple of 32, cols of 16. Each element sums over the depth 32 at a time, and within a step the part
// pairs in order (hi, mid, lo): the order of its additions is fixed. With one bf16 operand (a_parts or b_parts 1) the
// products are exact. Two split operands: order 1 keeps hi·hi, hi·mid and mid·hi (what is left out is of order
// 2^-16 of the product; the backward's products of two fp32 matrices, README.md "Backward"), order 2 the six terms
// down to 2^-16 (no faster than fp32 FMAs there). Tiles 0-3 accumulate a 32 x 32 block, 4-5 hold 16 rows of an A
// part each, 6-7 16 columns of a B part each; a B of one part stays in 6-7 while the A parts pass. tri: the 32-step
// blocks of A that a triangular A holds only zeros in are skipped (adding their zero products changes no bit), and
// with kLowerC the output blocks wholly above the diagonal are neither computed nor stored (the caller masks them).
__attribute__((target("amx-tile,amx-bf16"))) HWY_NOINLINE inline void ProductOnTiles(
    int64_t rows, int64_t depth, const uint16_t* a, int64_t a_part, int a_parts, const uint32_t* b, int64_t b_part,
    int b_parts, int64_t cols, bool accumulate, const float* row_scale, float* out, int64_t ldo, int order = 2,
    gdr_gemm::Triangle tri = gdr_gemm::Triangle::kFull) {
  using gdr_gemm::Triangle;
  LoadTileConfig();
  alignas(64) float block[4][16 * 16];
  const int64_t a_stride = depth * 2, b_stride = cols * 4;
  for (int64_t cb = 0; cb < cols; cb += 32) {
    const bool two_cols = cb + 32 <= cols;
    for (int64_t rb = 0; rb < rows; rb += 32) {
      const bool two_rows = rb + 16 < rows;
      const int64_t row_end = rb + 32 < rows ? rb + 32 : rows;
      if (tri == Triangle::kLowerC && cb >= row_end) continue;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t k = 0; k < depth; k += 32) {
        if ((tri == Triangle::kLowerA && k >= row_end) || (tri == Triangle::kUpperA && k + 32 <= rb)) continue;
        const uint32_t* bk = b + k / 2 * cols + cb;
        if (b_parts == 1) {  // B's tiles loaded once for all of A's parts
          _tile_loadd(6, bk, b_stride);
          if (two_cols) _tile_loadd(7, bk + 16, b_stride);
        }
        for (int pa = 0; pa < a_parts && (b_parts > 1 || pa <= order); ++pa) {
          const uint16_t* ap = a + pa * a_part + rb * depth + k;
          _tile_loadd(4, ap, a_stride);
          if (two_rows) _tile_loadd(5, ap + 16 * depth, a_stride);
          if (b_parts == 1) {
            _tile_dpbf16ps(0, 4, 6);
            if (two_rows) _tile_dpbf16ps(2, 5, 6);
            if (two_cols) {
              _tile_dpbf16ps(1, 4, 7);
              if (two_rows) _tile_dpbf16ps(3, 5, 7);
            }
          } else {
            AccumulateParts(bk, b_part, b_stride, two_rows, two_cols, std::min(b_parts, order + 1 - pa));
          }
        }
      }
      if (!accumulate && row_scale == nullptr && two_cols && row_end - rb == 32) {  // a whole block, as it is
        float* o = out + rb * ldo + cb;
        _tile_stored(0, o, ldo * 4);
        _tile_stored(1, o + 16, ldo * 4);
        _tile_stored(2, o + 16 * ldo, ldo * 4);
        _tile_stored(3, o + 16 * ldo + 16, ldo * 4);
        continue;
      }
      _tile_stored(0, block[0], 64);
      _tile_stored(1, block[1], 64);
      _tile_stored(2, block[2], 64);
      _tile_stored(3, block[3], 64);
      for (int64_t i = rb; i < row_end; ++i) {
        const int64_t t = i - rb < 16 ? 0 : 2, r = (i - rb) % 16;
        for (int64_t h = 0; h < (two_cols ? 2 : 1); ++h) {
          float* o = out + i * ldo + cb + 16 * h;
          __m512 v = _mm512_load_ps(block[t + h] + r * 16);
          if (row_scale != nullptr) v = _mm512_mul_ps(_mm512_set1_ps(row_scale[i]), v);
          _mm512_storeu_ps(o, accumulate ? _mm512_add_ps(_mm512_loadu_ps(o), v) : v);
        }
      }
    }
  }
  _tile_release();
}

// X rows [0, rows) x columns [0, cols) (rows ldx floats apart) = row_scale[i] · Σ_k kq16[i][k] · Sᵀ[k][c], Sᵀ
// given as SplitPairs' three parts: ProductOnTiles of one bf16 operand (kq16, rows dkp apart; dkp the depth) and
// one split one. The backward uses it for any product of bf16 rows and a split fp32 matrix.
inline void XOnTiles(int64_t rows, int64_t dkp, const uint16_t* kq16, const float* row_scale, const uint32_t* split,
                     int64_t cols, float* x, int64_t ldx, gdr_gemm::Triangle tri = gdr_gemm::Triangle::kFull) {
  ProductOnTiles(rows, dkp, kq16, 0, 1, split, dkp / 2 * cols, 3, cols, false, row_scale, x, ldx, 2, tri);
}

// The state update Sᵀ ← g_last·Sᵀ + Kᵀ (decay ⊙ V') on columns [0, cols) of st (rows [0, dk), ld floats apart):
// kt16 is Kᵀ as bf16 (dkp rows of kGdrChunk tokens, zero past the chunk's n), split the three parts of decay ⊙ V'
// (SplitPairs, kGdrChunk / 2 token pairs, zero past n). Sᵀ is scaled first and then accumulated into, as the fp32
// GEMM starts its accumulators from c_scale·C. Blocks of 32 x 32 (tiles 0-3); a row tile that reaches past dk goes
// through a zero-padded copy. A second pair (kt16_second, split_second; the backward's Qᵀ and its rows) adds its
// product after the first's, in the same pass over Sᵀ.
__attribute__((target("amx-tile,amx-bf16"))) HWY_NOINLINE inline void StateUpdateOnTiles(int64_t dk, int64_t n,
                                                                                           const uint16_t* kt16,
                                                                                           const uint32_t* split,
                                                                                           int64_t cols, float g_last,
                                                                                           float* st, int64_t ld,
                                                                                           const uint16_t* kt16_second = nullptr,
                                                                                           const uint32_t* split_second = nullptr) {
  constexpr int64_t C = kGdrChunk, pairs = C / 2;
  const __m512 gl = _mm512_set1_ps(g_last);
  for (int64_t k = 0; k < dk; ++k)
    for (int64_t c = 0; c < cols; c += 16)
      _mm512_storeu_ps(st + k * ld + c, _mm512_mul_ps(gl, _mm512_loadu_ps(st + k * ld + c)));
  LoadTileConfig();
  alignas(64) float bounce[2][16 * 16];  // the partial row tile's two column tiles
  const int64_t part = pairs * cols, steps = (n + 31) / 32, b_stride = cols * 4;
  for (int64_t cb = 0; cb < cols; cb += 32) {
    const bool two_cols = cb + 32 <= cols;
    for (int64_t rb = 0; rb < dk; rb += 32) {
      const bool two_rows = rb + 16 < dk;
      // The row tile that reaches past dk (at most one per block, the last): its rows through the bounce copy.
      const int64_t last = two_rows ? rb + 16 : rb, last_rows = std::min<int64_t>(16, dk - last);
      float* edge = st + last * ld + cb;
      if (last_rows < 16) {
        std::memset(bounce, 0, sizeof(bounce));
        for (int64_t r = 0; r < last_rows; ++r) {
          std::memcpy(bounce[0] + r * 16, edge + r * ld, 64);
          if (two_cols) std::memcpy(bounce[1] + r * 16, edge + r * ld + 16, 64);
        }
      }
      const bool bounce_last = last_rows < 16;
      float* top = st + rb * ld + cb;  // the first row tile (it is the last one when !two_rows)
      float* t0 = !two_rows && bounce_last ? bounce[0] : top;
      float* t1 = !two_rows && bounce_last ? bounce[1] : top + 16;
      const int64_t s0 = !two_rows && bounce_last ? 64 : ld * 4;
      float* u0 = bounce_last ? bounce[0] : edge;
      float* u1 = bounce_last ? bounce[1] : edge + 16;
      const int64_t s1 = bounce_last ? 64 : ld * 4;
      _tile_loadd(0, t0, s0);
      if (two_cols) _tile_loadd(1, t1, s0);
      if (two_rows) {
        _tile_loadd(2, u0, s1);
        if (two_cols) _tile_loadd(3, u1, s1);
      }
      for (int source = 0; source < (kt16_second != nullptr ? 2 : 1); ++source) {
        const uint16_t* a = source == 0 ? kt16 : kt16_second;
        const uint32_t* b = source == 0 ? split : split_second;
        for (int64_t kk = 0; kk < steps; ++kk) {
          _tile_loadd(4, a + rb * C + kk * 32, C * 2);
          if (two_rows) _tile_loadd(5, a + (rb + 16) * C + kk * 32, C * 2);
          AccumulateParts(b + kk * 16 * cols + cb, part, b_stride, two_rows, two_cols);
        }
      }
      _tile_stored(0, t0, s0);
      if (two_cols) _tile_stored(1, t1, s0);
      if (two_rows) {
        _tile_stored(2, u0, s1);
        if (two_cols) _tile_stored(3, u1, s1);
      }
      if (bounce_last) {
        for (int64_t r = 0; r < last_rows; ++r) {
          std::memcpy(edge + r * ld, bounce[0] + r * 16, 64);
          if (two_cols) std::memcpy(edge + r * ld + 16, bounce[1] + r * 16, 64);
        }
      }
    }
  }
  _tile_release();
}

// The raw grams rows [0, rows) = [K; Q] Kᵀ (all kGdrChunk columns; gram rows kGdrChunk floats apart): kq16 the bf16
// rows (dkp apart, whole 16-row tiles readable), kt16 Kᵀ in key pairs (dkp/2 rows of kGdrChunk u32: bf16 k[j][2q] |
// k[j][2q+1] << 16, the B-operand layout as it is; columns >= n zero). Both operands are the bf16 inputs: one
// product, no split. Rows past `rows` up to the next 16 are written too (scratch rows the masks never read).
__attribute__((target("amx-tile,amx-bf16"))) HWY_NOINLINE inline void GramsOnTiles(int64_t rows, int64_t dkp,
                                                                              const uint16_t* kq16,
                                                                              const uint16_t* kt16, float* gram) {
  constexpr int64_t C = kGdrChunk;
  LoadTileConfig();
  for (int64_t rb = 0; rb < rows; rb += 16) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t k = 0; k < dkp; k += 32) {
      _tile_loadd(4, kq16 + rb * dkp + k, dkp * 2);
      const uint16_t* b = kt16 + k / 2 * 2 * C;
      _tile_loadd(6, b, C * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_loadd(7, b + 32, C * 4);
      _tile_dpbf16ps(1, 4, 7);
      _tile_loadd(6, b + 64, C * 4);
      _tile_dpbf16ps(2, 4, 6);
      _tile_loadd(7, b + 96, C * 4);
      _tile_dpbf16ps(3, 4, 7);
    }
    _tile_stored(0, gram + rb * C, C * 4);
    _tile_stored(1, gram + rb * C + 16, C * 4);
    _tile_stored(2, gram + rb * C + 32, C * 4);
    _tile_stored(3, gram + rb * C + 48, C * 4);
  }
  _tile_release();
}
#endif  // TXOPS_GDR_AMX

}  // namespace gdr_amx
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
