// kernels_one_token-inl.h — per-target (Highway) kernels of the gated delta rule for one token of one head,
// straight on a state in memory (decode on a pool; a one-token prefill sequence): value-major rows in registers
// (OneTokenRows), wide rows in two passes (OneTokenWideRows; bf16 as pair vectors), and key-major states by
// column sums (OneTokenKeyMajor). Each reads the state once and writes it once; the rows ahead are prefetched.
//
// Include after <hwy/highway.h> inside a foreach_target translation unit (kernels_recurrent.cpp).
#if defined(TXOPS_OPS_GATED_DELTA_RULE_KERNELS_ONE_TOKEN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GATED_DELTA_RULE_KERNELS_ONE_TOKEN_INL_H_
#undef TXOPS_OPS_GATED_DELTA_RULE_KERNELS_ONE_TOKEN_INL_H_
#else
#define TXOPS_OPS_GATED_DELTA_RULE_KERNELS_ONE_TOKEN_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <type_traits>

#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "ops/gated_delta_rule/kernels.h"
#include "ops/gated_delta_rule/recurrent_pack-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr {

// Decode, one token: every row of the head read from the pool (any storage type), updated, written to the
// token's slot; k and q (or a⊙k, a⊙q) stay in registers and rows are independent, so loads of the next rows
// overlap the reductions of the previous ones. The row is read once and written once: the state traffic.

// One-token kernels stream the state once, a row at a time; Zen 3's L2 prefetcher stops at each 4 KiB page (16
// bf16 rows of 128), so the row kRowsAhead ahead is prefetched in software (AVX2, 64 x 1 token, medians of paired
// rounds: bf16 pool 18.7 -> 15.4 ms, fp32 31.9 -> 17.8 ms on 1 thread). Past the head's last row that is the next
// head's state in a dense pool; a prefetch of an address the caller does not own is harmless (it never faults or
// writes).
constexpr int64_t kRowsAhead = 16;

// Prefetches `bytes` from element `offset` of base (integer address arithmetic: the row may lie past the array)
// into L2 (core/prefetch.h), not L1: on Zen 4 the L1 prefetches of the rows ahead held the load pipeline up
// (a third of a value-major kernel's samples sat on the prefetch instruction) and fp32 pools from DRAM ran at half
// the bandwidth that L2 prefetches reach (README.md, session 31). The rows are read a few hundred cycles later,
// from L2, by loads the out-of-order core overlaps.
template <class TS>
HWY_INLINE void PrefetchRow(const TS* base, int64_t offset, int64_t bytes) {
  const uintptr_t row = reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(offset * static_cast<int64_t>(sizeof(TS)));
  PrefetchBytesL2(reinterpret_cast<const char*>(row), bytes);
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

// Two rows at once (AVX-512, bf16 pools: both rows stay in its 32 vector registers, k and q come from L1 as
// memory operands): the four dot products of the pair reduce together (SumsOfFour), about a third of the
// shuffles and adds of four separate reductions, and the scalar work of the two rows overlaps. One row's
// reduction and scalar chain was most of the cycles of this kernel (perf annotate), 128-element rows being
// only eight vectors of arithmetic.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
// Per 128-bit block, lanes 0-3: the sums of that block's lanes of a, b, c and d (pairs, then pairs of pairs; six
// operations). SumsOfFour (AVX-512) and SumsOfEight (AVX2) then add the blocks.
HWY_INLINE VF BlockSumsOfFour(VF a, VF b, VF c, VF d) {
  const DF df;
  const hn::Repartition<double, DF> dd;
  const VF ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));  // a0+a2 b0+b2 a1+a3 b1+b3
  const VF cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  const VF lo = hn::BitCast(df, hn::InterleaveLower(dd, hn::BitCast(dd, ab), hn::BitCast(dd, cd)));
  const VF hi = hn::BitCast(df, hn::InterleaveUpper(dd, hn::BitCast(dd, ab), hn::BitCast(dd, cd)));
  return hn::Add(lo, hi);
}
#endif

