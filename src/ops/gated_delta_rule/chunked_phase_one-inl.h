// chunked_phase_one-inl.h — per-target (Highway) pieces of the chunked gated-delta-rule kernel that the forward
// (kernels_chunked.cpp) and the chunked backward (backward_kernels.cpp) share: packing a chunk's inputs, the grams
// with their decay masks (phase one: A = strictly_lower(β⊙(K Kᵀ)⊙Γ), P = lower(Q·scale Kᵀ ⊙ Γ)), and the forward
// substitution V' = (I + A)^{-1} (β⊙V - X_top). README.md "Chunked algorithm" has the derivation.
//
// Include after <hwy/highway.h> and chunked_gemm-inl.h inside a foreach_target translation unit; per-target
// include guard below.
#if defined(TXOPS_OPS_GDR_CHUNKED_PHASE_ONE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GDR_CHUNKED_PHASE_ONE_INL_H_
#undef TXOPS_OPS_GDR_CHUNKED_PHASE_ONE_INL_H_
#else
#define TXOPS_OPS_GDR_CHUNKED_PHASE_ONE_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/chunked_amx-inl.h"
#include "ops/gated_delta_rule/chunked_gemm-inl.h"
#include "ops/gated_delta_rule/chunked_layout.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr_chunk {

namespace hn = hwy::HWY_NAMESPACE;
using gdr_gemm::DF;
using gdr_gemm::Gemm;
using gdr_gemm::Triangle;
using gdr_gemm::VF;
constexpr int64_t C = kGdrChunk;

// What every chunk of one call shares.
struct ChunkContext {
  const GdrProblem* p = nullptr;
  int64_t dkp = 0, dvp = 0;  // Dk, Dv rounded up to 16
  int64_t ld = 0;            // the row stride of a staged state (gdr_state_row_stride(dvp) in the forward)
  bool bf16_dot = false;     // grams with vdpbf16ps (bf16 activations, AVX3 CPUs with AVX512_BF16)
  bool amx = false;          // the AMX path (GdrPlan::amx; implies bf16_dot): grams, X and the state update on tiles;
                             // the record keeps [K; Q] and Kᵀ as bf16 and the rows' scales
  bool fp32_keys = true;     // the pack scratch's fp32 [K; Q] rows are wanted (the backward's dq / dk steps); the
                             // AMX forward reads only their bf16 forms (PackKeysBf16)
  bool scaled_values = true;  // the record's β⊙V rows are wanted (the forward substitution); a backward handed the
                              // forward's corrected values V' solves nothing
};

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

// ---- phase one ----

// Prefetches rows [t0, t0 + n) of `head` of a (T, heads, width) input: consecutive tokens are a whole row of heads
// apart (8 KiB at Qwen3-Next's value width), so the hardware prefetchers do not fetch the next head's rows (a strided row is
// left alone). The forward and the backward fetch one head ahead.
template <class TA>
void PrefetchRows(const TensorView& v, int64_t t0, int64_t n, int64_t head, int64_t width) {
  if (v.strides[2] != 1) return;
  const int64_t bytes = width * static_cast<int64_t>(sizeof(TA));
  for (int64_t i = 0; i < n; ++i) {
    const char* row = reinterpret_cast<const char*>(Element<TA>(v, t0 + i, head));
    PrefetchBytes(row, bytes);
  }
}

// kt (dkp x C) = Kᵀ of the first n rows of kq (row stride dkp, padded columns zero); token columns >= n zero. A
// transposed copy (core/simd_matrix_copy-inl.h: 16 x 16 / 8 x 8 register tiles); it moves the bits as they are, so
// it also transposes 32-bit pairs of bf16 read as floats (PackKeysBf16).
inline void TransposeKeys(int64_t n, int64_t dkp, const float* kq, float* kt) {
  LoadMatrixF32(kq, 1, dkp, dkp, n, kt, C);
  for (int64_t c = 0; c < dkp; ++c) std::fill(kt + c * C + n, kt + (c + 1) * C, 0.0f);
}

