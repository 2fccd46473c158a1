// kernels_chunked.cpp — the chunked prefill kernel of the gated delta rule (Highway: AVX3, AVX2, SCALAR).
// Why: it turns the token recurrence into small GEMMs (64 x 128 x 128 and the like) run by a register-blocked
// micro-kernel (chunked_gemm-inl.h), the alternative to the row-fused recurrent kernel; plan.cpp picks.
// Per (sequence, value head), chunks of n <= kGdrChunk tokens, S0 the state before the chunk (kept transposed,
// St = S0ᵀ, Dk x Dv fp32), G = cumsum(g) in double restarted per chunk, Γ_ij = exp(G_i - G_j) (j <= i only).
// Phase one of a chunk (PrepareChunk; independent of the state, so any chunk can run on any thread):
//   A = strictly_lower(β⊙(K Kᵀ)⊙Γ),  P = lower(Q·scale Kᵀ ⊙ Γ), the scaled rows and Kᵀ   -> a chunk record
// The state pass (StatePass; sequential over the chunks of one (sequence, head); the Dv columns are independent):
//   X  = [β⊙e^G⊙K ; e^G⊙Q·scale] St                  (one GEMM, 2n x Dk x Dv)
//   V' = (I + A)^{-1} (β⊙V - X_top)                   (forward substitution; equals U - W S0ᵀ of the spec)
//   O  = X_bottom + P V'
//   St ← exp(G_last) St + (Kᵀ ⊙ exp(G_last - G)) V'   (the decays folded into the columns of Kᵀ in phase one)
// Two drivers: items mode (each thread owns whole (sequence, head) items and runs both phases per chunk in its
// scratch) and chunk mode (waves of chunks: phase one of every chunk of the wave in parallel over chunks, then the
// state pass in parallel over (item, Dv column block)). Both run the same two functions on the same data, and a
// column block's arithmetic is that of the whole row (chunked_gemm-inl.h), so the bits do not depend on the mode
// or the thread count. All arithmetic is fp32 (inputs widened exactly); outputs and final states are rounded once.
// Serving options (args.h): the start state may be a pool row or zero, the final state goes to a pool row, and
// the state after every checkpoint_every tokens is stored as a snapshot (the staged fp32 state, rounded only when
// the snapshots are bf16).
// Derivation and measurements: README.md ("Chunked algorithm").
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
#include <vector>

#include "core/parallel.h"
#include "core/simd_convert-inl.h"
#include "core/simd_matrix_copy-inl.h"
#include "ops/gated_delta_rule/chunked_gemm-inl.h"
#include "ops/gated_delta_rule/chunked_layout.h"
#include "ops/gated_delta_rule/kernels.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

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
  bool bf16_dot = false;     // grams with vdpbf16ps (bf16 activations, AVX3 CPUs with AVX512_BF16)
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

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
// dst (8 x 8, row stride ld_dst) = transpose of src (8 x 8, row stride ld_src).
HWY_INLINE void Transpose8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld_src);
  TransposeTile8x8(r);
  for (int i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * ld_dst, r[i]);
}
#endif

