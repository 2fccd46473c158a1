// kernels_recurrent.cpp — the row-fused recurrent kernel of the gated delta rule, for prefill and decode
// (Highway: AVX3, AVX2, SCALAR). Row i of S depends only on row i and the token's k, q, v_i, beta, decay, so a
// block of R rows stays in registers across a block of up to kGdrTokenBlock tokens:
//   sk = S_r . (a ⊙ k)          (a: the decay, scalar exp(g) or per column exp(g + gk))
//   c  = beta (v_r - sk)
//   S_r = c k + a ⊙ S_r;  o_r = S_r . (q scale)
// Inputs of a token block are first packed to fp32 (any strides, padded to whole vectors); S is either staged
// in an fp32 buffer (prefill; decode fallback) or, for decode, read from and written to the pool directly
// (bf16 or fp32 rows), once per token — also a key-major pool ((P, Nv, Dk, Dv) memory order: transformers' and
// fla's), by column sums (OneTokenKeyMajor); bf16 pools as pair vectors. Every output element is computed by one
// item in a fixed order, so results do not depend on the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/kernels_recurrent.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Vector registers a row block may hold (the rest: accumulators, broadcasts, loads).
constexpr int kRegisterBudget = (HWY_TARGET == HWY_AVX2) ? 8 : 16;

// Packed fp32 inputs of one token block of one (sequence, value head); rows of key_dim_padded floats.
struct TokenPack {
  int64_t dkp = 0, dv = 0;
  float* key = nullptr;          // k
  float* decayed_key = nullptr;  // a ⊙ k
  float* decayed_query = nullptr;  // a ⊙ q (gk present), else null
  float* key_dot_query = nullptr;  // n: k . (q scale)
  float* decay = nullptr;        // per-column decay (gk present), else null
  float* alpha = nullptr;        // scalar decay per token (gk absent)
  float* query = nullptr;        // q scale
  float* value = nullptr;        // n x dv
  float* beta = nullptr;         // n
  float* out = nullptr;          // n x dv results
};

// (strided row loads and stores: LoadRowF32 / StoreRowF32 of core/simd_convert-inl.h)
template <class T>
const T* Element(const TensorView& v, int64_t i0, int64_t i1) {
  return static_cast<const T*>(v.data) + i0 * v.strides[0] + i1 * v.strides[1];
}

// Packs tokens [t0, t0 + n) of value head h.
template <class TA>
void PackTokens(const GdrProblem& p, int64_t h, int64_t t0, int64_t n, const TokenPack& pack) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t hk = h / p.heads_per_key_head(), dk = p.key_dim, dkp = pack.dkp;
  const VF scale = hn::Set(df, p.scale);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = t0 + i;
    float* k = pack.key + i * dkp;
    float* ak = pack.decayed_key + i * dkp;
    float* q = pack.query + i * dkp;
    LoadRowF32(Element<TA>(p.key, t, hk), p.key.strides[2], dk, dkp, k);
    LoadRowF32(Element<TA>(p.query, t, hk), p.query.strides[2], dk, dkp, q);
    for (int64_t j = 0; j < dkp; j += N) hn::StoreU(hn::Mul(hn::LoadU(df, q + j), scale), df, q + j);
    LoadRowF32(Element<TA>(p.value, t, h), p.value.strides[2], p.value_dim, p.value_dim, pack.value + i * pack.dv);
    pack.beta[i] = LoadScalarF32(Element<TA>(p.beta, t, h));
    VF kq = hn::Zero(df);
    for (int64_t j = 0; j < dkp; j += N) kq = hn::MulAdd(hn::LoadU(df, k + j), hn::LoadU(df, q + j), kq);
    pack.key_dot_query[i] = hn::GetLane(hn::SumOfLanes(df, kq));
    const float g = p.has_g ? *Element<float>(p.g, t, h) : 0.0f;
    if (pack.decay) {
      float* a = pack.decay + i * dkp;
      const float* gk = Element<float>(p.gk, t, h);
      for (int64_t j = 0; j < dk; ++j)
        a[j] = static_cast<float>(std::exp(static_cast<double>(g) + gk[j * p.gk.strides[2]]));
      for (int64_t j = dk; j < dkp; ++j) a[j] = 0.0f;
      for (int64_t j = 0; j < dkp; j += N) {
        const VF aj = hn::LoadU(df, a + j);
        hn::StoreU(hn::Mul(aj, hn::LoadU(df, k + j)), df, ak + j);
        hn::StoreU(hn::Mul(aj, hn::LoadU(df, q + j)), df, pack.decayed_query + i * dkp + j);
      }
    } else {
      const float alpha = p.has_g ? std::exp(g) : 1.0f;
      pack.alpha[i] = alpha;
      const VF va = hn::Set(df, alpha);
      for (int64_t j = 0; j < dkp; j += N) hn::StoreU(hn::Mul(hn::LoadU(df, k + j), va), df, ak + j);
    }
  }
}

// Writes the block's outputs (n x dv fp32) to out[t0 + i, h, :].
template <class TA>
void StoreOutputs(const GdrProblem& p, int64_t h, int64_t t0, int64_t n, const float* out_block) {
  for (int64_t i = 0; i < n; ++i) {
    TA* dst = static_cast<TA*>(p.out.data) + (t0 + i) * p.out.strides[0] + h * p.out.strides[1];
    StoreRowF32(out_block + i * p.value_dim, p.value_dim, dst, p.out.strides[2]);
  }
}

// ---- the register-resident micro-kernel: R rows of NV vectors through tokens [0, n) ----
// Per token and row, both dot products read the state before the update (one pass), then one FMA pass updates:
//   sk = S.(a⊙k), sq = S.(a⊙q), c = beta (v - sk), o = sq + c (k.q), S <- a⊙S + c k.
// With a scalar decay the registers hold S / p (p = running product of the decays, kept in [2^-30, 2^30] by
// folding it into the registers when it would leave that range), so the decay costs no pass over S.
// s_in / s_out: row `row0` of the state (row stride in elements); token_out[i] (may be null): where token i's
// state goes (row 0 of that head; same row stride as s_out).
constexpr float kMinScale = 9.3132257e-10f;  // 2^-30
constexpr float kMaxScale = 1.0737418e9f;    // 2^30

template <int R, int NV, class TS>
HWY_INLINE void StoreRows(const VF (&s)[R][NV], float scale, TS* dst, int64_t stride) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const VF f = hn::Set(df, scale);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NV; ++j) StoreF32(df, scale == 1.0f ? s[r][j] : hn::Mul(s[r][j], f), dst + r * stride + j * N);
}