#if HWY_TARGET == HWY_AVX3
// Lanes [0, 4) of the result: the sums of the lanes of a, b, c and d (pairs within 128-bit blocks, then blocks).
HWY_INLINE hn::Vec<hn::CappedTag<float, 4>> SumsOfFour(DF df, VF a, VF b, VF c, VF d) {
  const VF blocks = BlockSumsOfFour(a, b, c, d);
  const hn::Half<DF> d8;
  const auto half = hn::Add(hn::LowerHalf(d8, blocks), hn::UpperHalf(d8, blocks));
  const hn::Half<decltype(d8)> d4;
  return hn::Add(hn::LowerHalf(d4, half), hn::UpperHalf(d4, half));
}

// Rows r and r + 1 (widened in s0, s1): writes out[r], out[r + 1] and replaces s0, s1 by the updated rows. Same
// formulas as UpdateOneTokenRow; the sums run in another order, so the bits may differ from it in the last place.
template <int NV, bool kVectorDecay>
HWY_INLINE void UpdateOneTokenRowPair(const TokenPack& tp, const OneTokenConstants<NV, kVectorDecay>& cst, int64_t r,
                                      VF (&s0)[NV], VF (&s1)[NV]) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const float* dot_k = kVectorDecay ? tp.decayed_key : tp.key;
  const float* dot_q = kVectorDecay ? tp.decayed_query : tp.query;
  // Two partial sums per dot product (even and odd j) where NV allows: half the FMA chain's latency.
  constexpr int kParts = NV % 2 == 0 ? 2 : 1;
  VF k0[kParts], q0[kParts], k1[kParts], q1[kParts];
  for (int p = 0; p < kParts; ++p) k0[p] = q0[p] = k1[p] = q1[p] = hn::Zero(df);
  for (int j = 0; j < NV; ++j) {
    const VF kj = hn::LoadU(df, dot_k + j * N), qj = hn::LoadU(df, dot_q + j * N);
    const int p = j % kParts;
    k0[p] = hn::MulAdd(s0[j], kj, k0[p]);
    q0[p] = hn::MulAdd(s0[j], qj, q0[p]);
    k1[p] = hn::MulAdd(s1[j], kj, k1[p]);
    q1[p] = hn::MulAdd(s1[j], qj, q1[p]);
  }
  for (int p = 1; p < kParts; ++p) {
    k0[0] = hn::Add(k0[0], k0[p]);
    q0[0] = hn::Add(q0[0], q0[p]);
    k1[0] = hn::Add(k1[0], k1[p]);
    q1[0] = hn::Add(q1[0], q1[p]);
  }
  HWY_ALIGN float sums[4];
  hn::Store(SumsOfFour(df, k0[0], q0[0], k1[0], q1[0]), hn::CappedTag<float, 4>(), sums);
  const float c0 = cst.beta * (tp.value[r] - cst.alpha * sums[0]);
  const float c1 = cst.beta * (tp.value[r + 1] - cst.alpha * sums[2]);
  tp.out[r] = cst.alpha * sums[1] + c0 * cst.kq;
  tp.out[r + 1] = cst.alpha * sums[3] + c1 * cst.kq;
  const VF cv0 = hn::Set(df, c0), cv1 = hn::Set(df, c1);
  for (int j = 0; j < NV; ++j) {
    const VF kj = hn::LoadU(df, tp.key + j * N);
    const VF dj = kVectorDecay ? hn::LoadU(df, tp.decay + j * N) : cst.alpha_v;
    s0[j] = hn::MulAdd(cv0, kj, hn::Mul(s0[j], dj));
    s1[j] = hn::MulAdd(cv1, kj, hn::Mul(s1[j], dj));
  }
}
#endif  // HWY_TARGET == HWY_AVX3