// kt (dkp x C) = Kᵀ of the first n rows of kq (row stride dkp, padded columns zero); token columns >= n zero.
void TransposeKeys(int64_t n, int64_t dkp, const float* kq, float* kt) {
  int64_t i0 = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  for (; i0 + 8 <= n; i0 += 8)
    for (int64_t c0 = 0; c0 < dkp; c0 += 8) Transpose8x8(kq + i0 * dkp + c0, dkp, kt + c0 * C + i0, C);
#endif
  for (int64_t c = 0; c < dkp; ++c) {
    for (int64_t i = i0; i < n; ++i) kt[c * C + i] = kq[i * dkp + c];
    for (int64_t i = n; i < C; ++i) kt[c * C + i] = 0.0f;
  }
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

// Packs tokens [t0, t0 + n) of value head h (its key head's rows already in s.kq): G, e^G, β (scratch), the scaled
// rows, β⊙V and the decays (record).
template <class TA>
void PackChunk(const ChunkContext& cx, int64_t h, int64_t t0, int64_t n, const GdrPackScratch& s,
               const GdrChunkRecord& r) {
  const GdrProblem& p = *cx.p;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t dkp = cx.dkp;
  double g_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = t0 + i;
    s.beta[i] = LoadScalarF32(Element<TA>(p.beta, t, h));
    g_sum += p.has_g ? static_cast<double>(*Element<float>(p.g, t, h)) : 0.0;
    s.cum[i] = g_sum;
    s.gamma[i] = static_cast<float>(std::exp(g_sum));
    LoadRow(Element<TA>(p.value, t, h), p.value.strides[2], p.value_dim, cx.dvp, s.beta[i], r.bv + i * cx.dvp);
    const VF kscale = hn::Set(df, s.beta[i] * s.gamma[i]), qscale = hn::Set(df, s.gamma[i] * p.scale);
    for (int64_t j = 0; j < dkp; j += N) {
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + i * dkp + j), kscale), df, r.scaled + i * dkp + j);
      hn::StoreU(hn::Mul(hn::LoadU(df, s.kq + (n + i) * dkp + j), qscale), df, r.scaled + (n + i) * dkp + j);
    }
  }
  for (int64_t i = 0; i < n; ++i) r.decay[i] = static_cast<float>(std::exp(s.cum[n - 1] - s.cum[i]));
  for (int64_t i = n; i < C; ++i) r.decay[i] = 0.0f;
  r.decay[C] = static_cast<float>(std::exp(s.cum[n - 1]));
}