template <int R, int NV, bool kVectorDecay, class TS>
HWY_NOINLINE void RowBlockTokens(const TokenPack& tp, int64_t n, int64_t row0, const TS* s_in, int64_t in_stride,
                                 TS* s_out, TS* const* token_out, int64_t out_stride) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF s[R][NV];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < NV; ++j) s[r][j] = LoadF32(df, s_in + r * in_stride + j * N);
  float scale = 1.0f;  // state = scale * registers
  for (int64_t i = 0; i < n; ++i) {
    const float* k = tp.key + i * tp.dkp;
    const float* dot_k = kVectorDecay ? tp.decayed_key + i * tp.dkp : k;
    const float* dot_q = kVectorDecay ? tp.decayed_query + i * tp.dkp : tp.query + i * tp.dkp;
    if (!kVectorDecay) {
      scale *= tp.alpha[i];
      if (!(scale >= kMinScale && scale <= kMaxScale)) {
        const VF f = hn::Set(df, scale);
        for (int r = 0; r < R; ++r)
          for (int j = 0; j < NV; ++j) s[r][j] = hn::Mul(s[r][j], f);
        scale = 1.0f;
      }
    }
    const float* v = tp.value + i * tp.dv + row0;
    float* o = tp.out + i * tp.dv + row0;
    float coef[R];
    for (int r = 0; r < R; ++r) {
      VF acc_k = hn::Zero(df), acc_q = hn::Zero(df);
      for (int j = 0; j < NV; ++j) {
        acc_k = hn::MulAdd(s[r][j], hn::LoadU(df, dot_k + j * N), acc_k);
        acc_q = hn::MulAdd(s[r][j], hn::LoadU(df, dot_q + j * N), acc_q);
      }
      const float sk = scale * hn::GetLane(hn::SumOfLanes(df, acc_k));
      const float sq = scale * hn::GetLane(hn::SumOfLanes(df, acc_q));
      const float c = tp.beta[i] * (v[r] - sk);
      o[r] = sq + c * tp.key_dot_query[i];
      coef[r] = c / scale;
    }
    if (kVectorDecay) {
      const float* a = tp.decay + i * tp.dkp;
      for (int j = 0; j < NV; ++j) {
        const VF aj = hn::LoadU(df, a + j * N);
        for (int r = 0; r < R; ++r) s[r][j] = hn::Mul(s[r][j], aj);
      }
    }
    for (int r = 0; r < R; ++r) {
      const VF cr = hn::Set(df, coef[r]);
      for (int j = 0; j < NV; ++j) s[r][j] = hn::MulAdd(cr, hn::LoadU(df, k + j * N), s[r][j]);
    }
    if (token_out != nullptr && token_out[i] != nullptr) StoreRows<R, NV>(s, scale, token_out[i] + row0 * out_stride, out_stride);
  }
  if (s_out != nullptr) StoreRows<R, NV>(s, scale, s_out, out_stride);
}

template <int NV>
constexpr int RowsFor() {
  return kRegisterBudget / NV >= 4 ? 4 : (kRegisterBudget / NV >= 1 ? kRegisterBudget / NV : 1);
}

// All Dv rows, R at a time then one at a time. `s_in`, `s_out` point at row 0 of the head.
template <int NV, class TS>
void AllRowsTokens(const TokenPack& tp, int64_t n, const TS* s_in, int64_t in_stride, TS* s_out,
                   TS* const* token_out, int64_t out_stride) {
  constexpr int R = RowsFor<NV>();
  const auto block = tp.decay ? &RowBlockTokens<R, NV, true, TS> : &RowBlockTokens<R, NV, false, TS>;
  const auto single = tp.decay ? &RowBlockTokens<1, NV, true, TS> : &RowBlockTokens<1, NV, false, TS>;
  int64_t row = 0;
  for (; row + R <= tp.dv; row += R)
    block(tp, n, row, s_in + row * in_stride, in_stride, s_out ? s_out + row * out_stride : nullptr, token_out,
          out_stride);
  for (; row < tp.dv; ++row)
    single(tp, n, row, s_in + row * in_stride, in_stride, s_out ? s_out + row * out_stride : nullptr, token_out,
           out_stride);
}

template <class TS>
void RegisterRowsTokens(int64_t vectors, const TokenPack& tp, int64_t n, const TS* s_in, int64_t in_stride,
                        TS* s_out, TS* const* token_out, int64_t out_stride) {
  switch (vectors) {
    case 1: return AllRowsTokens<1, TS>(tp, n, s_in, in_stride, s_out, token_out, out_stride);
    case 2: return AllRowsTokens<2, TS>(tp, n, s_in, in_stride, s_out, token_out, out_stride);
    case 4: return AllRowsTokens<4, TS>(tp, n, s_in, in_stride, s_out, token_out, out_stride);
    case 8: return AllRowsTokens<8, TS>(tp, n, s_in, in_stride, s_out, token_out, out_stride);
#if HWY_TARGET != HWY_AVX2
    case 16: return AllRowsTokens<16, TS>(tp, n, s_in, in_stride, s_out, token_out, out_stride);
#endif
    default: HWY_ASSERT(false);
  }
}

// ---- the token-major kernel (prefill, scalar decay): token k and q in registers, staged fp32 rows streamed ----
// For each block of kTokenMajorRows rows (L1-resident) and each token, every row is loaded, dotted with k and q,
// updated and stored; rows are independent, so the out-of-order core overlaps the reductions of several rows
// (the register-resident kernel has only R rows to overlap). Rows hold S / scale as in RowBlockTokens.
constexpr int64_t kTokenMajorRows = 32;

template <int NV>
HWY_INLINE void ScaleRows(float* state, int64_t dkp, int64_t rows, float scale) {
  const DF df;
  const VF f = hn::Set(df, scale);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < dkp; j += static_cast<int64_t>(hn::Lanes(df)))
      hn::StoreU(hn::Mul(hn::LoadU(df, state + r * dkp + j), f), df, state + r * dkp + j);
}

template <int NV>
HWY_NOINLINE void TokenMajorRows(const TokenPack& tp, int64_t n, float* state) {
  const DF df;
  const size_t N = hn::Lanes(df);
  for (int64_t row0 = 0; row0 < tp.dv; row0 += kTokenMajorRows) {
    const int64_t rows = tp.dv - row0 < kTokenMajorRows ? tp.dv - row0 : kTokenMajorRows;
    float* block = state + row0 * tp.dkp;
    float scale = 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      scale *= tp.alpha[i];
      if (!(scale >= kMinScale && scale <= kMaxScale)) {
        ScaleRows<NV>(block, tp.dkp, rows, scale);
        scale = 1.0f;
      }
      VF k[NV], q[NV];
      for (int j = 0; j < NV; ++j) {
        k[j] = hn::LoadU(df, tp.key + i * tp.dkp + j * N);
        q[j] = hn::LoadU(df, tp.query + i * tp.dkp + j * N);
      }
      const float inv_scale = 1.0f / scale, beta = tp.beta[i], kq = tp.key_dot_query[i];
      const float* v = tp.value + i * tp.dv + row0;
      float* o = tp.out + i * tp.dv + row0;
      for (int64_t r = 0; r < rows; ++r) {
        float* srow = block + r * tp.dkp;
        VF sv[NV];
        VF acc_k0 = hn::Zero(df), acc_k1 = hn::Zero(df), acc_q0 = hn::Zero(df), acc_q1 = hn::Zero(df);
        for (int j = 0; j < NV; ++j) {
          sv[j] = hn::LoadU(df, srow + j * N);
          if (j % 2 == 0) {
            acc_k0 = hn::MulAdd(sv[j], k[j], acc_k0);
            acc_q0 = hn::MulAdd(sv[j], q[j], acc_q0);
          } else {
            acc_k1 = hn::MulAdd(sv[j], k[j], acc_k1);
            acc_q1 = hn::MulAdd(sv[j], q[j], acc_q1);
          }
        }
        const float sk = scale * hn::GetLane(hn::SumOfLanes(df, hn::Add(acc_k0, acc_k1)));
        const float sq = scale * hn::GetLane(hn::SumOfLanes(df, hn::Add(acc_q0, acc_q1)));
        const float c = beta * (v[r] - sk);
        o[r] = sq + c * kq;
        const VF coef = hn::Set(df, c * inv_scale);
        for (int j = 0; j < NV; ++j) hn::StoreU(hn::MulAdd(coef, k[j], sv[j]), df, srow + j * N);
      }
    }
    if (scale != 1.0f) ScaleRows<NV>(block, tp.dkp, rows, scale);
  }
}

