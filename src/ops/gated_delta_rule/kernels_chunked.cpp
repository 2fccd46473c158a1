// kernels_chunked.cpp — the chunked prefill kernel of the gated delta rule (Highway: AVX3, AVX2, SCALAR).
// Why: it turns the token recurrence into small GEMMs (64 x 128 x 128 and the like) run by a register-blocked
// micro-kernel, the alternative to the row-fused recurrent kernel (kernels_recurrent.cpp); plan.cpp picks.
// Per (sequence, value head), chunks of n <= kGdrChunk tokens, S0 the state before the chunk (kept transposed,
// St = S0ᵀ, Dk x Dv fp32), G = cumsum(g) in double restarted per chunk, Γ_ij = exp(G_i - G_j) (j <= i only):
//   X  = [β⊙exp(G)⊙K ; exp(G)⊙Q·scale] St          (one GEMM, 2n x Dk x Dv)
//   A  = strictly_lower(β⊙(K Kᵀ)⊙Γ),  P = lower(Q·scale Kᵀ ⊙ Γ)   (one GEMM [K;Q] Kᵀ, then the masks)
//   V' = (I + A)^{-1} (β⊙V - X_top)                  (forward substitution; equals U - W S0ᵀ of the spec)
//   O  = X_bottom + P V'
//   St ← exp(G_last) St + Kᵀ (exp(G_last - G) ⊙ V')
// Derivation: with u_t = β_t (v_t - α_t S_{t-1} k_t) and S_t = e^{G_t} S0 + Σ_{j<=t} Γ_tj u_j k_jᵀ, u_t satisfies
// u_t + Σ_{j<t} β_t Γ_tj (k_t·k_j) u_j = β_t v_t - β_t e^{G_t} S0 k_t, i.e. (I + A) U = βV - (βe^G K) S0ᵀ.
// All arithmetic is fp32 (inputs widened exactly); outputs and the final state are rounded once. With bf16 inputs
// on AVX512_BF16 CPUs the grams use vdpbf16ps (exact bf16 products, fp32 sums). Every item
// is computed by this one code path in a fixed order, so results do not depend on the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/kernels_chunked.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

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
template <int MR, int NRV>
HWY_INLINE void GemmTile(int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                         bool accumulate, float c_scale) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF acc[MR][NRV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NRV; ++v) acc[r][v] = hn::Zero(df);
  for (int64_t p = 0; p < kd; ++p) {
    VF bv[NRV];
    for (int v = 0; v < NRV; ++v) bv[v] = hn::LoadU(df, b + p * ldb + v * N);
    for (int r = 0; r < MR; ++r) {
      const VF ar = hn::Set(df, a[r * lda + p]);
      for (int v = 0; v < NRV; ++v) acc[r][v] = hn::MulAdd(ar, bv[v], acc[r][v]);
    }
  }
  const VF cs = hn::Set(df, c_scale);
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NRV; ++v) {
      float* dst = c + r * ldc + v * N;
      hn::StoreU(accumulate ? hn::MulAdd(cs, hn::LoadU(df, dst), acc[r][v]) : acc[r][v], df, dst);
    }
}

// Rows [0, MR) of C over a column panel [0, cols) (cols a multiple of the vector length).
template <int MR>
HWY_NOINLINE void GemmRowTile(int64_t cols, int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb,
                              float* c, int64_t ldc, bool accumulate, float c_scale) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t col = 0;
  for (; col + kGemmVectors * N <= cols; col += kGemmVectors * N)
    GemmTile<MR, kGemmVectors>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
  for (; col < cols; col += N) GemmTile<MR, 1>(kd, a, lda, b + col, ldb, c + col, ldc, accumulate, c_scale);
}

// Which part of a product is needed when C or A is lower triangular (row i of C needs columns j <= i, or
// row i of A is zero beyond column i): the rest is neither computed nor read.
enum class Triangle { kFull, kLowerC, kLowerA };