#if HWY_TARGET == HWY_AVX3
// gram rows [0, 2n) = [K; Q] Kᵀ with vdpbf16ps, columns j < (tile's last row + 1) rounded to 16 (the lower
// triangle). The operands are the bf16 inputs themselves (the widened floats' upper halves).
void GramsBf16(int64_t n, int64_t dkp, const GdrPackScratch& s, float* gram) {
  const int64_t pairs = dkp / 2;
  for (int64_t i = 0; i < 2 * n; ++i)
    for (int64_t c = 0; c < dkp; ++c) {
      uint32_t bits;
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

// gram rows [0, n) = A (β_i (k_i·k_j) Γ_ij, j < i), rows [n, 2n) = P ((q_i·k_j) scale Γ_ij, j <= i), from the raw
// grams in s.grams; zero elsewhere. Γ is exp of the difference G_i - G_j, formed only for j <= i.
void MaskWithDecay(int64_t n, int64_t np, float scale, const GdrPackScratch& s, float* gram) {
  const float* raw = s.grams;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) s.diff[j] = static_cast<float>(s.cum[i] - s.cum[j]);
    for (int64_t j = i + 1; j < np; ++j) s.diff[j] = 0.0f;
    float* a = gram + i * C;
    float* pr = gram + (n + i) * C;
    const VF beta = hn::Set(df, s.beta[i]), qscale = hn::Set(df, scale);
    for (int64_t j = 0; j < np; j += N) {
      VF d = hn::LoadU(df, s.diff + j);
#if HWY_TARGET == HWY_SCALAR  // Highway's scalar Exp converts its argument to int: a NaN gate (g) would be UB
      const auto nan = hn::IsNaN(d);
      d = hn::IfThenZeroElse(nan, d);
      const VF gamma = hn::IfThenElse(nan, hn::Set(df, NAN), hn::Exp(df, d));
#else
      const VF gamma = hn::Exp(df, d);
#endif
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
  if (s.key_head != hk || s.key_t0 != t0) {
    PackKeys<TA>(cx, hk, t0, n, s);
#if HWY_TARGET == HWY_AVX3
    if (cx.bf16_dot) {
      GramsBf16(n, dkp, s, s.grams);
    } else
#endif
    {
      Gemm(n, np, dk, s.kq, dkp, s.kt, C, s.grams, C, false, 1.0f, Triangle::kLowerC);                   // K Kᵀ
      Gemm(n, np, dk, s.kq + n * dkp, dkp, s.kt, C, s.grams + n * C, C, false, 1.0f, Triangle::kLowerC);  // Q Kᵀ
    }
    s.key_head = hk;
    s.key_t0 = t0;
  }
  PackChunk<TA>(cx, h, t0, n, s, r);
  MaskWithDecay(n, np, cx.p->scale, s, r.gram);
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
void SolveRows(int64_t n, int64_t c0, int64_t c1, int64_t dvp, const GdrChunkRecord& r, const GdrPassScratch& w) {
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

// The chunk of tokens [t0, t0 + n) of head h on columns [c0, c1) of its staged state st (Dk x dvp, transposed):
// updates those columns of st and writes those columns of the chunk's outputs.
template <class TA>
void StatePass(const ChunkContext& cx, int64_t h, int64_t t0, int64_t n, const GdrChunkRecord& r,
               const GdrPassScratch& w, float* st, int64_t c0, int64_t c1) {
  const GdrProblem& p = *cx.p;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t dk = p.key_dim, dvp = cx.dvp, cols = c1 - c0;
  Gemm(2 * n, cols, dk, r.scaled, cx.dkp, st + c0, dvp, w.x + c0, dvp, false);  // X = [βe^G K; e^G Q] Sᵀ
  SolveRows(n, c0, c1, dvp, r, w);
  Gemm(n, cols, n, r.gram + n * C, C, w.vp + c0, dvp, w.x + n * dvp + c0, dvp, true, 1.0f,
       Triangle::kLowerA);                                                    // O = X_bottom + P V'
  Gemm(dk, cols, n, r.kt, C, w.vp + c0, dvp, st + c0, dvp, true, r.decay[C]);  // Sᵀ = e^{G_last} Sᵀ + (Kᵀ⊙decay) V'
  const int64_t c_end = std::min(c1, p.value_dim), stride = p.out.strides[2];
  for (int64_t i = 0; i < n; ++i) {
    TA* dst = static_cast<TA*>(p.out.data) + (t0 + i) * p.out.strides[0] + h * p.out.strides[1];
    const float* src = w.x + (n + i) * dvp;
    int64_t c = c0;
    if (stride == 1)
      for (; c + N <= c_end; c += N) StoreF32(df, hn::LoadU(df, src + c), dst + c);
    for (; c < c_end; ++c) StoreScalarF32(src[c], dst + c * stride);
  }
}

// ---- staging the states ----

template <class TS>
TS* StateHead(const TensorView& v, int64_t b, int64_t h) {
  return static_cast<TS*>(v.data) + b * v.strides[0] + h * v.strides[1];
}

// Columns [c0, c1) of st = S0ᵀ of (b, h) in fp32 (columns >= Dv zero): the row read_slot[b] of initialState, or
// zeros for a sequence that starts from the zero state.
template <class TS>
void StageColumns(const GdrProblem& p, int64_t dvp, int64_t b, int64_t h, int64_t c0, int64_t c1, float* st) {
  const int64_t dv = p.value_dim, r_end = std::min(c1, dv);
  if (p.read_slot[b] < 0) {
    for (int64_t c = 0; c < p.key_dim; ++c)
      for (int64_t r = c0; r < c1; ++r) st[c * dvp + r] = 0.0f;
    return;
  }
  const TS* in = StateHead<TS>(p.state_in, p.read_slot[b], h);
  if (r_end > c0)  // (core/simd_matrix_copy-inl.h: a value-major state moves in 8 x 8 register tiles)
    LoadMatrixF32(in + c0 * p.state_in.strides[2], p.state_in.strides[3], p.state_in.strides[2], p.key_dim,
                  r_end - c0, st + c0, dvp);
  for (int64_t c = 0; c < p.key_dim; ++c)
    for (int64_t r = std::max(c0, dv); r < c1; ++r) st[c * dvp + r] = 0.0f;
}

// Columns [c0, c1) of st (Sᵀ) rounded into row `row` of `dst` (finalState or the snapshots), head h.
template <class TD>
void StoreColumnsTo(const GdrProblem& p, int64_t dvp, const TensorView& dst, int64_t row, int64_t h, int64_t c0,
                    int64_t c1, const float* st) {
  TD* out = StateHead<TD>(dst, row, h);
  const int64_t r_end = std::min(c1, p.value_dim);
  if (r_end > c0)
    StoreMatrixF32(st + c0, dvp, p.key_dim, r_end - c0, out + c0 * dst.strides[2], dst.strides[3], dst.strides[2]);
}

// The final Sᵀ of (b, h) into finalState.
template <class TS>
void StoreColumns(const GdrProblem& p, int64_t dvp, int64_t b, int64_t h, int64_t c0, int64_t c1, const float* st) {
  StoreColumnsTo<TS>(p, dvp, p.state_out, p.final_slot[b], h, c0, c1, st);
}

// After the chunk of sequence b that ends at token offset `end`: its snapshot, when one falls there.
void StoreSnapshot(const GdrProblem& p, int64_t dvp, int64_t b, int64_t end, int64_t h, int64_t c0, int64_t c1,
                   const float* st) {
  const int64_t row = p.checkpoint_row(b, end);
  if (row < 0) return;
  if (p.checkpoints.dtype == DType::kBF16) {
    StoreColumnsTo<hwy::bfloat16_t>(p, dvp, p.checkpoints, row, h, c0, c1, st);
  } else {
    StoreColumnsTo<float>(p, dvp, p.checkpoints, row, h, c0, c1, st);
  }
}

// ---- items mode: a thread owns whole (sequence, head) items ----

// Prefetches the rows of q, k, v that the chunk of head h reads (one head ahead: its rows are in other cache
// lines of the pages just used, which the hardware prefetchers do not fetch). SequenceHeads also prefetches the
// next head's staged state (evicted to L3 by the other heads' chunks since its last use): 124.8 against 128.4 ms
// (best of 6 alternating runs, Nv = 32, T = 2048, 1 thread, Zen 3).
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

// Value heads [h_begin, h_end) of sequence b: stage each S0ᵀ, run the chunks in order (chunks outermost, heads
// inside, so a chunk's rows of q, k, v, out, which all heads share a few pages with, are read while hot), store
// the final states. `scratch` holds a pack scratch, one record, a pass scratch, then the staged states.
template <class TA, class TS>
void SequenceHeads(const ChunkContext& cx, int64_t b, int64_t h_begin, int64_t h_end, float* scratch) {
  const GdrProblem& p = *cx.p;
  GdrPackScratch s;
  GdrChunkRecord r;
  GdrPassScratch w;
  float* cursor = scratch + gdr_carve_pack(scratch, cx.dkp, &s);
  cursor += gdr_carve_record(cursor, cx.dkp, cx.dvp, &r);
  float* staged = cursor + gdr_carve_pass(cursor, cx.dvp, &w);
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, cx.dvp);
  for (int64_t h = h_begin; h < h_end; ++h)
    StageColumns<TS>(p, cx.dvp, b, h, 0, cx.dvp, staged + (h - h_begin) * state_floats);
  const int64_t t_begin = p.seq_start[b], t_end = p.seq_start[b + 1];
  for (int64_t t0 = t_begin; t0 < t_end; t0 += C) {
    const int64_t n = std::min(C, t_end - t0);
    for (int64_t h = h_begin; h < h_end; ++h) {
      if (h + 1 < h_end) {
        PrefetchChunk<TA>(p, h + 1, t0, n);
        const char* next_state = reinterpret_cast<const char*>(staged + (h + 1 - h_begin) * state_floats);
        for (int64_t off = 0; off < p.key_dim * cx.dvp * 4; off += 64) hwy::Prefetch(next_state + off);
      } else if (t0 + C < t_end) {  // the next chunk's rows of the first head
        PrefetchChunk<TA>(p, h_begin, t0 + C, std::min(C, t_end - t0 - C));
      }
      PrepareChunk<TA>(cx, h, t0, n, s, r);
      StatePass<TA>(cx, h, t0, n, r, w, staged + (h - h_begin) * state_floats, 0, cx.dvp);
      StoreSnapshot(p, cx.dvp, b, t0 + n - t_begin, h, 0, cx.dvp, staged + (h - h_begin) * state_floats);
    }
  }
  for (int64_t h = h_begin; h < h_end; ++h)
    StoreColumns<TS>(p, cx.dvp, b, h, 0, cx.dvp, staged + (h - h_begin) * state_floats);
}

// Items [begin, end) of B x Nv (sequence-major), grouped by sequence.
template <class TA, class TS>
void RunItems(const ChunkContext& cx, int64_t begin, int64_t end, float* scratch) {
  const int64_t nv = cx.p->num_value_heads;
  for (int64_t item = begin; item < end;) {
    const int64_t b = item / nv, h_begin = item % nv;
    const int64_t h_end = std::min(nv, h_begin + (end - item));
    SequenceHeads<TA, TS>(cx, b, h_begin, h_end, scratch);
    item += h_end - h_begin;
  }
}

// ---- chunk mode: waves of chunks over all items ----

int64_t ChunkCount(const GdrProblem& p, int64_t b) { return (p.seq_length(b) + C - 1) / C; }

template <class TA, class TS>
void RunWaves(const GdrPlan& plan, const ChunkContext& cx, char* thread_scratch, int64_t scratch_bytes,
              float* shared) {
  const GdrProblem& p = *cx.p;
  const int64_t nv = p.num_value_heads, items = p.batch * nv, blocks = plan.column_blocks;
  const int64_t state_floats = gdr_staged_state_floats(p.key_dim, cx.dvp);
  GdrChunkRecord probe;
  const int64_t record_floats = gdr_carve_record(nullptr, cx.dkp, cx.dvp, &probe);
  float* staged = shared;
  float* records = shared + items * state_floats;
  auto columns = [&](int64_t block, int64_t* c0, int64_t* c1) {  // block of 16-column groups
    balanced_range(cx.dvp / 16, static_cast<int>(blocks), static_cast<int>(block), c0, c1);
    *c0 *= 16;
    *c1 *= 16;
  };
  auto record = [&](int64_t slot) {
    GdrChunkRecord r;
    gdr_carve_record(records + slot * record_floats, cx.dkp, cx.dvp, &r);
    return r;
  };
  parallel_parts(plan.threads, items * blocks, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t c0, c1;
      columns(u % blocks, &c0, &c1);
      StageColumns<TS>(p, cx.dvp, u / blocks / nv, u / blocks % nv, c0, c1, staged + u / blocks * state_floats);
    }
  });
  int64_t max_chunks = 0;
  for (int64_t b = 0; b < p.batch; ++b) max_chunks = std::max(max_chunks, ChunkCount(p, b));
  std::vector<int64_t> unit_item, unit_chunk, first_slot(static_cast<size_t>(items)), active;
  for (int64_t w0 = 0; w0 < max_chunks; w0 += plan.wave_chunks) {
    const int64_t w1 = w0 + plan.wave_chunks;
    unit_item.clear();
    unit_chunk.clear();
    active.clear();
    for (int64_t item = 0; item < items; ++item) {
      const int64_t chunks = ChunkCount(p, item / nv);
      first_slot[item] = static_cast<int64_t>(unit_item.size());
      if (chunks > w0) active.push_back(item);
      for (int64_t c = w0; c < std::min(w1, chunks); ++c) {
        unit_item.push_back(item);
        unit_chunk.push_back(c);
      }
    }
    // Phase one of every chunk of the wave.
    parallel_parts(plan.threads, static_cast<int64_t>(unit_item.size()), [&](int64_t part, int64_t begin, int64_t end) {
      GdrPackScratch s;
      gdr_carve_pack(reinterpret_cast<float*>(thread_scratch + part * scratch_bytes), cx.dkp, &s);
      for (int64_t u = begin; u < end; ++u) {
        const int64_t b = unit_item[u] / nv, t0 = p.seq_start[b] + unit_chunk[u] * C;
        PrepareChunk<TA>(cx, unit_item[u] % nv, t0, std::min(C, p.seq_start[b + 1] - t0), s, record(u));
      }
    });
    // The state pass of the wave, per (active item, column block).
    parallel_parts(plan.threads, static_cast<int64_t>(active.size()) * blocks, [&](int64_t part, int64_t begin,
                                                                            int64_t end) {
      GdrPackScratch s;
      GdrPassScratch w;
      float* base = reinterpret_cast<float*>(thread_scratch + part * scratch_bytes);
      gdr_carve_pass(base + gdr_carve_pack(nullptr, cx.dkp, &s), cx.dvp, &w);
      for (int64_t u = begin; u < end; ++u) {
        const int64_t item = active[u / blocks], b = item / nv;
        int64_t c0, c1;
        columns(u % blocks, &c0, &c1);
        for (int64_t c = w0; c < std::min(w1, ChunkCount(p, b)); ++c) {
          const int64_t t0 = p.seq_start[b] + c * C;
          const int64_t n = std::min(C, p.seq_start[b + 1] - t0);
          StatePass<TA>(cx, item % nv, t0, n, record(first_slot[item] + c - w0), w, staged + item * state_floats,
                        c0, c1);
          StoreSnapshot(p, cx.dvp, b, t0 + n - p.seq_start[b], item % nv, c0, c1, staged + item * state_floats);
        }
      }
    });
  }
  parallel_parts(plan.threads, items * blocks, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t c0, c1;
      columns(u % blocks, &c0, &c1);
      StoreColumns<TS>(p, cx.dvp, u / blocks / nv, u / blocks % nv, c0, c1, staged + u / blocks * state_floats);
    }
  });
}