// Decode, one token: every row of the head read from the pool (any storage type), updated, written to the
// token's slot; k and q (or a⊙k, a⊙q) stay in registers and rows are independent, so loads of the next rows
// overlap the reductions of the previous ones. The row is read once and written once: the state traffic.

// One-token kernels stream the state once, a row at a time; Zen 3's L2 prefetcher stops at each 4 KiB page (16
// bf16 rows of 128), so the row kRowsAhead ahead is prefetched in software (AVX2, 64 x 1 token, medians of paired
// rounds: bf16 pool 18.7 -> 15.4 ms, fp32 31.9 -> 17.8 ms on 1 thread). Past the head's last row that is the next
// head's state in a dense pool; a prefetch of an address the caller does not own is harmless (it never faults or
// writes).
constexpr int64_t kRowsAhead = 16;

// Prefetches `bytes` from element `offset` of base (integer address arithmetic: the row may lie past the array).
template <class TS>
HWY_INLINE void PrefetchRow(const TS* base, int64_t offset, int64_t bytes) {
  const uintptr_t row = reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(offset * static_cast<int64_t>(sizeof(TS)));
  for (int64_t byte = 0; byte < bytes; byte += 64) hwy::Prefetch(reinterpret_cast<const char*>(row + byte));
}

template <int NV, bool kVectorDecay>
struct OneTokenConstants {
  VF dot_k[NV], dot_q[NV];
  VF alpha_v;
  float alpha, beta, kq;
  HWY_INLINE explicit OneTokenConstants(const TokenPack& tp) {
    const DF df;
    const size_t N = hn::Lanes(df);
    for (int j = 0; j < NV; ++j) {
      dot_k[j] = hn::LoadU(df, (kVectorDecay ? tp.decayed_key : tp.key) + j * N);
      dot_q[j] = hn::LoadU(df, (kVectorDecay ? tp.decayed_query : tp.query) + j * N);
    }
    alpha = kVectorDecay ? 1.0f : tp.alpha[0];
    alpha_v = hn::Set(df, alpha);
    beta = tp.beta[0];
    kq = tp.key_dot_query[0];
  }
};

// Row r (already widened to fp32 in sv): writes out[r] and replaces sv by the updated row.
template <int NV, bool kVectorDecay>
HWY_INLINE void UpdateOneTokenRow(const TokenPack& tp, const OneTokenConstants<NV, kVectorDecay>& cst, int64_t r,
                                  VF (&sv)[NV]) {
  const DF df;
  const size_t N = hn::Lanes(df);
  VF acc_k0 = hn::Zero(df), acc_k1 = hn::Zero(df), acc_q0 = hn::Zero(df), acc_q1 = hn::Zero(df);
  for (int j = 0; j < NV; ++j) {
    if (j % 2 == 0) {
      acc_k0 = hn::MulAdd(sv[j], cst.dot_k[j], acc_k0);
      acc_q0 = hn::MulAdd(sv[j], cst.dot_q[j], acc_q0);
    } else {
      acc_k1 = hn::MulAdd(sv[j], cst.dot_k[j], acc_k1);
      acc_q1 = hn::MulAdd(sv[j], cst.dot_q[j], acc_q1);
    }
  }
  const float sk = cst.alpha * hn::GetLane(hn::SumOfLanes(df, hn::Add(acc_k0, acc_k1)));
  const float sq = cst.alpha * hn::GetLane(hn::SumOfLanes(df, hn::Add(acc_q0, acc_q1)));
  const float c = cst.beta * (tp.value[r] - sk);
  tp.out[r] = sq + c * cst.kq;
  const VF cv = hn::Set(df, c);
  for (int j = 0; j < NV; ++j) {
    const VF decayed = kVectorDecay ? hn::Mul(sv[j], hn::LoadU(df, tp.decay + j * N)) : hn::Mul(sv[j], cst.alpha_v);
    sv[j] = hn::MulAdd(cv, hn::LoadU(df, tp.key + j * N), decayed);
  }
}

template <int NV, bool kVectorDecay, class TS>
HWY_NOINLINE void OneTokenRows(const TokenPack& tp, const TS* s_in, int64_t in_stride, TS* s_out, int64_t out_stride) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const OneTokenConstants<NV, kVectorDecay> cst(tp);
  for (int64_t r = 0; r < tp.dv; ++r) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, static_cast<int64_t>(NV * N * sizeof(TS)));
    VF sv[NV];
    for (int j = 0; j < NV; ++j) sv[j] = LoadF32(df, s_in + r * in_stride + j * N);
    UpdateOneTokenRow<NV, kVectorDecay>(tp, cst, r, sv);
    for (int j = 0; j < NV; ++j) StoreF32(df, sv[j], s_out + r * out_stride + j * N);
  }
}

#if HWY_TARGET == HWY_AVX3
// The same for a bf16 pool on CPUs with AVX512_BF16: vcvtneps2bf16 rounds to nearest even in one instruction
// (instead of ~9 integer ops). It treats denormal inputs as zero: a bf16 state element below 2^-126 in
// magnitude becomes ±0 (the only difference from the portable rounding).
template <int NV, bool kVectorDecay>
__attribute__((target("avx512bf16"))) HWY_NOINLINE void OneTokenRowsBf16Insn(const TokenPack& tp,
                                                                            const hwy::bfloat16_t* s_in,
                                                                            int64_t in_stride, hwy::bfloat16_t* s_out,
                                                                            int64_t out_stride) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const OneTokenConstants<NV, kVectorDecay> cst(tp);
  for (int64_t r = 0; r < tp.dv; ++r) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, static_cast<int64_t>(NV * N * sizeof(hwy::bfloat16_t)));
    VF sv[NV];
    for (int j = 0; j < NV; ++j) sv[j] = LoadF32(df, s_in + r * in_stride + j * N);
    UpdateOneTokenRow<NV, kVectorDecay>(tp, cst, r, sv);
    for (int j = 0; j < NV; ++j) {
      const __m256bh bits = _mm512_cvtneps_pbh(sv[j].raw);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(s_out + r * out_stride + j * N), reinterpret_cast<const __m256i&>(bits));
    }
  }
}
#endif

// Decode, one token, rows wider than the register budget (AVX2 with Dk > 64; SCALAR): k and q are read from L1,
// and each row is read twice — the dot products, then the update from the copy the first pass left in L1 — and
// written once, so the state traffic is still one read and one write per row. Rows go in blocks of kRows,
// software-pipelined: the dot products (and coefficients) of block b+1 are issued before the updates of block b, so
// the next rows' loads and reductions overlap the current rows' updates instead of waiting behind them in the
// reorder buffer.