// Packs tokens [t0, t0 + n) of key head hk: [K; Q] widened, Kᵀ (scratch).
template <class TA>
void PackKeys(const ChunkContext& cx, int64_t hk, int64_t t0, int64_t n, const GdrPackScratch& s) {
  const GdrProblem& p = *cx.p;
  const int64_t dk = p.key_dim, dkp = cx.dkp;
  for (int64_t i = 0; i < n; ++i) {
    LoadRow(Element<TA>(p.key, t0 + i, hk), p.key.strides[2], dk, dkp, 1.0f, s.kq + i * dkp);
    LoadRow(Element<TA>(p.query, t0 + i, hk), p.query.strides[2], dk, dkp, 1.0f, s.kq + (n + i) * dkp);
  }
  TransposeKeys(n, dkp, s.kq, s.kt);
}

#if HWY_TARGET == HWY_AVX3
// The AMX path's key operands straight from contiguous bf16 rows: [K; Q] rows into kq16 (a record's: the inputs'
// bits, zero past Dk) and Kᵀ in column pairs into s.kt16 — K's rows read as dkp/2 u32 pairs and transposed as
// 32-bit words (TransposeKeys moves bits, no arithmetic), token columns >= n zero; the fp32 rows s.kq widened from
// them only where ChunkContext::fp32_keys asks (the backward). The same bits as widening, transposing and taking
// the upper halves (PackKeys, GramsBf16); the fp32 Kᵀ (s.kt), which the AMX path does not read, is not made.
inline void PackKeysBf16(const ChunkContext& cx, int64_t hk, int64_t t0, int64_t n, const GdrPackScratch& s,
                         uint16_t* kq16) {
  const GdrProblem& p = *cx.p;
  const int64_t dk = p.key_dim, dkp = cx.dkp;
  const auto copy_row = [&](const hwy::bfloat16_t* row, uint16_t* dst) {
    std::memcpy(dst, row, static_cast<size_t>(dk) * sizeof(uint16_t));
    std::fill(dst + dk, dst + dkp, uint16_t{0});
  };
  for (int64_t i = 0; i < n; ++i) {
    copy_row(Element<hwy::bfloat16_t>(p.key, t0 + i, hk), kq16 + i * dkp);
    copy_row(Element<hwy::bfloat16_t>(p.query, t0 + i, hk), kq16 + (n + i) * dkp);
  }
  TransposeKeys(n, dkp / 2, reinterpret_cast<const float*>(kq16), reinterpret_cast<float*>(s.kt16));
  if (!cx.fp32_keys) return;
  for (int64_t i = 0; i < 2 * n; ++i)
    LoadRow(reinterpret_cast<const hwy::bfloat16_t*>(kq16) + i * dkp, 1, dkp, dkp, 1.0f, s.kq + i * dkp);
}

// Kᵀ as bf16 rows (dkp x C) from Kᵀ in column pairs (dkp/2 rows of C u32): row 2q the low halves of pair row q,
// row 2q + 1 the high halves.
HWY_INLINE void UnpairRows(const uint16_t* pairs16, int64_t dkp, uint16_t* kt16) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToSigned<DF> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(du));
  const uint32_t* pairs = reinterpret_cast<const uint32_t*>(pairs16);
  for (int64_t q = 0; q < dkp / 2; ++q)
    for (int64_t j = 0; j < C; j += N) {
      const auto v = hn::LoadU(du, pairs + q * C + j);
      hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::And(v, hn::Set(du, 0xFFFFu)))), du16, kt16 + 2 * q * C + j);
      hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(v))), du16, kt16 + (2 * q + 1) * C + j);
    }
}
#endif