template <int NV, bool kVectorDecay, class TS>
HWY_NOINLINE void OneTokenRows(const TokenPack& tp, const TS* s_in, int64_t in_stride, TS* s_out, int64_t out_stride) {
  const DF df;
  const size_t N = hn::Lanes(df);
  const OneTokenConstants<NV, kVectorDecay> cst(tp);
  int64_t r = 0;
#if HWY_TARGET == HWY_AVX3
  // bf16 pools only: an fp32 row needs no widening, and there the pairs measured slower than single rows with k
  // and q held in registers (B=8, pool=32 in L3, 1 thread: 0.41 -> 0.45 ms).
  constexpr bool kPairs = std::is_same<TS, hwy::bfloat16_t>::value;
  for (; kPairs && r + 2 <= tp.dv; r += 2) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, static_cast<int64_t>(NV * N * sizeof(TS)));
    PrefetchRow(s_in, (r + 1 + kRowsAhead) * in_stride, static_cast<int64_t>(NV * N * sizeof(TS)));
    VF s0[NV], s1[NV];
    for (int j = 0; j < NV; ++j) s0[j] = LoadF32(df, s_in + r * in_stride + j * N);
    for (int j = 0; j < NV; ++j) s1[j] = LoadF32(df, s_in + (r + 1) * in_stride + j * N);
    UpdateOneTokenRowPair<NV, kVectorDecay>(tp, cst, r, s0, s1);
    for (int j = 0; j < NV; ++j) StoreF32(df, s0[j], s_out + r * out_stride + j * N);
    for (int j = 0; j < NV; ++j) StoreF32(df, s1[j], s_out + (r + 1) * out_stride + j * N);
  }
#endif
  for (; r < tp.dv; ++r) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, static_cast<int64_t>(NV * N * sizeof(TS)));
    VF sv[NV];
    for (int j = 0; j < NV; ++j) sv[j] = LoadF32(df, s_in + r * in_stride + j * N);
    UpdateOneTokenRow<NV, kVectorDecay>(tp, cst, r, sv);
    for (int j = 0; j < NV; ++j) StoreF32(df, sv[j], s_out + r * out_stride + j * N);
  }
}