// Dot products of rows [r0, r0 + kRows): writes their outputs and the update coefficients c.
template <bool kVectorDecay, class TS, int kRows>
HWY_INLINE void OneTokenWideDots(const TokenPack& tp, int64_t vectors, int64_t r0, const TS* s_in, int64_t in_stride,
                                 float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const float* dot_k = kVectorDecay ? tp.decayed_key : tp.key;
  const float* dot_q = kVectorDecay ? tp.decayed_query : tp.query;
  const float alpha = kVectorDecay ? 1.0f : tp.alpha[0];
  VF acc_k[kRows], acc_q[kRows];
  for (int i = 0; i < kRows; ++i) acc_k[i] = acc_q[i] = hn::Zero(df);
  for (int64_t j = 0; j < vectors; ++j) {
    const VF k = hn::LoadU(df, dot_k + j * N), q = hn::LoadU(df, dot_q + j * N);
    for (int i = 0; i < kRows; ++i) {
      const VF sv = LoadF32(df, s_in + (r0 + i) * in_stride + j * N);
      acc_k[i] = hn::MulAdd(sv, k, acc_k[i]);
      acc_q[i] = hn::MulAdd(sv, q, acc_q[i]);
    }
  }
  for (int i = 0; i < kRows; ++i) {
    const float sk = alpha * hn::GetLane(hn::SumOfLanes(df, acc_k[i]));
    const float sq = alpha * hn::GetLane(hn::SumOfLanes(df, acc_q[i]));
    c[i] = tp.beta[0] * (tp.value[r0 + i] - sk);
    tp.out[r0 + i] = sq + c[i] * tp.key_dot_query[0];
  }
}

// Updates of rows [r0, r0 + kRows) with their coefficients c: s ← decay ⊙ s + c k, rounded into the output slot.
template <bool kVectorDecay, class TS, int kRows>
HWY_INLINE void OneTokenWideUpdates(const TokenPack& tp, int64_t vectors, int64_t r0, const TS* s_in,
                                    int64_t in_stride, TS* s_out, int64_t out_stride, const float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const VF alpha_v = hn::Set(df, kVectorDecay ? 1.0f : tp.alpha[0]);
  VF cv[kRows];
  for (int i = 0; i < kRows; ++i) cv[i] = hn::Set(df, c[i]);
  for (int64_t j = 0; j < vectors; ++j) {
    const VF k = hn::LoadU(df, tp.key + j * N);
    const VF decay = kVectorDecay ? hn::LoadU(df, tp.decay + j * N) : alpha_v;
    for (int i = 0; i < kRows; ++i) {
      const VF sv = LoadF32(df, s_in + (r0 + i) * in_stride + j * N);
      StoreF32(df, hn::MulAdd(cv[i], k, hn::Mul(sv, decay)), s_out + (r0 + i) * out_stride + j * N);
    }
  }
}

#if HWY_TARGET != HWY_SCALAR
// The same for a bf16 pool as pair vectors (core/simd_convert-inl.h): a block of 2N state elements loads as its
// even and odd elements (one shift or one mask each, no widening shuffle) and stores with one merge, so k, q and
// the decay are split the same way once per token (LoadInterleaved2). Needs Dk a multiple of 2N.
struct SplitToken {
  static constexpr int64_t kMax = 256;  // floats per parity: Dk <= 512
  HWY_ALIGN float dot_k[2][kMax], dot_q[2][kMax], key[2][kMax], decay[2][kMax];
};

template <bool kVectorDecay>
HWY_INLINE void SplitTokenPack(const TokenPack& tp, int64_t blocks, SplitToken* st) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const float* dot_k = kVectorDecay ? tp.decayed_key : tp.key;
  const float* dot_q = kVectorDecay ? tp.decayed_query : tp.query;
  for (int64_t b = 0; b < blocks; ++b) {
    VF e, o;
    hn::LoadInterleaved2(df, dot_k + 2 * b * N, e, o);
    hn::Store(e, df, st->dot_k[0] + b * N), hn::Store(o, df, st->dot_k[1] + b * N);
    hn::LoadInterleaved2(df, dot_q + 2 * b * N, e, o);
    hn::Store(e, df, st->dot_q[0] + b * N), hn::Store(o, df, st->dot_q[1] + b * N);
    hn::LoadInterleaved2(df, tp.key + 2 * b * N, e, o);
    hn::Store(e, df, st->key[0] + b * N), hn::Store(o, df, st->key[1] + b * N);
    if (kVectorDecay) {
      hn::LoadInterleaved2(df, tp.decay + 2 * b * N, e, o);
      hn::Store(e, df, st->decay[0] + b * N), hn::Store(o, df, st->decay[1] + b * N);
    }
  }
}

template <int kRows>
HWY_INLINE void PairDots(const TokenPack& tp, const SplitToken& st, int64_t blocks, float alpha, int64_t r0,
                         const hwy::bfloat16_t* s_in, int64_t in_stride, float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF acc_k[kRows], acc_q[kRows];
  for (int i = 0; i < kRows; ++i) acc_k[i] = acc_q[i] = hn::Zero(df);
  for (int64_t b = 0; b < blocks; ++b) {
    const VF ke = hn::Load(df, st.dot_k[0] + b * N), ko = hn::Load(df, st.dot_k[1] + b * N);
    const VF qe = hn::Load(df, st.dot_q[0] + b * N), qo = hn::Load(df, st.dot_q[1] + b * N);
    for (int i = 0; i < kRows; ++i) {
      VF e, o;
      LoadBF16Pairs(df, s_in + (r0 + i) * in_stride + 2 * b * N, &e, &o);
      acc_k[i] = hn::MulAdd(o, ko, hn::MulAdd(e, ke, acc_k[i]));
      acc_q[i] = hn::MulAdd(o, qo, hn::MulAdd(e, qe, acc_q[i]));
    }
  }
  for (int i = 0; i < kRows; ++i) {
    const float sk = alpha * hn::GetLane(hn::SumOfLanes(df, acc_k[i]));
    const float sq = alpha * hn::GetLane(hn::SumOfLanes(df, acc_q[i]));
    c[i] = tp.beta[0] * (tp.value[r0 + i] - sk);
    tp.out[r0 + i] = sq + c[i] * tp.key_dot_query[0];
  }
}

template <bool kVectorDecay, int kRows>
HWY_INLINE void PairUpdates(const SplitToken& st, int64_t blocks, float alpha, int64_t r0,
                            const hwy::bfloat16_t* s_in, int64_t in_stride, hwy::bfloat16_t* s_out,
                            int64_t out_stride, const float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF cv[kRows];
  for (int i = 0; i < kRows; ++i) cv[i] = hn::Set(df, c[i]);
  const VF alpha_v = hn::Set(df, alpha);
  for (int64_t b = 0; b < blocks; ++b) {
    const VF ke = hn::Load(df, st.key[0] + b * N), ko = hn::Load(df, st.key[1] + b * N);
    const VF de = kVectorDecay ? hn::Load(df, st.decay[0] + b * N) : alpha_v;
    const VF dO = kVectorDecay ? hn::Load(df, st.decay[1] + b * N) : alpha_v;
    for (int i = 0; i < kRows; ++i) {
      VF e, o;
      LoadBF16Pairs(df, s_in + (r0 + i) * in_stride + 2 * b * N, &e, &o);
      StoreBF16Pairs(df, hn::MulAdd(cv[i], ke, hn::Mul(e, de)), hn::MulAdd(cv[i], ko, hn::Mul(o, dO)),
                     s_out + (r0 + i) * out_stride + 2 * b * N);
    }
  }
}