// C (m x cols) = [c_scale * C +] A (m x kd) B (kd x cols). Column panels of 64 floats outermost, so the B panel
// stays in L1 while the row tiles of A stream past it.
void Gemm(int64_t m, int64_t cols, int64_t kd, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
          int64_t ldc, bool accumulate, float c_scale = 1.0f, Triangle tri = Triangle::kFull) {
  constexpr int64_t kPanel = 64;
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t c0 = 0; c0 < cols; c0 += kPanel) {
    for (int64_t row = 0; row < m; row += kGemmRows) {
      const int64_t rows = m - row < kGemmRows ? m - row : kGemmRows;
      int64_t end = cols - c0 < kPanel ? cols : c0 + kPanel, depth = kd;
      if (tri == Triangle::kLowerC) end = std::min(end, (row + rows + N - 1) / N * N);
      if (tri == Triangle::kLowerA) depth = std::min(kd, row + rows);
      if (end <= c0) continue;
      const float* ar = a + row * lda;
      float* cr = c + row * ldc + c0;
      const int64_t w = end - c0;
      switch (rows) {
        case 6: GemmRowTile<6>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
        case 5: GemmRowTile<5>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
        case 4: GemmRowTile<4>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
        case 3: GemmRowTile<3>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
        case 2: GemmRowTile<2>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
        default: GemmRowTile<1>(w, depth, ar, lda, b + c0, ldb, cr, ldc, accumulate, c_scale); break;
      }
    }
  }
}

int64_t Pad16(int64_t n) { return (n + 15) / 16 * 16; }

// One thread's scratch (floats; every array starts on 64 bytes). C = kGdrChunk; dkp, dvp: Dk, Dv rounded to 16.
struct ChunkScratch {
  int64_t dkp = 0, dvp = 0;
  float* staged = nullptr;  // staged heads x Dk x dvp: the fp32 states, transposed (last in the scratch)
  float* kq = nullptr;      // 2C x dkp: K rows [0, n), Q·scale rows [n, 2n)
  float* scaled = nullptr;  // 2C x dkp: β⊙e^G⊙K, e^G⊙Q·scale
  float* kt = nullptr;      // dkp x C: Kᵀ (columns >= n zero)
  float* bv = nullptr;      // C x dvp: β⊙V
  float* x = nullptr;       // 2C x dvp: X, then O in rows [n, 2n)
  float* gram = nullptr;    // 2C x C: K Kᵀ -> A, Q Kᵀ -> P
  float* vp = nullptr;      // C x dvp: V'
  float* ev = nullptr;      // C x dvp: e^{G_last - G} ⊙ V'
  float* beta = nullptr;    // C
  float* gamma = nullptr;   // C: e^G
  float* diff = nullptr;    // C: G_i - G_j of one row (j <= i), 0 beyond
  double* cum = nullptr;    // C: G
  bool bf16_dot = false;    // grams with vdpbf16ps (bf16 activations, AVX3 CPUs with AVX512_BF16)
  uint16_t* kq16 = nullptr;  // 2C x dkp: [K; Q] as bf16 bits (bf16_dot)
  uint16_t* kt16 = nullptr;  // dkp/2 x C x 2: Kᵀ in column pairs, the vdpbf16ps operand layout (bf16_dot)
};

ChunkScratch CarveScratch(const GdrProblem& p, float* scratch) {
  constexpr int64_t C = kGdrChunk;
  ChunkScratch s;
  s.dkp = Pad16(p.key_dim);
  s.dvp = Pad16(p.value_dim);
  float* cursor = scratch;
  auto take = [&cursor](int64_t floats) {
    float* at = cursor;
    cursor += Pad16(floats);
    return at;
  };
  s.kq = take(2 * C * s.dkp);
  s.scaled = take(2 * C * s.dkp);
  s.kt = take(s.dkp * C);
  s.bv = take(C * s.dvp);
  s.x = take(2 * C * s.dvp);
  s.gram = take(2 * C * C);
  s.vp = take(C * s.dvp);
  s.ev = take(C * s.dvp);
  s.beta = take(C);
  s.gamma = take(C);
  s.diff = take(C);
  s.cum = reinterpret_cast<double*>(take(2 * C));
  s.kq16 = reinterpret_cast<uint16_t*>(take(C * s.dkp));
  s.kt16 = reinterpret_cast<uint16_t*>(take(C * s.dkp));
  s.staged = cursor;
  return s;
}

template <class T>
const T* Element(const TensorView& v, int64_t i0, int64_t i1) {
  return static_cast<const T*>(v.data) + i0 * v.strides[0] + i1 * v.strides[1];
}