#if HWY_TARGET == HWY_AVX3
// A bf16 pool on AVX-512 in block order (core/simd_convert-inl.h, LoadBF16Blocks): a row's 32 elements widen
// with two unpacks (not two zero-extensions and two shifts) into vectors holding the low and the high four of every
// eight, so k, q and the decay are put into the same order once per token. Back to bf16: with AVX512_BF16 (kInsn)
// one vcvtne2ps2bf16 and one vpermq per 32 elements (round to nearest even; results below 2^-126 in magnitude
// flush to ±0, the only difference from the portable rounding); without it the portable rounding and one in-block
// pack (PackBF16Blocks, no permutation). In L3 (B=8, pool=32, 1 thread) 0.565 -> 0.535 ms against the
// vcvtneps2bf16 row pairs, 0.917 -> 0.771 ms without AVX512_BF16 (README.md, session 20). The conversion is
// core's ConvertBlocksToBF16 (inline asm), so kInsn = false instantiations contain no AVX512_BF16 instruction. The
// sums run in another order than OneTokenRows', so the bits may differ from it in the last place.
template <int NV, bool kVectorDecay, bool kInsn>
HWY_NOINLINE void OneTokenRowsBlocks(const TokenPack& tp, const hwy::bfloat16_t* s_in, int64_t in_stride,
                                     hwy::bfloat16_t* s_out, int64_t out_stride) {
  static_assert(NV % 2 == 0, "rows of whole 32-element blocks");
  const DF df;
  const size_t N = hn::Lanes(df);
  const hn::Repartition<uint16_t, DF> d16;
  // Permuted copies of the token's vectors: lanes [8b, 8b + 4) of each 32 first, then [8b + 4, 8b + 8).
  HWY_ALIGN float arrays[5][NV * 16];
  TokenPack bt = tp;
  const auto permute = [&](const float* src, float* dst) {
    if (src == nullptr) return static_cast<float*>(nullptr);
    for (int j = 0; j < NV; j += 2) {
      const VF a = hn::LoadU(df, src + j * N), b = hn::LoadU(df, src + (j + 1) * N);
      hn::StoreU(VF{_mm512_shuffle_f32x4(a.raw, b.raw, _MM_SHUFFLE(2, 0, 2, 0))}, df, dst + j * N);
      hn::StoreU(VF{_mm512_shuffle_f32x4(a.raw, b.raw, _MM_SHUFFLE(3, 1, 3, 1))}, df, dst + (j + 1) * N);
    }
    return dst;
  };
  bt.key = permute(tp.key, arrays[0]);
  bt.query = permute(tp.query, arrays[1]);
  bt.decayed_key = permute(tp.decayed_key, arrays[2]);
  bt.decayed_query = permute(tp.decayed_query, arrays[3]);
  bt.decay = permute(tp.decay, arrays[4]);
  const OneTokenConstants<NV, kVectorDecay> cst(bt);
  const auto load = [&](const hwy::bfloat16_t* row, VF (&sv)[NV]) {
    for (int j = 0; j < NV; j += 2) LoadBF16Blocks(df, row + j * N, &sv[j], &sv[j + 1]);
  };
  const auto store = [&](VF (&sv)[NV], hwy::bfloat16_t* row) __attribute__((always_inline)) {
    for (int j = 0; j < NV; j += 2) {
      if (kInsn) {
        _mm512_storeu_si512(row + j * N, ConvertBlocksToBF16(sv[j], sv[j + 1]));
      } else {
        hn::StoreU(PackBF16Blocks(df, sv[j], sv[j + 1]), d16, reinterpret_cast<uint16_t*>(row + j * N));
      }
    }
  };
  const int64_t row_bytes = static_cast<int64_t>(NV * N * sizeof(hwy::bfloat16_t));
  int64_t r = 0;
  for (; r + 2 <= tp.dv; r += 2) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, row_bytes);
    PrefetchRow(s_in, (r + 1 + kRowsAhead) * in_stride, row_bytes);
    VF s0[NV], s1[NV];
    load(s_in + r * in_stride, s0);
    load(s_in + (r + 1) * in_stride, s1);
    UpdateOneTokenRowPair<NV, kVectorDecay>(bt, cst, r, s0, s1);
    store(s0, s_out + r * out_stride);
    store(s1, s_out + (r + 1) * out_stride);
  }
  for (; r < tp.dv; ++r) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, row_bytes);
    VF sv[NV];
    load(s_in + r * in_stride, sv);
    UpdateOneTokenRow<NV, kVectorDecay>(bt, cst, r, sv);
    store(sv, s_out + r * out_stride);
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
// the decay are split the same way once per token (LoadInterleaved2). Needs Dk a multiple of 2N. The dot pass
// leaves each row times the decay in an L1 buffer (`DecayedRows`), which the update pass reads instead of widening
// and scaling the row a second time: two operations fewer per block on AVX2, whose 16 registers cannot hold a row.
struct SplitToken {
  static constexpr int64_t kMax = 256;  // floats per parity: Dk <= 512
  HWY_ALIGN float key[2][kMax], query[2][kMax], decay[2][kMax];
};

template <bool kVectorDecay>
HWY_INLINE void SplitTokenPack(const TokenPack& tp, int64_t blocks, SplitToken* st) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const auto split = [&](const float* src, float (&dst)[2][SplitToken::kMax]) {
    for (int64_t b = 0; b < blocks; ++b) {
      VF e, o;
      hn::LoadInterleaved2(df, src + 2 * b * N, e, o);
      hn::Store(e, df, dst[0] + b * N), hn::Store(o, df, dst[1] + b * N);
    }
  };
  split(tp.key, st->key);
  split(tp.query, st->query);
  if (kVectorDecay) split(tp.decay, st->decay);
}

// kRows rows of 2 * blocks * N floats: each block's decayed even elements, then its odd ones.
template <int kRows>
struct DecayedRows {
  HWY_ALIGN float f[kRows][2 * SplitToken::kMax];
};