template <bool kVectorDecay>
HWY_NOINLINE void OneTokenWidePairs(const TokenPack& tp, int64_t vectors, const hwy::bfloat16_t* s_in,
                                    int64_t in_stride, hwy::bfloat16_t* s_out, int64_t out_stride) {
  constexpr int kRows = 4;
  const int64_t pair_blocks = vectors / 2, blocks = tp.dv / kRows;
  const int64_t row_bytes = vectors * static_cast<int64_t>(hn::Lanes(DF()) * sizeof(hwy::bfloat16_t));
  const float alpha = kVectorDecay ? 1.0f : tp.alpha[0];
  SplitToken st;
  SplitTokenPack<kVectorDecay>(tp, pair_blocks, &st);
  float c_cur[kRows], c_next[kRows];
  if (blocks > 0) PairDots<kRows>(tp, st, pair_blocks, alpha, 0, s_in, in_stride, c_cur);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int i = 0; i < kRows; ++i) PrefetchRow(s_in, ((b + 1) * kRows + kRowsAhead + i) * in_stride, row_bytes);
    if (b + 1 < blocks) PairDots<kRows>(tp, st, pair_blocks, alpha, (b + 1) * kRows, s_in, in_stride, c_next);
    PairUpdates<kVectorDecay, kRows>(st, pair_blocks, alpha, b * kRows, s_in, in_stride, s_out, out_stride, c_cur);
    for (int i = 0; i < kRows; ++i) c_cur[i] = c_next[i];
  }
  for (int64_t r = blocks * kRows; r < tp.dv; ++r) {
    float c;
    PairDots<1>(tp, st, pair_blocks, alpha, r, s_in, in_stride, &c);
    PairUpdates<kVectorDecay, 1>(st, pair_blocks, alpha, r, s_in, in_stride, s_out, out_stride, &c);
  }
}
#endif

template <bool kVectorDecay, class TS>
HWY_NOINLINE void OneTokenWideRows(const TokenPack& tp, int64_t vectors, const TS* s_in, int64_t in_stride,
                                   TS* s_out, int64_t out_stride) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same<TS, hwy::bfloat16_t>::value) {
    if (vectors % 2 == 0 && vectors * static_cast<int64_t>(hn::Lanes(DF())) <= 2 * SplitToken::kMax)
      return OneTokenWidePairs<kVectorDecay>(tp, vectors, s_in, in_stride, s_out, out_stride);
  }
#endif
  constexpr int kRows = 4;
  const int64_t blocks = tp.dv / kRows;
  float c_cur[kRows], c_next[kRows];
  if (blocks > 0) OneTokenWideDots<kVectorDecay, TS, kRows>(tp, vectors, 0, s_in, in_stride, c_cur);
  const int64_t row_bytes = vectors * static_cast<int64_t>(hn::Lanes(DF()) * sizeof(TS));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int i = 0; i < kRows; ++i) PrefetchRow(s_in, ((b + 1) * kRows + kRowsAhead + i) * in_stride, row_bytes);
    if (b + 1 < blocks)
      OneTokenWideDots<kVectorDecay, TS, kRows>(tp, vectors, (b + 1) * kRows, s_in, in_stride, c_next);
    OneTokenWideUpdates<kVectorDecay, TS, kRows>(tp, vectors, b * kRows, s_in, in_stride, s_out, out_stride, c_cur);
    for (int i = 0; i < kRows; ++i) c_cur[i] = c_next[i];
  }
  for (int64_t r = blocks * kRows; r < tp.dv; ++r) {
    float c;
    OneTokenWideDots<kVectorDecay, TS, 1>(tp, vectors, r, s_in, in_stride, &c);
    OneTokenWideUpdates<kVectorDecay, TS, 1>(tp, vectors, r, s_in, in_stride, s_out, out_stride, &c);
  }
}

template <class TS>
void OneTokenTokens(int64_t vectors, bool bf16_insn, const TokenPack& tp, const TS* s_in, int64_t in_stride,
                    TS* s_out, int64_t out_stride) {
#if HWY_TARGET == HWY_AVX3
  if constexpr (std::is_same<TS, hwy::bfloat16_t>::value) {
    if (bf16_insn && vectors == 8) {
      return tp.decay ? OneTokenRowsBf16Insn<8, true>(tp, s_in, in_stride, s_out, out_stride)
                      : OneTokenRowsBf16Insn<8, false>(tp, s_in, in_stride, s_out, out_stride);
    }
  }
#endif
  (void)bf16_insn;
  switch (vectors) {
#define TXOPS_GDR_ONE_TOKEN(NV)                                                        \
  case NV:                                                                             \
    return tp.decay ? OneTokenRows<NV, true, TS>(tp, s_in, in_stride, s_out, out_stride) \
                    : OneTokenRows<NV, false, TS>(tp, s_in, in_stride, s_out, out_stride);
    TXOPS_GDR_ONE_TOKEN(1)
    TXOPS_GDR_ONE_TOKEN(2)
    TXOPS_GDR_ONE_TOKEN(4)
    TXOPS_GDR_ONE_TOKEN(8)
#undef TXOPS_GDR_ONE_TOKEN
    default: HWY_ASSERT(false);
  }
}

// ---- decode, one token, on a key-major pool: element (v, k) of a head at base + k * key_stride + v ----
// The memory order of transformers' and fla's [N, HV, K, V] states, which reach txops as their transposed views.
// Vectors run along v, so the dot products become column sums over the Dk memory rows:
//   (1) sk = Sᵀ(a⊙k), sq = Sᵀ(a⊙q), four memory rows per step into L1 accumulators of Dv floats;
//       c = beta (v - sk), o = sq + c (k.q);
//   (2) S <- a⊙S + k cᵀ, row by row, from the copy pass (1) left in L1/L2.
// The state traffic is one read and one write, as for the value-major kernels. Groups of C::kVectors·N along v
// (Dv a multiple of that): plain vectors, or for a bf16 pool pair vectors, with sk, sq, c in the codec's order
// until the outputs are stored (the same bits either way: everything is per v).
template <class TS>
struct VCodec {  // plain vectors
  static constexpr int kVectors = 1;
  static HWY_INLINE void Load(DF df, const TS* p, VF* v) { v[0] = LoadF32(df, p); }
  static HWY_INLINE void Store(DF df, const VF* v, TS* p) { StoreF32(df, v[0], p); }
  static HWY_INLINE void LoadOrdered(DF df, const float* p, VF* v) { v[0] = hn::LoadU(df, p); }
  static HWY_INLINE void StoreOrdered(DF df, const VF* v, float* p) { hn::StoreU(v[0], df, p); }
};
#if HWY_TARGET != HWY_SCALAR
struct PairCodec {  // bf16 pairs: even and odd elements of 2N
  static constexpr int kVectors = 2;
  static HWY_INLINE void Load(DF df, const hwy::bfloat16_t* p, VF* v) { LoadBF16Pairs(df, p, &v[0], &v[1]); }
  static HWY_INLINE void Store(DF df, const VF* v, hwy::bfloat16_t* p) { StoreBF16Pairs(df, v[0], v[1], p); }
  static HWY_INLINE void LoadOrdered(DF df, const float* p, VF* v) { hn::LoadInterleaved2(df, p, v[0], v[1]); }
  static HWY_INLINE void StoreOrdered(DF df, const VF* v, float* p) { hn::StoreInterleaved2(v[0], v[1], df, p); }
};
#endif