// dst[0, count) = src (element stride `stride`) * mul, dst[count, padded) = 0.
template <class T>
void LoadRow(const T* src, int64_t stride, int64_t count, int64_t padded, float mul, float* dst) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const VF m = hn::Set(df, mul);
  int64_t j = 0;
  if (stride == 1)
    for (; j + N <= count; j += N) hn::StoreU(hn::Mul(LoadF32(df, src + j), m), df, dst + j);
  for (; j < count; ++j) dst[j] = LoadScalarF32(src + j * stride) * mul;
  for (; j < padded; ++j) dst[j] = 0.0f;
}

// Packs tokens [t0, t0 + n) of value head h and forms G, e^G, the scaled rows and Kᵀ.
template <class TA>
void PackChunk(const GdrProblem& p, int64_t h, int64_t t0, int64_t n, const ChunkScratch& s) {
  constexpr int64_t C = kGdrChunk;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t hk = h / p.heads_per_key_head(), dk = p.key_dim, dkp = s.dkp;
  double g_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = t0 + i;
    s.beta[i] = LoadScalarF32(Element<TA>(p.beta, t, h));
    g_sum += p.has_g ? static_cast<double>(*Element<float>(p.g, t, h)) : 0.0;
    s.cum[i] = g_sum;
    s.gamma[i] = static_cast<float>(std::exp(g_sum));
    LoadRow(Element<TA>(p.key, t, hk), p.key.strides[2], dk, dkp, 1.0f, s.kq + i * dkp);
    LoadRow(Element<TA>(p.query, t, hk), p.query.strides[2], dk, dkp, 1.0f, s.kq + (n + i) * dkp);
    LoadRow(Element<TA>(p.value, t, h), p.value.strides[2], p.value_dim, s.dvp, s.beta[i], s.bv + i * s.dvp);
    const VF kscale = hn::Set(df, s.beta[i] * s.gamma[i]), qscale = hn::Set(df, s.gamma[i] * p.scale);
    for (int64_t j = 0; j < dkp; j += N) {
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + i * dkp + j), kscale), df, s.scaled + i * dkp + j);
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + (n + i) * dkp + j), qscale), df, s.scaled + (n + i) * dkp + j);
    }
  }
  for (int64_t c = 0; c < dk; ++c) {
    for (int64_t i = 0; i < n; ++i) s.kt[c * C + i] = s.kq[i * dkp + c];
    for (int64_t i = n; i < C; ++i) s.kt[c * C + i] = 0.0f;
  }
}

// gram rows [0, n) become A (β_i (k_i·k_j) Γ_ij, j < i), rows [n, 2n) become P ((q_i·k_j) Γ_ij, j <= i); zero
// elsewhere. Γ is exp of the difference G_i - G_j, formed only for j <= i.
void MaskWithDecay(int64_t n, int64_t np, float scale, const ChunkScratch& s) {
  constexpr int64_t C = kGdrChunk;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) s.diff[j] = static_cast<float>(s.cum[i] - s.cum[j]);
    for (int64_t j = i + 1; j < np; ++j) s.diff[j] = 0.0f;
    float* a = s.gram + i * C;
    float* pr = s.gram + (n + i) * C;
    const VF beta = hn::Set(df, s.beta[i]), qscale = hn::Set(df, scale);
    for (int64_t j = 0; j < np; j += N) {
      const VF gamma = hn::Exp(df, hn::LoadU(df, s.diff + j));
      const auto strict = hn::FirstN(df, static_cast<size_t>(i > j ? i - j : 0));
      const auto incl = hn::FirstN(df, static_cast<size_t>(i + 1 > j ? i + 1 - j : 0));
      hn::StoreU(hn::IfThenElseZero(strict, hn::Mul(hn::Mul(hn::LoadU(df, a + j), gamma), beta)), df, a + j);
      hn::StoreU(hn::IfThenElseZero(incl, hn::Mul(hn::Mul(hn::LoadU(df, pr + j), qscale), gamma)), df, pr + j);
    }
  }
}