#if HWY_TARGET == HWY_AVX2
// Lane i of the result: the sum of the lanes of the i-th argument (BlockSumsOfFour, then the two blocks): eight
// reductions in 21 operations.
HWY_INLINE VF SumsOfEight(VF a, VF b, VF c, VF d, VF e, VF f, VF g, VF h) {
  const VF abcd = BlockSumsOfFour(a, b, c, d), efgh = BlockSumsOfFour(e, f, g, h);
  return hn::Add(VF{_mm256_permute2f128_ps(abcd.raw, efgh.raw, 0x20)},
                 VF{_mm256_permute2f128_ps(abcd.raw, efgh.raw, 0x31)});
}
#endif

// Rows [r0, r0 + kRows): their decayed copies into `rows`, their outputs, and the update coefficients c.
template <bool kVectorDecay, int kRows>
HWY_INLINE void PairDots(const TokenPack& tp, const SplitToken& st, int64_t blocks, int64_t r0,
                         const hwy::bfloat16_t* s_in, int64_t in_stride, DecayedRows<kRows>* rows, float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const VF alpha_v = hn::Set(df, kVectorDecay ? 1.0f : tp.alpha[0]);
  VF acc_k[kRows], acc_q[kRows];
  for (int i = 0; i < kRows; ++i) acc_k[i] = acc_q[i] = hn::Zero(df);
  for (int64_t b = 0; b < blocks; ++b) {
    const VF ke = hn::Load(df, st.key[0] + b * N), ko = hn::Load(df, st.key[1] + b * N);
    const VF qe = hn::Load(df, st.query[0] + b * N), qo = hn::Load(df, st.query[1] + b * N);
    const VF de = kVectorDecay ? hn::Load(df, st.decay[0] + b * N) : alpha_v;
    const VF dO = kVectorDecay ? hn::Load(df, st.decay[1] + b * N) : alpha_v;
    for (int i = 0; i < kRows; ++i) {
      VF e, o;
      LoadBF16Pairs(df, s_in + (r0 + i) * in_stride + 2 * b * N, &e, &o);
      e = hn::Mul(e, de), o = hn::Mul(o, dO);
      hn::Store(e, df, rows->f[i] + 2 * b * N), hn::Store(o, df, rows->f[i] + (2 * b + 1) * N);
      acc_k[i] = hn::MulAdd(o, ko, hn::MulAdd(e, ke, acc_k[i]));
      acc_q[i] = hn::MulAdd(o, qo, hn::MulAdd(e, qe, acc_q[i]));
    }
  }
  float sk[kRows], sq[kRows];
#if HWY_TARGET == HWY_AVX2
  if constexpr (kRows == 4) {
    HWY_ALIGN float sums[8];
    hn::Store(SumsOfEight(acc_k[0], acc_q[0], acc_k[1], acc_q[1], acc_k[2], acc_q[2], acc_k[3], acc_q[3]), df, sums);
    for (int i = 0; i < kRows; ++i) sk[i] = sums[2 * i], sq[i] = sums[2 * i + 1];
  } else  // NOLINT(readability/braces)
#endif
  {
    for (int i = 0; i < kRows; ++i) {
      sk[i] = hn::GetLane(hn::SumOfLanes(df, acc_k[i]));
      sq[i] = hn::GetLane(hn::SumOfLanes(df, acc_q[i]));
    }
  }
  for (int i = 0; i < kRows; ++i) {
    c[i] = tp.beta[0] * (tp.value[r0 + i] - sk[i]);
    tp.out[r0 + i] = sq[i] + c[i] * tp.key_dot_query[0];
  }
}