template <bool kVectorDecay, class TS, class C>
HWY_NOINLINE void KeyMajorColumns(const TokenPack& tp, int64_t dk, const TS* s_in, int64_t in_stride, TS* s_out,
                                  int64_t out_stride) {
  constexpr int V = C::kVectors;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), dv = tp.dv, G = V * N;
  HWY_ALIGN float sk[kGdrKeyMajorMaxValueDim], sq[kGdrKeyMajorMaxValueDim];
  for (int64_t j = 0; j < dv; j += N) hn::Store(hn::Zero(df), df, sk + j), hn::Store(hn::Zero(df), df, sq + j);
  const float* dot_k = kVectorDecay ? tp.decayed_key : tp.key;
  const float* dot_q = kVectorDecay ? tp.decayed_query : tp.query;
  const int64_t row_bytes = dv * static_cast<int64_t>(sizeof(TS));
  constexpr int kRows = 4;
  int64_t r = 0;
  for (; r + kRows <= dk; r += kRows) {
    VF kb[kRows], qb[kRows];
    for (int i = 0; i < kRows; ++i) kb[i] = hn::Set(df, dot_k[r + i]), qb[i] = hn::Set(df, dot_q[r + i]);
    for (int i = 0; i < kRows; ++i) PrefetchRow(s_in, (r + kRowsAhead + i) * in_stride, row_bytes);
    for (int64_t j = 0; j < dv; j += G) {
      VF acc_k[V], acc_q[V];
      for (int u = 0; u < V; ++u) acc_k[u] = hn::Load(df, sk + j + u * N), acc_q[u] = hn::Load(df, sq + j + u * N);
      for (int i = 0; i < kRows; ++i) {
        VF sv[V];
        C::Load(df, s_in + (r + i) * in_stride + j, sv);
        for (int u = 0; u < V; ++u) acc_k[u] = hn::MulAdd(sv[u], kb[i], acc_k[u]), acc_q[u] = hn::MulAdd(sv[u], qb[i], acc_q[u]);
      }
      for (int u = 0; u < V; ++u) hn::Store(acc_k[u], df, sk + j + u * N), hn::Store(acc_q[u], df, sq + j + u * N);
    }
  }
  for (; r < dk; ++r) {
    const VF kb = hn::Set(df, dot_k[r]), qb = hn::Set(df, dot_q[r]);
    for (int64_t j = 0; j < dv; j += G) {
      VF sv[V];
      C::Load(df, s_in + r * in_stride + j, sv);
      for (int u = 0; u < V; ++u) {
        hn::Store(hn::MulAdd(sv[u], kb, hn::Load(df, sk + j + u * N)), df, sk + j + u * N);
        hn::Store(hn::MulAdd(sv[u], qb, hn::Load(df, sq + j + u * N)), df, sq + j + u * N);
      }
    }
  }
  const float alpha = kVectorDecay ? 1.0f : tp.alpha[0];
  const VF alpha_v = hn::Set(df, alpha), beta = hn::Set(df, tp.beta[0]), kq = hn::Set(df, tp.key_dot_query[0]);
  for (int64_t j = 0; j < dv; j += G) {  // sk becomes c
    VF value[V], out[V];
    C::LoadOrdered(df, tp.value + j, value);
    for (int u = 0; u < V; ++u) {
      const VF c = hn::Mul(beta, hn::Sub(value[u], hn::Mul(alpha_v, hn::Load(df, sk + j + u * N))));
      out[u] = hn::MulAdd(c, kq, hn::Mul(alpha_v, hn::Load(df, sq + j + u * N)));
      hn::Store(c, df, sk + j + u * N);
    }
    C::StoreOrdered(df, out, tp.out + j);
  }
  for (r = 0; r < dk; ++r) {
    const VF decay = hn::Set(df, kVectorDecay ? tp.decay[r] : alpha), kr = hn::Set(df, tp.key[r]);
    const TS* src = s_in + r * in_stride;
    TS* dst = s_out + r * out_stride;
    for (int64_t j = 0; j < dv; j += G) {
      VF sv[V];
      C::Load(df, src + j, sv);
      for (int u = 0; u < V; ++u) sv[u] = hn::MulAdd(kr, hn::Load(df, sk + j + u * N), hn::Mul(sv[u], decay));
      C::Store(df, sv, dst + j);
    }
  }
}

template <bool kVectorDecay, class TS>
HWY_INLINE void OneTokenKeyMajor(const TokenPack& tp, int64_t dk, const TS* s_in, int64_t in_stride, TS* s_out,
                                 int64_t out_stride) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same<TS, hwy::bfloat16_t>::value) {
    if (tp.dv % (2 * static_cast<int64_t>(hn::Lanes(DF()))) == 0)
      return KeyMajorColumns<kVectorDecay, TS, PairCodec>(tp, dk, s_in, in_stride, s_out, out_stride);
  }
#endif
  KeyMajorColumns<kVectorDecay, TS, VCodec<TS>>(tp, dk, s_in, in_stride, s_out, out_stride);
}

// True when TokenMajorRows handles this width (k and q of a token fit in registers next to a row).
bool TokenMajorFits(int64_t vectors) { return HWY_TARGET != HWY_SCALAR && vectors <= kRegisterBudget / 2; }

void TokenMajorTokens(int64_t vectors, const TokenPack& tp, int64_t n, float* state) {
  switch (vectors) {
    case 1: return TokenMajorRows<1>(tp, n, state);
    case 2: return TokenMajorRows<2>(tp, n, state);
    case 4: return TokenMajorRows<4>(tp, n, state);
    case 8: return TokenMajorRows<8>(tp, n, state);
    default: HWY_ASSERT(false);
  }
}

// ---- the generic kernel: fp32 rows in memory (any width; the SCALAR target and wide rows) ----
void GenericRowsTokens(const TokenPack& tp, int64_t n, float* state) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t row = 0; row < tp.dv; ++row) {
    float* s = state + row * tp.dkp;
    for (int64_t i = 0; i < n; ++i) {
      const float* k = tp.key + i * tp.dkp;
      const float* ak = tp.decayed_key + i * tp.dkp;
      const float* q = tp.query + i * tp.dkp;
      VF acc = hn::Zero(df);
      for (int64_t j = 0; j < tp.dkp; j += N) acc = hn::MulAdd(hn::LoadU(df, s + j), hn::LoadU(df, ak + j), acc);
      const float c = tp.beta[i] * (tp.value[i * tp.dv + row] - hn::GetLane(hn::SumOfLanes(df, acc)));
      const VF cv = hn::Set(df, c);
      const VF alpha = hn::Set(df, tp.decay ? 0.0f : tp.alpha[i]);
      VF out = hn::Zero(df);
      for (int64_t j = 0; j < tp.dkp; j += N) {
        const VF a = tp.decay ? hn::LoadU(df, tp.decay + i * tp.dkp + j) : alpha;
        const VF updated = hn::MulAdd(cv, hn::LoadU(df, k + j), hn::Mul(hn::LoadU(df, s + j), a));
        hn::StoreU(updated, df, s + j);
        out = hn::MulAdd(updated, hn::LoadU(df, q + j), out);
      }
      tp.out[i * tp.dv + row] = hn::GetLane(hn::SumOfLanes(df, out));
    }
  }
}