// Columns [c0, c0 + NV vectors) of V' = (I + A)^{-1} (β⊙V - X_top), row by row, the row kept in registers.
template <int NV>
HWY_INLINE void SolveColumns(int64_t n, int64_t c0, const ChunkScratch& s) {
  constexpr int64_t C = kGdrChunk;
  const DF df;
  const size_t N = hn::Lanes(df);
  const int64_t dvp = s.dvp;
  for (int64_t i = 0; i < n; ++i) {
    const float* a = s.gram + i * C;
    VF acc[NV];
    for (int v = 0; v < NV; ++v)
      acc[v] = hn::Sub(hn::LoadU(df, s.bv + i * dvp + c0 + v * N), hn::LoadU(df, s.x + i * dvp + c0 + v * N));
    for (int64_t j = 0; j < i; ++j) {
      const VF aij = hn::Set(df, a[j]);
      for (int v = 0; v < NV; ++v) acc[v] = hn::NegMulAdd(aij, hn::LoadU(df, s.vp + j * dvp + c0 + v * N), acc[v]);
    }
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[v], df, s.vp + i * dvp + c0 + v * N);
  }
}

// V' (all columns), then ev = e^{G_last - G} ⊙ V'.
void SolveRows(int64_t n, const ChunkScratch& s) {
  constexpr int kBlock = 2 * kGemmVectors;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), dvp = s.dvp;
  int64_t c0 = 0;
  for (; c0 + kBlock * N <= dvp; c0 += kBlock * N) SolveColumns<kBlock>(n, c0, s);
  for (; c0 < dvp; c0 += N) SolveColumns<1>(n, c0, s);
  for (int64_t i = 0; i < n; ++i) {
    const VF decay = hn::Set(df, static_cast<float>(std::exp(s.cum[n - 1] - s.cum[i])));
    for (int64_t c = 0; c < dvp; c += N)
      hn::StoreU(hn::Mul(hn::LoadU(df, s.vp + i * dvp + c), decay), df, s.ev + i * dvp + c);
  }
}