// Whether the token's inputs to the state update (k, v, β and the decay) hold no NaN. Then every NaN of the update
// comes from the bf16 pool (its low 16 bits zero, kept through the arithmetic, which quiets it) or is the default NaN
// of an invalid operation, and the rounding may leave out its NaN test (core/simd_convert-inl.h,
// RoundToBF16HighOfBF16Operands): the same bits, three vector operations fewer per vector. A NaN input (an fp32 or
// fp16 one may carry payload bits the rounding increment would carry into the kept bits) keeps the test.
template <bool kVectorDecay>
HWY_INLINE bool UpdateInputsHaveNoNaN(const TokenPack& tp) {
  const auto none = [](const float* p, int64_t n) {
    const DF df;
    const int64_t N = static_cast<int64_t>(hn::Lanes(df));
    auto nan = hn::Zero(df);
    int64_t j = 0;
    for (; j + N <= n; j += N) {
      const VF v = hn::LoadU(df, p + j);
      nan = hn::Or(nan, hn::VecFromMask(df, hn::IsNaN(v)));
    }
    bool ok = hn::AllFalse(df, hn::MaskFromVec(nan));
    for (; j < n; ++j) ok &= p[j] == p[j];  // false only for a NaN
    return ok;
  };
  return none(tp.key, tp.dkp) && none(tp.value, tp.dv) && none(tp.beta, 1) &&
         (kVectorDecay ? none(tp.decay, tp.dkp) : none(tp.alpha, 1));
}

// Updates of rows [r0, r0 + kRows) from their decayed copies: s <- decay s + c k, rounded into the output slot.
template <int kRows, bool kNaNFree>
HWY_INLINE void PairUpdates(const SplitToken& st, int64_t blocks, const DecayedRows<kRows>& rows, int64_t r0,
                            hwy::bfloat16_t* s_out, int64_t out_stride, const float* c) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF cv[kRows];
  for (int i = 0; i < kRows; ++i) cv[i] = hn::Set(df, c[i]);
  for (int64_t b = 0; b < blocks; ++b) {
    const VF ke = hn::Load(df, st.key[0] + b * N), ko = hn::Load(df, st.key[1] + b * N);
    for (int i = 0; i < kRows; ++i) {
      const VF ue = hn::MulAdd(cv[i], ke, hn::Load(df, rows.f[i] + 2 * b * N));
      const VF uo = hn::MulAdd(cv[i], ko, hn::Load(df, rows.f[i] + (2 * b + 1) * N));
      hwy::bfloat16_t* at = s_out + (r0 + i) * out_stride + 2 * b * N;
      if (kNaNFree)
        StoreBF16PairsOfBF16Operands(df, ue, uo, at);
      else
        StoreBF16Pairs(df, ue, uo, at);
    }
  }
}

template <bool kVectorDecay, bool kNaNFree>
HWY_INLINE void OneTokenWidePairsT(const TokenPack& tp, int64_t vectors, const hwy::bfloat16_t* s_in,
                                   int64_t in_stride, hwy::bfloat16_t* s_out, int64_t out_stride) {
  constexpr int kRows = 4;
  const int64_t pair_blocks = vectors / 2, blocks = tp.dv / kRows;
  const int64_t row_bytes = vectors * static_cast<int64_t>(hn::Lanes(DF()) * sizeof(hwy::bfloat16_t));
  SplitToken st;
  SplitTokenPack<kVectorDecay>(tp, pair_blocks, &st);
  DecayedRows<kRows> rows[2];  // block b's in rows[b % 2]: block b + 1's dot pass runs before block b's updates
  float c_cur[kRows], c_next[kRows];
  if (blocks > 0) PairDots<kVectorDecay, kRows>(tp, st, pair_blocks, 0, s_in, in_stride, &rows[0], c_cur);
  for (int64_t b = 0; b < blocks; ++b) {
    for (int i = 0; i < kRows; ++i) PrefetchRow(s_in, ((b + 1) * kRows + kRowsAhead + i) * in_stride, row_bytes);
    if (b + 1 < blocks)
      PairDots<kVectorDecay, kRows>(tp, st, pair_blocks, (b + 1) * kRows, s_in, in_stride, &rows[(b + 1) % 2], c_next);
    PairUpdates<kRows, kNaNFree>(st, pair_blocks, rows[b % 2], b * kRows, s_out, out_stride, c_cur);
    for (int i = 0; i < kRows; ++i) c_cur[i] = c_next[i];
  }
  for (int64_t r = blocks * kRows; r < tp.dv; ++r) {
    DecayedRows<1> row;
    float c;
    PairDots<kVectorDecay, 1>(tp, st, pair_blocks, r, s_in, in_stride, &row, &c);
    PairUpdates<1, kNaNFree>(st, pair_blocks, row, r, s_out, out_stride, &c);
  }
}