// ---- per (sequence, head) drivers ----
// Where a head's state lives: element (row, col) at base + row * row_stride + col * col_stride.
template <class TS>
struct HeadState {
  TS* base;
  int64_t row_stride, col_stride;
};

template <class TS>
HeadState<TS> PoolHead(const TensorView& pool, int64_t slot, int64_t h) {
  return {static_cast<TS*>(pool.data) + slot * pool.strides[0] + h * pool.strides[1], pool.strides[2],
          pool.strides[3]};
}

// The start state of sequence b, head h: its pool slot, or its copy in the snapshot (B, Nv, Dv, Dk).
template <class TS>
HeadState<TS> StartState(const GdrPlan& plan, int64_t b, int64_t h, const void* snapshot) {
  const GdrProblem& p = plan.problem;
  if (snapshot != nullptr) {
    TS* base = const_cast<TS*>(static_cast<const TS*>(snapshot)) + (b * p.num_value_heads + h) * p.value_dim * p.key_dim;
    return {base, p.key_dim, 1};
  }
  return PoolHead<TS>(p.state_in, p.read_slot[b], h);
}

// One token of one head straight from src to dst (the pool itself, or an initial state to a final state), with
// the kernel the layout allows: key-major (v stride 1), or value-major rows (token-major registers or wide rows).
// The plan checked that one applies (key_major_state / direct_state, prefill_one_token_direct).
template <class TS>
void OneTokenStraight(const GdrPlan& plan, const TokenPack& tp, const HeadState<TS>& src, const HeadState<TS>& dst) {
  const int64_t vectors = plan.layout.vectors_per_row;
  if (src.row_stride == 1 && src.col_stride != 1) {
    if (tp.decay) {
      OneTokenKeyMajor<true, TS>(tp, plan.problem.key_dim, src.base, src.col_stride, dst.base, dst.col_stride);
    } else {
      OneTokenKeyMajor<false, TS>(tp, plan.problem.key_dim, src.base, src.col_stride, dst.base, dst.col_stride);
    }
  } else if (plan.layout.token_major) {
    OneTokenTokens<TS>(vectors, plan.avx512_bf16, tp, src.base, src.row_stride, dst.base, dst.row_stride);
  } else if (tp.decay) {
    OneTokenWideRows<true, TS>(tp, vectors, src.base, src.row_stride, dst.base, dst.row_stride);
  } else {
    OneTokenWideRows<false, TS>(tp, vectors, src.base, src.row_stride, dst.base, dst.row_stride);
  }
}

// (core/simd_matrix_copy-inl.h: a key-major head moves in 8 x 8 register tiles)
template <class TS>
void StageIn(const HeadState<TS>& src, const GdrProblem& p, int64_t dkp, float* dst) {
  LoadMatrixF32(src.base, src.row_stride, src.col_stride, p.value_dim, p.key_dim, dst, dkp);
  if (dkp > p.key_dim)
    for (int64_t r = 0; r < p.value_dim; ++r) std::fill(dst + r * dkp + p.key_dim, dst + (r + 1) * dkp, 0.0f);
}

template <class TS>
void StageOut(const float* src, const GdrProblem& p, int64_t dkp, const HeadState<TS>& dst) {
  StoreMatrixF32(src, dkp, p.value_dim, p.key_dim, dst.base, dst.row_stride, dst.col_stride);
}

// Scratch layout of one thread (floats): the token pack, then the staged fp32 states.
TokenPack CarveScratch(const GdrPlan& plan, float* scratch, float** staged_state) {
  const int64_t dkp = plan.layout.key_dim_padded, dv = plan.problem.value_dim, tb = kGdrTokenBlock;
  TokenPack tp;
  tp.dkp = dkp;
  tp.dv = dv;
  float* cursor = scratch;
  auto take = [&cursor](int64_t floats) {
    float* p = cursor;
    cursor += (floats + 15) / 16 * 16;
    return p;
  };
  tp.key = take(tb * dkp);
  tp.decayed_key = take(tb * dkp);
  tp.query = take(tb * dkp);
  tp.decay = plan.problem.has_gk ? take(tb * dkp) : nullptr;
  tp.decayed_query = plan.problem.has_gk ? take(tb * dkp) : nullptr;
  tp.key_dot_query = take(tb);
  tp.alpha = take(tb);
  tp.value = take(tb * dv);
  tp.beta = take(tb);
  tp.out = take(tb * dv);
  *staged_state = cursor;  // plan.staged_heads states of dv x dkp floats
  return tp;
}

// Runs one token block of one head on its staged fp32 state with the kernel the layout allows.
void RunTokenBlock(const GdrPlan& plan, const TokenPack& tp, int64_t n, float* staged) {
  const int64_t vectors = plan.layout.vectors_per_row;
  if (!plan.problem.decode && !tp.decay && plan.layout.token_major) {
    TokenMajorTokens(vectors, tp, n, staged);
  } else if (plan.layout.register_rows > 0) {
    RegisterRowsTokens<float>(vectors, tp, n, staged, plan.layout.key_dim_padded, staged, nullptr,
                              plan.layout.key_dim_padded);
  } else {
    GenericRowsTokens(tp, n, staged);
  }
}

// Prefill: value heads [h_begin, h_end) of sequence b. Token blocks outermost, heads inside, so the rows of a
// token block (all heads of a token share a few pages) are read while they are hot; the fp32 states of the
// heads stay staged in scratch for the whole sequence.
template <class TA, class TS>
void PrefillSequenceHeads(const GdrPlan& plan, int64_t b, int64_t h_begin, int64_t h_end, float* scratch) {
  const GdrProblem& p = plan.problem;
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1], dkp = plan.layout.key_dim_padded;
  const int64_t state_floats = p.value_dim * dkp;
  float* staged = nullptr;
  const TokenPack tp = CarveScratch(plan, scratch, &staged);
  if (plan.prefill_one_token_direct && t_end - t_begin == 1 && p.read_slot[b] >= 0) {
    for (int64_t h = h_begin; h < h_end; ++h) {  // (fla's fused_recurrent decode step): no staging
      PackTokens<TA>(p, h, t_begin, 1, tp);
      OneTokenStraight<TS>(plan, tp, StartState<TS>(plan, b, h, nullptr), PoolHead<TS>(p.state_out, p.final_slot[b], h));
      StoreOutputs<TA>(p, h, t_begin, 1, tp.out);
    }
    return;
  }
  for (int64_t h = h_begin; h < h_end; ++h) {
    float* dst = staged + (h - h_begin) * state_floats;
    if (p.read_slot[b] < 0) {  // a sequence that starts from the zero state
      std::fill(dst, dst + state_floats, 0.0f);
    } else {
      StageIn(StartState<TS>(plan, b, h, nullptr), p, dkp, dst);
    }
  }
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kGdrTokenBlock) {
    const int64_t n = t_end - t0 < kGdrTokenBlock ? t_end - t0 : kGdrTokenBlock;
    for (int64_t h = h_begin; h < h_end; ++h) {
      PackTokens<TA>(p, h, t0, n, tp);
      RunTokenBlock(plan, tp, n, staged + (h - h_begin) * state_floats);
      StoreOutputs<TA>(p, h, t0, n, tp.out);
    }
  }
  for (int64_t h = h_begin; h < h_end; ++h)
    StageOut(staged + (h - h_begin) * state_floats, p, dkp, PoolHead<TS>(p.state_out, p.final_slot[b], h));
}