// out[i] = e^(x0 + sign·cum[i]) rounded to fp32, i in [0, n) (sign ±1, so the argument is x0 ± cum[i] rounded
// once, as the scalar sum would be). Double vectors through Highway's Exp (about 1 ulp of double; the fp32 results
// are those of std::exp but for ties of the last rounding) instead of a libm call per token, which took about half
// of the packing. The argument is clamped to [-1100, 100] (beyond, e^x is 0 or above FLT_MAX either way; Highway's
// Exp turns it into an integer, which must stay in range) and a NaN stays NaN. The last partial vector goes through
// a padded copy, so every element takes the same path.
HWY_INLINE void ExpOfCumulative(const double* cum, int64_t n, double x0, double sign, float* out) {
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(dd));
  auto one = [&](const double* src, float* dst) {
    const auto x = hn::MulAdd(hn::Set(dd, sign), hn::LoadU(dd, src), hn::Set(dd, x0));
    const auto nan = hn::IsNaN(x);
    const auto clamped = hn::Min(hn::Max(hn::IfThenZeroElse(nan, x), hn::Set(dd, -1100.0)), hn::Set(dd, 100.0));
    hn::StoreU(hn::DemoteTo(dh, hn::IfThenElse(nan, x, hn::Exp(dd, clamped))), dh, dst);
  };
  int64_t i = 0;
  for (; i + N <= n; i += N) one(cum + i, out + i);
  if (i < n) {
    HWY_ALIGN double src[8] = {};
    HWY_ALIGN float dst[8];
    std::memcpy(src, cum + i, static_cast<size_t>(n - i) * sizeof(double));
    one(src, dst);
    std::memcpy(out + i, dst, static_cast<size_t>(n - i) * sizeof(float));
  }
#else
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::exp(x0 + sign * cum[i]));
#endif
}

// Packs tokens [t0, t0 + n) of value head h (its key head's rows already in s.kq): G, e^G, β (scratch), the scaled
// rows (the AMX path: the rows' scales), β⊙V and the decays (record).
template <class TA>
void PackChunk(const ChunkContext& cx, int64_t h, int64_t t0, int64_t n, const GdrPackScratch& s,
               const GdrChunkRecord& r) {
  const GdrProblem& p = *cx.p;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t dkp = cx.dkp;
  double g_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    s.beta[i] = LoadScalarF32(Element<TA>(p.beta, t0 + i, h));
    g_sum += p.has_g ? static_cast<double>(*Element<float>(p.g, t0 + i, h)) : 0.0;
    s.cum[i] = g_sum;
  }
  ExpOfCumulative(s.cum, n, 0.0, 1.0, s.gamma);                 // e^{G_i}
  ExpOfCumulative(s.cum, n, s.cum[n - 1], -1.0, r.decay);       // e^{G_last - G_i}
  for (int64_t i = n; i < C; ++i) r.decay[i] = 0.0f;
  ExpOfCumulative(s.cum + n - 1, 1, 0.0, 1.0, r.decay + C);     // e^{G_last}
  for (int64_t i = 0; i < n; ++i) {
    if (cx.scaled_values)
      LoadRow(Element<TA>(p.value, t0 + i, h), p.value.strides[2], p.value_dim, cx.dvp, s.beta[i], r.bv + i * cx.dvp);
    if (cx.amx) {  // the AMX path scales X's rows instead of K's and Q's (chunked_amx-inl.h)
      r.row_scale[i] = s.beta[i] * s.gamma[i];
      r.row_scale[n + i] = s.gamma[i] * p.scale;
      continue;
    }
    const VF kscale = hn::Set(df, s.beta[i] * s.gamma[i]), qscale = hn::Set(df, s.gamma[i] * p.scale);
    for (int64_t j = 0; j < dkp; j += N) {
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + i * dkp + j), kscale), df, r.scaled + i * dkp + j);
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + (n + i) * dkp + j), qscale), df, r.scaled + (n + i) * dkp + j);
    }
  }
}

// count (a multiple of the vector length) floats whose values are bf16 (widened bf16 inputs) as their bf16 bits:
// the upper halves.
HWY_INLINE void Bf16BitsOfWidened(const float* src, int64_t count, uint16_t* dst) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToSigned<DF> di;
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(src);
  for (int64_t e = 0; e < count; e += static_cast<int64_t>(hn::Lanes(du)))
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(hn::LoadU(du, bits + e)))), du16, dst + e);
}