template <bool kVectorDecay>
HWY_NOINLINE void OneTokenWidePairs(const TokenPack& tp, int64_t vectors, const hwy::bfloat16_t* s_in,
                                    int64_t in_stride, hwy::bfloat16_t* s_out, int64_t out_stride) {
  if (UpdateInputsHaveNoNaN<kVectorDecay>(tp))
    return OneTokenWidePairsT<kVectorDecay, true>(tp, vectors, s_in, in_stride, s_out, out_stride);
  OneTokenWidePairsT<kVectorDecay, false>(tp, vectors, s_in, in_stride, s_out, out_stride);
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
    const auto blocks = [&](auto nv) {
      constexpr int NV = decltype(nv)::value;
      if (bf16_insn)
        return tp.decay ? OneTokenRowsBlocks<NV, true, true>(tp, s_in, in_stride, s_out, out_stride)
                        : OneTokenRowsBlocks<NV, false, true>(tp, s_in, in_stride, s_out, out_stride);
      return tp.decay ? OneTokenRowsBlocks<NV, true, false>(tp, s_in, in_stride, s_out, out_stride)
                      : OneTokenRowsBlocks<NV, false, false>(tp, s_in, in_stride, s_out, out_stride);
    };
    switch (vectors) {
      case 2: return blocks(std::integral_constant<int, 2>());
      case 4: return blocks(std::integral_constant<int, 4>());
      case 8: return blocks(std::integral_constant<int, 8>());
      default: break;  // one vector: OneTokenRows below
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
// PairCodec whose stores leave out the rounding's NaN test: for tokens whose update inputs hold no NaN
// (UpdateInputsHaveNoNaN above), the same bits.
struct PairCodecNoNaNInputs : PairCodec {
  static HWY_INLINE void Store(DF df, const VF* v, hwy::bfloat16_t* p) {
    StoreBF16PairsOfBF16Operands(df, v[0], v[1], p);
  }
};
#endif
#if HWY_TARGET == HWY_AVX3
// PairCodec whose stores round with vcvtne2ps2bf16 (u16 lanes 0..15 the even elements, 16..31 the odd ones) and
// put the two back in turn with one vpermw: two instructions for 32 elements where the portable rounding takes
// about fifteen. For CPUs with AVX512_BF16 only (the plan's avx512_bf16); the instruction flushes results below
// 2^-126 to ±0, as in OneTokenRowsBlocks (README.md "Precision"). core/simd_convert-inl.h: ConvertPairsToBF16.
struct PairCodecInsn : PairCodec {
  static HWY_INLINE void Store(DF, const VF* v, hwy::bfloat16_t* p) {
    _mm512_storeu_si512(p, ConvertPairsToBF16(v[0], v[1]));
  }
};
#endif

// Pass (1) with every column sum in registers (AVX-512: NG groups of C::kVectors vectors, 2·NG·kVectors ≤ 16 of its
// 32 registers; Dv = 128 either codec): each state row is loaded once and its products added straight into the
// sums, where the general loop below loads and stores them once per four rows. Each lane still adds its rows in
// order, so the bits are the same.
template <int NG, class C, class TS>
HWY_INLINE void KeyMajorSumsInRegisters(int64_t dk, const TS* s_in, int64_t in_stride, const float* dot_k,
                                        const float* dot_q, float* sk, float* sq) {
  constexpr int V = C::kVectors;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), G = V * N;
  const int64_t row_bytes = NG * G * static_cast<int64_t>(sizeof(TS));
  VF acc_k[NG * V], acc_q[NG * V];
  for (int u = 0; u < NG * V; ++u) acc_k[u] = acc_q[u] = hn::Zero(df);
  for (int64_t r = 0; r < dk; ++r) {
    PrefetchRow(s_in, (r + kRowsAhead) * in_stride, row_bytes);
    const VF kb = hn::Set(df, dot_k[r]), qb = hn::Set(df, dot_q[r]);
    for (int g = 0; g < NG; ++g) {
      VF sv[V];
      C::Load(df, s_in + r * in_stride + g * G, sv);
      for (int u = 0; u < V; ++u) {
        acc_k[g * V + u] = hn::MulAdd(sv[u], kb, acc_k[g * V + u]);
        acc_q[g * V + u] = hn::MulAdd(sv[u], qb, acc_q[g * V + u]);
      }
    }
  }
  for (int u = 0; u < NG * V; ++u) hn::Store(acc_k[u], df, sk + u * N), hn::Store(acc_q[u], df, sq + u * N);
}

// next_in (nullptr: none): the state the caller updates next, rows in_stride apart; pass 2 prefetches it a row per
// row, so its first pass finds it in cache (pass 2 itself reads only what pass 1 left in cache: the memory would
// idle during it).
template <bool kVectorDecay, class TS, class C>
HWY_NOINLINE void KeyMajorColumns(const TokenPack& tp, int64_t dk, const TS* s_in, int64_t in_stride, TS* s_out,
                                  int64_t out_stride, const TS* next_in) {
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
#if HWY_TARGET == HWY_AVX3
  constexpr int kGroupsInRegisters = 8 / V;
  if (dv == kGroupsInRegisters * G) {
    KeyMajorSumsInRegisters<kGroupsInRegisters, C>(dk, s_in, in_stride, dot_k, dot_q, sk, sq);
    r = dk;  // the loops below have nothing left to add
  }
#endif
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
    if (next_in != nullptr) PrefetchRow(next_in, r * in_stride, row_bytes);
    for (int64_t j = 0; j < dv; j += G) {
      VF sv[V];
      C::Load(df, src + j, sv);
      for (int u = 0; u < V; ++u) sv[u] = hn::MulAdd(kr, hn::Load(df, sk + j + u * N), hn::Mul(sv[u], decay));
      C::Store(df, sv, dst + j);
    }
  }
}