// Decode: one (sequence, head); each token's state goes to its slot.
template <class TA, class TS>
void DecodeSequenceHead(const GdrPlan& plan, int64_t b, int64_t h, float* scratch, const void* snapshot) {
  const GdrProblem& p = plan.problem;
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1], dkp = plan.layout.key_dim_padded;
  if (t_end == t_begin) return;  // an empty sequence reads and writes nothing
  float* staged = nullptr;
  const TokenPack tp = CarveScratch(plan, scratch, &staged);
  const HeadState<TS> start = StartState<TS>(plan, b, h, snapshot);
  const bool one_token = t_end - t_begin == 1 && (plan.layout.token_major || plan.layout.register_rows == 0);
  if (plan.key_major_state || (plan.direct_state && one_token)) {  // one token, straight on the pool
    PackTokens<TA>(p, h, t_begin, 1, tp);
    OneTokenStraight<TS>(plan, tp, start, PoolHead<TS>(p.state_out, p.write_slot[t_begin], h));
    StoreOutputs<TA>(p, h, t_begin, 1, tp.out);
    return;
  }
  if (plan.direct_state) {  // rows straight from / to the pool (the whole sequence is one token block)
    TS* token_out[kGdrTokenBlock] = {};
    for (int64_t t = t_begin; t < t_end; ++t) token_out[t - t_begin] = PoolHead<TS>(p.state_out, p.write_slot[t], h).base;
    PackTokens<TA>(p, h, t_begin, t_end - t_begin, tp);
    RegisterRowsTokens<TS>(plan.layout.vectors_per_row, tp, t_end - t_begin, start.base, start.row_stride, nullptr,
                           token_out, p.state_out.strides[2]);
    StoreOutputs<TA>(p, h, t_begin, t_end - t_begin, tp.out);
    return;
  }
  StageIn(start, p, dkp, staged);
  for (int64_t t = t_begin; t < t_end; ++t) {
    PackTokens<TA>(p, h, t, 1, tp);
    RunTokenBlock(plan, tp, 1, staged);
    StoreOutputs<TA>(p, h, t, 1, tp.out);
    StageOut(staged, p, dkp, PoolHead<TS>(p.state_out, p.write_slot[t], h));
  }
}

template <class TA, class TS>
void RunItemsTyped(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch, const void* snapshot) {
  const GdrProblem& p = plan.problem;
  const int64_t nv = p.num_value_heads;
  if (!p.decode) {  // items (sequence, head), grouped by sequence
    for (int64_t item = begin; item < end;) {
      const int64_t b = item / nv, h_begin = item % nv;
      const int64_t h_end = end - item < nv - h_begin ? h_begin + (end - item) : nv;
      PrefillSequenceHeads<TA, TS>(plan, b, h_begin, h_end, scratch);
      item += h_end - h_begin;
    }
    return;
  }
  for (int64_t item = begin; item < end; ++item) {
    if (plan.heads_only) {  // item = head; sequences in order
      for (int64_t b = 0; b < p.batch; ++b) DecodeSequenceHead<TA, TS>(plan, b, item, scratch, snapshot);
    } else {  // item = (sequence, head)
      DecodeSequenceHead<TA, TS>(plan, item / nv, item % nv, scratch, snapshot);
    }
  }
}

template <class TS>
void RunItemsState(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch, const void* snapshot) {
  switch (plan.problem.query.dtype) {
    case DType::kBF16: return RunItemsTyped<hwy::bfloat16_t, TS>(plan, begin, end, scratch, snapshot);
    case DType::kF16: return RunItemsTyped<hwy::float16_t, TS>(plan, begin, end, scratch, snapshot);
    default: return RunItemsTyped<float, TS>(plan, begin, end, scratch, snapshot);
  }
}

}  // namespace

GdrRowLayout GdrLayout(int64_t key_dim) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  GdrRowLayout layout;
  layout.lanes = N;
  layout.vectors_per_row = (key_dim + N - 1) / N;
  if (N > 1) {
    for (int64_t bucket = 1; bucket <= kRegisterBudget; bucket *= 2) {
      if (layout.vectors_per_row <= bucket) {
        layout.vectors_per_row = bucket;
        layout.register_rows = static_cast<int>(kRegisterBudget / bucket >= 4 ? 4 : kRegisterBudget / bucket);
        break;
      }
    }
  }
  layout.key_dim_padded = layout.vectors_per_row * N;
  layout.token_major = layout.register_rows > 0 && TokenMajorFits(layout.vectors_per_row);
  return layout;
}

void GdrRunItems(const GdrPlan& plan, int64_t begin, int64_t end, float* scratch, const void* snapshot) {
  if (plan.problem.state_in.dtype == DType::kBF16) {
    RunItemsState<hwy::bfloat16_t>(plan, begin, end, scratch, snapshot);
  } else {
    RunItemsState<float>(plan, begin, end, scratch, snapshot);
  }
}

void GdrSnapshot(const GdrPlan& plan, int64_t begin, int64_t end, void* snapshot) {
  const GdrProblem& p = plan.problem;
  // signed: strides may be negative (a size_t factor would turn the offset into a wrapping unsigned one)
  const int64_t elem = static_cast<int64_t>(dtype_size(p.state_in.dtype));
  for (int64_t item = begin; item < end; ++item) {
    const int64_t b = item / p.num_value_heads, h = item % p.num_value_heads;
    if (p.read_slot[b] < 0) continue;
    const char* src = static_cast<const char*>(p.state_in.data) +
                      (p.read_slot[b] * p.state_in.strides[0] + h * p.state_in.strides[1]) * elem;
    char* dst = static_cast<char*>(snapshot) + item * p.value_dim * p.key_dim * elem;
    for (int64_t r = 0; r < p.value_dim; ++r)
      for (int64_t c = 0; c < p.key_dim; ++c)
        std::memcpy(dst + (r * p.key_dim + c) * elem, src + (r * p.state_in.strides[2] + c * p.state_in.strides[3]) * elem,
                    static_cast<size_t>(elem));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
GdrLayoutFn* select_gdr_layout(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrLayout); }
GdrRunItemsFn* select_gdr_run_items(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrRunItems); }
GdrSnapshotFn* select_gdr_snapshot(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrSnapshot); }
}  // namespace txops
#endif