#if HWY_TARGET == HWY_AVX3
// gram rows [0, 2n) = [K; Q] Kᵀ with vdpbf16ps, columns j < (tile's last row + 1) rounded to 16 (the lower
// triangle). The operands are the bf16 inputs themselves (the widened floats' upper halves).
inline void GramsBf16(int64_t n, int64_t dkp, bool amx, const GdrPackScratch& s, float* gram) {
  const int64_t pairs = dkp / 2;
  const hn::RebindToUnsigned<DF> du;
  const int64_t N = static_cast<int64_t>(hn::Lanes(du));
  Bf16BitsOfWidened(s.kq, 2 * n * dkp, s.kq16);  // [K; Q] rows (dkp is a whole number of vectors)
  // Kᵀ in column pairs from the fp32 Kᵀ (columns >= n already zero): u32 (q, j) = bf16 k[j][2q] | bf16 k[j][2q+1] << 16.
  uint32_t* kt_pairs = reinterpret_cast<uint32_t*>(s.kt16);
  const uint32_t* kt = reinterpret_cast<const uint32_t*>(s.kt);
  for (int64_t q = 0; q < pairs; ++q)
    for (int64_t j = 0; j < C; j += N) {
      const auto even = hn::LoadU(du, kt + 2 * q * C + j), odd = hn::LoadU(du, kt + (2 * q + 1) * C + j);
      hn::StoreU(MergeHighHalves(du, even, odd), du, kt_pairs + q * C + j);
    }
#if TXOPS_GDR_AMX
  if (amx) return gdr_amx::GramsOnTiles(2 * n, dkp, s.kq16, s.kt16, gram);
#else
  (void)amx;
#endif
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t row = 0; row < n; row += 6) {
      const int64_t rows = n - row < 6 ? n - row : 6, vectors = (row + rows + 15) / 16;
      const uint16_t* a = s.kq16 + (half * n + row) * dkp;
      float* c = gram + (half * n + row) * C;
      switch (rows) {
        case 6: gdr_gemm::GramRowsBf16<6>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 5: gdr_gemm::GramRowsBf16<5>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 4: gdr_gemm::GramRowsBf16<4>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 3: gdr_gemm::GramRowsBf16<3>(vectors, pairs, a, dkp, s.kt16, c); break;
        case 2: gdr_gemm::GramRowsBf16<2>(vectors, pairs, a, dkp, s.kt16, c); break;
        default: gdr_gemm::GramRowsBf16<1>(vectors, pairs, a, dkp, s.kt16, c); break;
      }
    }
}
#endif

// G_i − G_j in lanes j .. j + N − 1 of an fp32 vector for j <= i, 0 beyond: the double difference rounded to fp32,
// formed in double vectors and kept in registers (np <= C: the loads stay inside s.cum; lanes past row i, whatever
// s.cum holds there, are masked to zero). Through memory, as rows of s.diff, each 512-bit load of the row met two
// 256-bit stores that store forwarding cannot merge (~7 % of the AMX forward in MaskWithDecay).
HWY_INLINE VF DecayArguments(const GdrPackScratch& s, int64_t i, int64_t j) {
  const DF df;
#if HWY_HAVE_FLOAT64 && HWY_TARGET != HWY_SCALAR
  const hn::Repartition<double, DF> dd;
  const hn::Half<DF> dh;
  const int64_t M = static_cast<int64_t>(hn::Lanes(dd));
  const auto gi = hn::Set(dd, s.cum[i]);
  const auto half = [&](int64_t j0) {
    const auto keep = hn::FirstN(dd, static_cast<size_t>(i + 1 > j0 ? i + 1 - j0 : 0));
    return hn::DemoteTo(dh, hn::IfThenElseZero(keep, hn::Sub(gi, hn::LoadU(dd, s.cum + j0))));
  };
  return hn::Combine(df, half(j + M), half(j));
#else
  return hn::Set(df, j <= i ? static_cast<float>(s.cum[i] - s.cum[j]) : 0.0f);
#endif
}

