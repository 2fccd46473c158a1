// kernels_recurrent.cpp — the row-fused recurrent kernel of the gated delta rule, for prefill and decode
// (Highway: AVX3, AVX2, SCALAR). Row i of S depends only on row i and the token's k, q, v_i, beta, decay, so a
// block of R rows stays in registers across a block of up to kGdrTokenBlock tokens:
//   sk = S_r . (a ⊙ k)          (a: the decay, scalar exp(g) or per column exp(g + gk))
//   c  = beta (v_r - sk)
//   S_r = c k + a ⊙ S_r;  o_r = S_r . (q scale)
// Inputs of a token block are first packed to fp32 (any strides, padded to whole vectors); S is either staged
// in an fp32 buffer (prefill; decode fallback) or, for decode, read from and written to the pool directly
// (bf16 or fp32 rows), once per token: the one-token kernels of kernels_one_token-inl.h (also for key-major pools,
// transformers' and fla's order), the register rows here for several tokens. This file holds the token packing,
// the staging and the drivers. Every output element is computed by one item in a fixed order, so results do not
// depend on the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gated_delta_rule/kernels_recurrent.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/kernels.h"
#include "ops/gated_delta_rule/kernels_one_token-inl.h"
#include "ops/gated_delta_rule/recurrent_pack-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

using namespace gdr;  // NOLINT: this target's shared pieces (recurrent_pack-inl.h, kernels_one_token-inl.h)

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
// next_in: the key-major state of the same pool the caller updates next (prefetched; nullptr: none).
template <class TS>
void OneTokenStraight(const GdrPlan& plan, const TokenPack& tp, const HeadState<TS>& src, const HeadState<TS>& dst,
                      const TS* next_in = nullptr) {
  const int64_t vectors = plan.layout.vectors_per_row;
  if (src.row_stride == 1 && src.col_stride != 1) {
    const int64_t dk = plan.problem.key_dim;
    if (tp.decay) {
      OneTokenKeyMajor<true, TS>(plan.avx512_bf16, tp, dk, src.base, src.col_stride, dst.base, dst.col_stride,
                                 next_in);
    } else {
      OneTokenKeyMajor<false, TS>(plan.avx512_bf16, tp, dk, src.base, src.col_stride, dst.base, dst.col_stride,
                                  next_in);
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
      const TS* next_in = h + 1 < h_end ? StartState<TS>(plan, b, h + 1, nullptr).base : nullptr;
      OneTokenStraight<TS>(plan, tp, StartState<TS>(plan, b, h, nullptr), PoolHead<TS>(p.state_out, p.final_slot[b], h),
                           next_in);
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

// Decode: one (sequence, head); each token's state goes to its slot. next_in: see KeyMajorStart.
template <class TA, class TS>
void DecodeSequenceHead(const GdrPlan& plan, int64_t b, int64_t h, float* scratch, const void* snapshot,
                        const TS* next_in) {
  const GdrProblem& p = plan.problem;
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1], dkp = plan.layout.key_dim_padded;
  if (t_end == t_begin) return;  // an empty sequence reads and writes nothing
  float* staged = nullptr;
  const TokenPack tp = CarveScratch(plan, scratch, &staged);
  const HeadState<TS> start = StartState<TS>(plan, b, h, snapshot);
  const bool one_token = t_end - t_begin == 1 && (plan.layout.token_major || plan.layout.register_rows == 0);
  if (plan.key_major_state || (plan.direct_state && one_token)) {  // one token, straight on the pool
    PackTokens<TA>(p, h, t_begin, 1, tp);
    OneTokenStraight<TS>(plan, tp, start, PoolHead<TS>(p.state_out, p.write_slot[t_begin], h), next_in);
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

// The pool state a key-major decode of (b, h) reads (what the unit before it prefetches), or nullptr when that
// decode does not run OneTokenKeyMajor on the pool (another kernel, an empty sequence, a zero start, a snapshot).
template <class TS>
const TS* KeyMajorStart(const GdrPlan& plan, int64_t b, int64_t h, const void* snapshot) {
  const GdrProblem& p = plan.problem;
  if (!plan.key_major_state || snapshot != nullptr || p.seq_start[b + 1] == p.seq_start[b] || p.read_slot[b] < 0)
    return nullptr;
  return PoolHead<TS>(p.state_in, p.read_slot[b], h).base;
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
      for (int64_t b = 0; b < p.batch; ++b) {
        const TS* next_in = b + 1 < p.batch ? KeyMajorStart<TS>(plan, b + 1, item, snapshot)
                            : item + 1 < end ? KeyMajorStart<TS>(plan, 0, item + 1, snapshot)
                                             : nullptr;
        DecodeSequenceHead<TA, TS>(plan, b, item, scratch, snapshot, next_in);
      }
    } else {  // item = (sequence, head)
      const TS* next_in = item + 1 < end ? KeyMajorStart<TS>(plan, (item + 1) / nv, (item + 1) % nv, snapshot) : nullptr;
      DecodeSequenceHead<TA, TS>(plan, item / nv, item % nv, scratch, snapshot, next_in);
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