#if HWY_TARGET == HWY_AVX3
// The grams [K; Q] Kᵀ with vdpbf16ps: bf16 activations are exact, products of two bf16 are exact in fp32, so only
// the accumulation order differs from the fp32 GEMM (2x its rate). A tile: MR rows x NRV vectors of 16 columns.
template <int MR, int NRV>
__attribute__((target("avx512bf16"))) HWY_NOINLINE void GramTileBf16(int64_t pairs, const uint16_t* a, int64_t lda,
                                                                    const uint16_t* b, float* c) {
  constexpr int64_t C = kGdrChunk;
  __m512 acc[MR][NRV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NRV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t q = 0; q < pairs; ++q) {
    __m512bh bv[NRV];
    for (int v = 0; v < NRV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(b + (q * C + v * 16) * 2);
    for (int r = 0; r < MR; ++r) {
      uint32_t pair;
      std::memcpy(&pair, a + r * lda + 2 * q, 4);
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      for (int v = 0; v < NRV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NRV; ++v) _mm512_storeu_ps(c + r * C + v * 16, acc[r][v]);
}

template <int MR>
void GramRowsBf16(int64_t vectors, int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b, float* c) {
  switch (vectors) {
    case 1: return GramTileBf16<MR, 1>(pairs, a, lda, b, c);
    case 2: return GramTileBf16<MR, 2>(pairs, a, lda, b, c);
    case 3: return GramTileBf16<MR, 3>(pairs, a, lda, b, c);
    default: return GramTileBf16<MR, 4>(pairs, a, lda, b, c);
  }
}

// gram rows [0, 2n) = [K; Q] Kᵀ, columns j < (tile's last row + 1) rounded to 16 (the lower triangle).
void GramsBf16(int64_t n, const ChunkScratch& s) {
  constexpr int64_t C = kGdrChunk;
  const int64_t dkp = s.dkp, pairs = dkp / 2;
  for (int64_t i = 0; i < 2 * n; ++i)
    for (int64_t c = 0; c < dkp; ++c) {
      uint32_t bits;  // the value is a bf16 widened: its upper half is exactly the bf16
      std::memcpy(&bits, s.kq + i * dkp + c, 4);
      s.kq16[i * dkp + c] = static_cast<uint16_t>(bits >> 16);
    }
  for (int64_t q = 0; q < pairs; ++q)
    for (int64_t j = 0; j < C; ++j) {
      s.kt16[(q * C + j) * 2] = j < n ? s.kq16[j * dkp + 2 * q] : 0;
      s.kt16[(q * C + j) * 2 + 1] = j < n ? s.kq16[j * dkp + 2 * q + 1] : 0;
    }
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t row = 0; row < n; row += 6) {
      const int64_t rows = n - row < 6 ? n - row : 6, vectors = (row + rows + 15) / 16;
      const uint16_t* a = s.kq16 + (half * n + row) * dkp;
      float* c = s.gram + (half * n + row) * C;
      switch (rows) {
        case 6: GramRowsBf16<6>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 5: GramRowsBf16<5>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 4: GramRowsBf16<4>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 3: GramRowsBf16<3>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 2: GramRowsBf16<2>(vectors, pairs, a, dkp, s.kt16, c); break;
        default: GramRowsBf16<1>(vectors, pairs, a, dkp, s.kt16, c); break;
      }
    }
}
#endif

// One chunk of tokens [t0, t0 + n) of head h on its staged state st (Dk x dvp, transposed).
template <class TA>
void RunChunk(const GdrProblem& p, int64_t h, int64_t t0, int64_t n, const ChunkScratch& s, float* st) {
  constexpr int64_t C = kGdrChunk;
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t np = (n + N - 1) / N * N, dk = p.key_dim, dv = p.value_dim, dvp = s.dvp;
  PackChunk<TA>(p, h, t0, n, s);
  Gemm(2 * n, dvp, dk, s.scaled, s.dkp, st, dvp, s.x, dvp, false);  // X = [βe^G K; e^G Q] Sᵀ
#if HWY_TARGET == HWY_AVX3
  if (s.bf16_dot) {
    GramsBf16(n, s);
  } else
#endif
  {
  Gemm(n, np, dk, s.kq, s.dkp, s.kt, C, s.gram, C, false, 1.0f, Triangle::kLowerC);  // K Kᵀ (j <= i)
  Gemm(n, np, dk, s.kq + n * s.dkp, s.dkp, s.kt, C, s.gram + n * C, C, false, 1.0f, Triangle::kLowerC);  // Q Kᵀ
  }
  MaskWithDecay(n, np, p.scale, s);
  SolveRows(n, s);
  Gemm(n, dvp, n, s.gram + n * C, C, s.vp, dvp, s.x + n * dvp, dvp, true, 1.0f, Triangle::kLowerA);  // O = X_b + P V'
  const float decay_all = static_cast<float>(std::exp(s.cum[n - 1]));
  Gemm(dk, dvp, n, s.kt, C, s.ev, dvp, st, dvp, true, decay_all);  // Sᵀ = e^{G_last} Sᵀ + Kᵀ (decay ⊙ V')
  const DF df;
  for (int64_t i = 0; i < n; ++i) {
    TA* dst = static_cast<TA*>(p.out.data) + (t0 + i) * p.out.strides[0] + h * p.out.strides[1];
    const float* src = s.x + (n + i) * dvp;
    const int64_t stride = p.out.strides[2];
    int64_t c = 0;
    if (stride == 1)
      for (; c + N <= dv; c += N) StoreF32(df, hn::LoadU(df, src + c), dst + c);
    for (; c < dv; ++c) StoreScalarF32(src[c], dst + c * stride);
  }
}

// Prefetches the rows of q, k, v, out that the chunk of head h reads or writes (one head ahead: its rows are in
// other cache lines of the pages just used, which the hardware prefetchers do not fetch).
template <class TA>
void PrefetchChunk(const GdrProblem& p, int64_t h, int64_t t0, int64_t n) {
  const int64_t hk = h / p.heads_per_key_head();
  const bool new_key_head = h % p.heads_per_key_head() == 0;
  auto rows = [&](const TensorView& v, int64_t head, int64_t width) {
    const int64_t bytes = width * static_cast<int64_t>(sizeof(TA));
    for (int64_t i = 0; i < n; ++i) {
      const char* row = reinterpret_cast<const char*>(Element<TA>(v, t0 + i, head));
      for (int64_t off = 0; off < bytes; off += 64) hwy::Prefetch(row + off);
    }
  };
  if (new_key_head && p.key.strides[2] == 1 && p.query.strides[2] == 1) {
    rows(p.key, hk, p.key_dim);
    rows(p.query, hk, p.key_dim);
  }
  if (p.value.strides[2] == 1) rows(p.value, h, p.value_dim);
}

template <class TS>
TS* StateHead(const TensorView& v, int64_t b, int64_t h) {
  return static_cast<TS*>(v.data) + b * v.strides[0] + h * v.strides[1];
}

// Value heads [h_begin, h_end) of sequence b: stage each S0ᵀ, run the chunks in order (chunks outermost, heads
// inside, so a chunk's rows of q, k, v, out, which all heads share a few pages with, are read while hot), store
// the final states.
template <class TA, class TS>
void PrefillSequenceHeads(const GdrProblem& p, int64_t b, int64_t h_begin, int64_t h_end, const ChunkScratch& s) {
  const int64_t dk = p.key_dim, dv = p.value_dim, dvp = s.dvp, state_floats = dk * dvp;
  for (int64_t h = h_begin; h < h_end; ++h) {
    const TS* in = StateHead<TS>(p.state_in, b, h);
    float* st = s.staged + (h - h_begin) * state_floats;
    for (int64_t c = 0; c < dk; ++c) {
      for (int64_t r = 0; r < dv; ++r)
        st[c * dvp + r] = LoadScalarF32(in + r * p.state_in.strides[2] + c * p.state_in.strides[3]);
      for (int64_t r = dv; r < dvp; ++r) st[c * dvp + r] = 0.0f;
    }
  }
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1];
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kGdrChunk) {
    const int64_t n = t_end - t0 < kGdrChunk ? t_end - t0 : kGdrChunk;
    for (int64_t h = h_begin; h < h_end; ++h) {
      if (h + 1 < h_end) PrefetchChunk<TA>(p, h + 1, t0, n);
      RunChunk<TA>(p, h, t0, n, s, s.staged + (h - h_begin) * state_floats);
    }
  }
  for (int64_t h = h_begin; h < h_end; ++h) {
    TS* out = StateHead<TS>(p.state_out, b, h);
    const float* st = s.staged + (h - h_begin) * state_floats;
    for (int64_t r = 0; r < dv; ++r)
      for (int64_t c = 0; c < dk; ++c)
        StoreScalarF32(st[c * dvp + r], out + r * p.state_out.strides[2] + c * p.state_out.strides[3]);
  }
}