// bf16_insn: the CPU has AVX512_BF16 and the plan lets bf16 states round with it (GdrPlan::avx512_bf16).
template <bool kVectorDecay, class TS>
HWY_INLINE void OneTokenKeyMajor(bool bf16_insn, const TokenPack& tp, int64_t dk, const TS* s_in, int64_t in_stride,
                                 TS* s_out, int64_t out_stride, const TS* next_in) {
  (void)bf16_insn;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (std::is_same<TS, hwy::bfloat16_t>::value) {
    if (tp.dv % (2 * static_cast<int64_t>(hn::Lanes(DF()))) == 0) {
#if HWY_TARGET == HWY_AVX3
      if (bf16_insn)
        return KeyMajorColumns<kVectorDecay, TS, PairCodecInsn>(tp, dk, s_in, in_stride, s_out, out_stride, next_in);
#endif
      if (UpdateInputsHaveNoNaN<kVectorDecay>(tp))
        return KeyMajorColumns<kVectorDecay, TS, PairCodecNoNaNInputs>(tp, dk, s_in, in_stride, s_out, out_stride,
                                                                      next_in);
      return KeyMajorColumns<kVectorDecay, TS, PairCodec>(tp, dk, s_in, in_stride, s_out, out_stride, next_in);
    }
  }
#endif
  KeyMajorColumns<kVectorDecay, TS, VCodec<TS>>(tp, dk, s_in, in_stride, s_out, out_stride, next_in);
}

}  // namespace gdr
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