template <class TA, class TS>
void RunTyped(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  ChunkContext cx;
  cx.p = &plan.problem;
  cx.dkp = gdr_pad16(plan.problem.key_dim);
  cx.dvp = gdr_pad16(plan.problem.value_dim);
  cx.bf16_dot = plan.avx512_bf16 && std::is_same<TA, hwy::bfloat16_t>::value;
  if (plan.split_chunks) return RunWaves<TA, TS>(plan, cx, thread_scratch, scratch_bytes, shared);
  parallel_parts(plan.threads, plan.threads, [&](int64_t part, int64_t, int64_t) {
    RunItems<TA, TS>(cx, plan.part_start[part], plan.part_start[part + 1],
                     reinterpret_cast<float*>(thread_scratch + part * scratch_bytes));
  });
}

template <class TS>
void RunState(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  switch (plan.problem.query.dtype) {
    case DType::kBF16: return RunTyped<hwy::bfloat16_t, TS>(plan, thread_scratch, scratch_bytes, shared);
    case DType::kF16: return RunTyped<hwy::float16_t, TS>(plan, thread_scratch, scratch_bytes, shared);
    default: return RunTyped<float, TS>(plan, thread_scratch, scratch_bytes, shared);
  }
}

}  // namespace

void GdrChunkedRun(const GdrPlan& plan, char* thread_scratch, int64_t scratch_bytes, float* shared) {
  if (plan.problem.state_in.dtype == DType::kBF16) {
    RunState<hwy::bfloat16_t>(plan, thread_scratch, scratch_bytes, shared);
  } else {
    RunState<float>(plan, thread_scratch, scratch_bytes, shared);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
GdrChunkedRunFn* select_gdr_chunked_run(Isa isa) { return TXOPS_SELECT_KERNEL(isa, GdrChunkedRun); }
}  // namespace txops
#endif