// Items are (sequence, value head) pairs, grouped by sequence.
template <class TA, class TS>
void RunItemsTyped(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch) {
  const GdrProblem& p = plan.problem;
  ChunkScratch s = CarveScratch(p, scratch);
  s.bf16_dot = plan.avx512_bf16 && std::is_same<TA, hwy::bfloat16_t>::value;
  const int64_t nv = p.num_value_heads;
  for (int64_t item = begin; item < end;) {
    const int64_t b = item / nv, h_begin = item % nv;
    const int64_t h_end = end - item < nv - h_begin ? h_begin + (end - item) : nv;
    PrefillSequenceHeads<TA, TS>(p, b, h_begin, h_end, s);
    item += h_end - h_begin;
  }
}

template <class TS>
void RunItemsState(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch) {
  switch (plan.problem.query.dtype) {
    case DType::kBF16: return RunItemsTyped<hwy::bfloat16_t, TS>(plan, begin, end, scratch);
    case DType::kF16: return RunItemsTyped<hwy::float16_t, TS>(plan, begin, end, scratch);
    default: return RunItemsTyped<float, TS>(plan, begin, end, scratch);
  }
}

}  // namespace

void GdrChunkedRunItems(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch, const void* snapshot) {
  (void)snapshot;
  if (plan.problem.state_in.dtype == DType::kBF16) {
    RunItemsState<hwy::bfloat16_t>(plan, begin, end, scratch);
  } else {
    RunItemsState<float>(plan, begin, end, scratch);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
GdrRunItemsFn* select_gdr_chunked_run_items(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrChunkedRunItems); }

int64_t gdr_chunked_scratch_floats(int64_t key_dim, int64_t value_dim, int64_t staged_heads) {
  auto pad = [](int64_t n) { return (n + 15) / 16 * 16; };
  const int64_t C = kGdrChunk, dkp = pad(key_dim), dvp = pad(value_dim);
  return staged_heads * key_dim * dvp + 2 * pad(2 * C * dkp) + pad(dkp * C) + pad(C * dvp) + pad(2 * C * dvp) +
         pad(2 * C * C) + 2 * pad(C * dvp) + 3 * pad(C) + pad(2 * C) + 2 * pad(C * dkp);
}
}  // namespace txops
#endif