// e^d per lane; NaN stays NaN (Highway's scalar Exp converts its argument to int: a NaN gate would be UB there).
HWY_INLINE VF ExpOf(DF df, VF d) {
#if HWY_TARGET == HWY_SCALAR
  const auto nan = hn::IsNaN(d);
  return hn::IfThenElse(nan, hn::Set(df, NAN), hn::Exp(df, hn::IfThenZeroElse(nan, d)));
#else
  return hn::Exp(df, d);
#endif
}

// Row i of a chunk's two C x C masks (rows a and b, np columns) is needed only up to its diagonal vector, where
// every mask vector past it is zero (half the exponentials): zeroes those vectors of both rows and returns where
// they begin. MaskWithDecay and the backward's MaskProducts.
HWY_INLINE int64_t ZeroPastDiagonal(int64_t i, int64_t np, float* a, float* b) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t je = std::min(np, (i + N) / N * N);
  for (int64_t j = je; j < np; j += N) {
    hn::StoreU(hn::Zero(df), df, a + j);
    hn::StoreU(hn::Zero(df), df, b + j);
  }
  return je;
}

// gram rows [0, n) = A (β_i (k_i·k_j) Γ_ij, j < i), rows [n, 2n) = P ((q_i·k_j) scale Γ_ij, j <= i), from the raw
// grams in s.grams; zero elsewhere. Γ is exp of the difference G_i - G_j, formed only for j <= i.
inline void MaskWithDecay(int64_t n, int64_t np, float scale, const GdrPackScratch& s, float* gram) {
  const float* raw = s.grams;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i < n; ++i) {
    float* a = gram + i * C;
    float* pr = gram + (n + i) * C;
    const int64_t je = ZeroPastDiagonal(i, np, a, pr);
    const VF beta = hn::Set(df, s.beta[i]), qscale = hn::Set(df, scale);
    for (int64_t j = 0; j < je; j += N) {
      const VF gamma = ExpOf(df, DecayArguments(s, i, j));
      if (s.decays != nullptr) hn::StoreU(gamma, df, s.decays + i * C + j);
      const auto strict = hn::FirstN(df, static_cast<size_t>(i > j ? i - j : 0));
      const auto incl = hn::FirstN(df, static_cast<size_t>(i + 1 > j ? i + 1 - j : 0));
      const VF ka = hn::LoadU(df, raw + i * C + j), qk = hn::LoadU(df, raw + (n + i) * C + j);
      hn::StoreU(hn::IfThenElseZero(strict, hn::Mul(hn::Mul(ka, gamma), beta)), df, a + j);
      hn::StoreU(hn::IfThenElseZero(incl, hn::Mul(hn::Mul(qk, qscale), gamma)), df, pr + j);
    }
  }
}

// Phase one of the chunk of tokens [t0, t0 + n) of head h: fills the record r. The key head's packing, Kᵀ and raw
// grams stay in s for the next value head of the same key head and chunk (GQA: Qwen3-Next has two per key head),
// which then skips them; they are the same numbers either way, so records do not depend on the order of calls.
template <class TA>
void PrepareChunk(const ChunkContext& cx, int64_t h, int64_t t0, int64_t n, GdrPackScratch& s,
                  const GdrChunkRecord& r) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t np = (n + N - 1) / N * N, dk = cx.p->key_dim, dkp = cx.dkp;
  const int64_t hk = h / cx.p->heads_per_key_head();
#if HWY_TARGET == HWY_AVX3 && TXOPS_GDR_AMX
  const bool direct = cx.amx && std::is_same<TA, hwy::bfloat16_t>::value &&
                      cx.p->key.strides[2] == 1 && cx.p->query.strides[2] == 1;
#else
  [[maybe_unused]] constexpr bool direct = false;
#endif
  if (s.key_head != hk || s.key_t0 != t0) {
#if HWY_TARGET == HWY_AVX3 && TXOPS_GDR_AMX
    if (direct) {  // the rows go straight into this record, which then holds the operands
      PackKeysBf16(cx, hk, t0, n, s, r.kq16);
      gdr_amx::GramsOnTiles(2 * n, dkp, r.kq16, s.kt16, s.grams);
      UnpairRows(s.kt16, dkp, r.kt16);
    } else
#endif
    {
      PackKeys<TA>(cx, hk, t0, n, s);
#if HWY_TARGET == HWY_AVX3
      if (cx.bf16_dot) {
        GramsBf16(n, dkp, cx.amx, s, s.grams);
      } else
#endif
      {
        Gemm(n, np, dk, s.kq, dkp, s.kt, C, s.grams, C, false, 1.0f, Triangle::kLowerC);                   // K Kᵀ
        Gemm(n, np, dk, s.kq + n * dkp, dkp, s.kt, C, s.grams + n * C, C, false, 1.0f, Triangle::kLowerC);  // Q Kᵀ
      }
    }
    s.key_head = hk;
    s.key_t0 = t0;
    s.record_operands = direct ? r.kq16 : nullptr;
  }
  PackChunk<TA>(cx, h, t0, n, s, r);
  if (cx.amx && s.record_operands != r.kq16) {  // the AMX path's operands: [K; Q] and Kᵀ as bf16
#if HWY_TARGET == HWY_AVX3
    if (direct) {  // from the record that holds them (of this parallel region: not yet overwritten)
      std::memcpy(r.kq16, s.record_operands, static_cast<size_t>(2 * n * dkp) * sizeof(uint16_t));
      UnpairRows(s.kt16, dkp, r.kt16);
    } else
#endif
    {
      std::memcpy(r.kq16, s.kq16, static_cast<size_t>(2 * n * dkp) * sizeof(uint16_t));
      Bf16BitsOfWidened(s.kt, dkp * C, r.kt16);
    }
    s.record_operands = r.kq16;
  }
  MaskWithDecay(n, np, cx.p->scale, s, r.gram);
  if (cx.amx) return;  // its state update multiplies V' by the decays instead
  // The state update's decays e^{G_last - G_j} go into the columns of Kᵀ, so the state pass multiplies Kᵀ by V'.
  for (int64_t c = 0; c < dk; ++c)
    for (int64_t j = 0; j < C; j += N)
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kt + c * C + j), hn::LoadU(df, r.decay + j)), df, r.kt + c * C + j);
}

// ---- the state pass ----

// Columns [c0, c0 + NV vectors) of V' = (I + A)^{-1} (β⊙V - X_top), row by row, the row kept in registers.
template <int NV>
HWY_INLINE void SolveColumns(int64_t n, int64_t c0, int64_t dvp, const GdrChunkRecord& r, const GdrPassScratch& w) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (int64_t i = 0; i < n; ++i) {
    const float* a = r.gram + i * C;
    VF acc[NV];
    for (int v = 0; v < NV; ++v)
      acc[v] = hn::Sub(hn::LoadU(df, r.bv + i * dvp + c0 + v * N), hn::LoadU(df, w.x + i * dvp + c0 + v * N));
    for (int64_t j = 0; j < i; ++j) {
      const VF aij = hn::Set(df, a[j]);
      for (int v = 0; v < NV; ++v) acc[v] = hn::NegMulAdd(aij, hn::LoadU(df, w.vp + j * dvp + c0 + v * N), acc[v]);
    }
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[v], df, w.vp + i * dvp + c0 + v * N);
  }
}

// Columns [c0, c1) of V'.
inline void SolveRows(int64_t n, int64_t c0, int64_t c1, int64_t dvp, const GdrChunkRecord& r, const GdrPassScratch& w) {
  // Up to 8 vectors of columns per pass: 8 independent accumulator chains hide the FMA latency (4 chains ran
  // the solve at about half the FMA rate).
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t c = c0;
  for (; c + 8 * N <= c1; c += 8 * N) SolveColumns<8>(n, c, dvp, r, w);
  if (c + 4 * N <= c1) SolveColumns<4>(n, c, dvp, r, w), c += 4 * N;
  if (c + 2 * N <= c1) SolveColumns<2>(n, c, dvp, r, w), c += 2 * N;
  if (c < c1) SolveColumns<1>(n, c, dvp, r, w), c += N;
}

}  // namespace gdr_chunk
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
