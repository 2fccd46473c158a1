// kernels_grad_rows-inl.h — the rows of the fused RoPE backward (kernels_grad.cpp): per vector step, a member
// row's input gradient rotated back and its products with the forward input added to the gradCos / gradSin
// accumulators. Two forms with the same steps, so the same bits: accumulators in memory (any width), and in
// registers for a whole group's rows (rows of 2, 4 or 8 vectors), where the per-row loads and stores of the
// accumulators were the cost (README.md "The fused grads with the accumulators in registers").
//
// Include after <hwy/highway.h> and kernels_rows-inl.h inside a foreach_target translation unit; per-target
// include guard below.
#if defined(TXOPS_OPS_ROPE_KERNELS_GRAD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_ROPE_KERNELS_GRAD_ROWS_INL_H_
#undef TXOPS_OPS_ROPE_KERNELS_GRAD_ROWS_INL_H_
#else
#define TXOPS_OPS_ROPE_KERNELS_GRAD_ROWS_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "ops/rope/args.h"
#include "ops/rope/kernels_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The in and x rows `ahead_*` elements past these into L2, row_bytes of each (none when 0; core/prefetch.h).
template <class TX>
HWY_INLINE void PrefetchMemberAhead(const TX* row_in, const TX* row_x, int64_t ahead_in, int64_t ahead_x,
                                    int64_t row_bytes) {
  const char* pin = reinterpret_cast<const char*>(row_in + ahead_in);
  const char* px = reinterpret_cast<const char*>(row_x + ahead_x);
  for (int64_t b = 0; b < row_bytes; b += 64) {
    PrefetchL2(pin + b);
    PrefetchL2(px + b);
  }
}

// Calls run(in, out, x) with the first member row of every run along the innermost member extent of one side of a
// group, in member order (the walk ForEachMember and ForEachMemberPair share).
template <class TX, class RunFn>
HWY_INLINE void ForEachMemberRun(const GradSide& side, const TX* in, TX* out, const TX* x, const RunFn& run) {
  const int64_t(*ms)[3] = side.member_stride;
  for (int64_t i0 = 0; i0 < side.member_extent[0]; ++i0) {
    for (int64_t i1 = 0; i1 < side.member_extent[1]; ++i1) {
      run(in + i0 * ms[0][0] + i1 * ms[1][0], out + i0 * ms[0][1] + i1 * ms[1][1], x + i0 * ms[0][2] + i1 * ms[1][2]);
    }
  }
}

// Calls row(in, out, x) for every member row of one side of a group, in member order. With row_bytes > 0
// (contiguous rows), it first prefetches the in and x rows kPrefetchRows member strides ahead into L2 (a hint: it never
// faults; past the group's last member it reaches the next group's rows in the usual layouts).
template <class TX, class RowFn>
HWY_INLINE void ForEachMember(const GradSide& side, const TX* in, TX* out, const TX* x, int64_t row_bytes,
                              const RowFn& row) {
  const int64_t(*ms)[3] = side.member_stride;
  const int64_t ahead_in = kPrefetchRows * ms[2][0], ahead_x = kPrefetchRows * ms[2][2];
  // always_inline (here and in ForEachMemberPair): left to GCC, the walk's lambda was not inlined into the AVX2
  // memory-form rows, which then ran 20-35 % slower in L2.
  const auto run = [&](const TX* row_in, TX* row_out, const TX* row_x) __attribute__((always_inline)) {
    for (int64_t i2 = 0; i2 < side.member_extent[2]; ++i2) {
      PrefetchMemberAhead(row_in, row_x, ahead_in, ahead_x, row_bytes);
      row(row_in, row_out, row_x);
      row_in += ms[2][0];
      row_out += ms[2][1];
      row_x += ms[2][2];
    }
  };
  ForEachMemberRun(side, in, out, x, run);
}

// As ForEachMember, but consecutive members of the innermost extent go two at a time to pair(a..., b...) (a before
// b in member order); an odd last one goes to row(...).
template <class TX, class PairFn, class RowFn>
HWY_INLINE void ForEachMemberPair(const GradSide& side, const TX* in, TX* out, const TX* x, int64_t row_bytes,
                                  const PairFn& pair, const RowFn& row) {
  const int64_t(*ms)[3] = side.member_stride;
  const int64_t ahead_in = kPrefetchRows * ms[2][0], ahead_x = kPrefetchRows * ms[2][2];
  const auto prefetch = [&](const TX* row_in, const TX* row_x) {
    PrefetchMemberAhead(row_in, row_x, ahead_in, ahead_x, row_bytes);
  };
  const auto run = [&](const TX* row_in, TX* row_out, const TX* row_x) __attribute__((always_inline)) {
    int64_t i2 = 0;
    for (; i2 + 2 <= side.member_extent[2]; i2 += 2) {
      prefetch(row_in, row_x);
      prefetch(row_in + ms[2][0], row_x + ms[2][2]);
      pair(row_in, row_out, row_x, row_in + ms[2][0], row_out + ms[2][1], row_x + ms[2][2]);
      row_in += 2 * ms[2][0];
      row_out += 2 * ms[2][1];
      row_x += 2 * ms[2][2];
    }
    if (i2 < side.member_extent[2]) {
      prefetch(row_in, row_x);
      row(row_in, row_out, row_x);
    }
  };
  ForEachMemberRun(side, in, out, x, run);
}

#if HWY_TARGET != HWY_SCALAR
// ------------------------------------------------------------------------------------------------
// One vector step of each rule: the two products into the gradCos / gradSin accumulators and the rotated-back
// output. Shared by the rows with the accumulators in memory and those with them in registers (below), so both
// give the same bits.

// Half rule, lanes j of the first half and h + j of the second: (ac1, as1) at j, (ac2, as2) at h + j.
HWY_INLINE void HalfStep(VF d1, VF d2, VF x1, VF x2, VF c1, VF c2, VF s1, VF s2, VF& ac1, VF& ac2, VF& as1, VF& as2,
                         VF& y1, VF& y2) {
  ac1 = hn::MulAdd(d1, x1, ac1);
  ac2 = hn::MulAdd(d2, x2, ac2);
  as1 = hn::NegMulAdd(d1, x2, as1);  // as1 - d1·x2 in one rounding: fma(d1, -x2, as1)
  as2 = hn::MulAdd(d2, x1, as2);
  y1 = hn::MulAdd(d1, c1, hn::Mul(d2, s2));
  y2 = hn::MulSub(d2, c2, hn::Mul(d1, s1));  // fma(d2, c2, -(d1·s1))
}

// Interleave rule on one vector of channel pairs.
HWY_INLINE VF InterleaveStep(VF d, VF xv, VF cv, VF sv, VF& ac, VF& as) {
  const VF swapped = hn::Shuffle2301(xv);
  ac = hn::MulAdd(d, xv, ac);
  as = hn::MulAdd(d, hn::OddEven(swapped, hn::Neg(swapped)), as);
  const VF p = hn::Shuffle2301(hn::Mul(d, sv));
  return hn::MulAdd(d, cv, hn::OddEven(hn::Neg(p), p));
}

// The interleave rule on bf16 "pair" vectors (even channels in one vector, odd ones in the other) is the half rule
// with the even vector as the first half and the odd one as the second: HalfStep serves both.

// ------------------------------------------------------------------------------------------------
// Rows with the accumulators in memory (any width; the register rows take the widths that fit).

// Backward row with the cos/sin gradient accumulation (half / quarter block of 2h channels at o).
template <class TX, class TC>
HWY_INLINE void GradHalfBlockRow(bool stream, const TX* in, TX* out, const TX* x, const TC* c, const TC* s,
                                 float* acc_c, float* acc_s, int64_t h, int64_t j = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto step = [&](int64_t k, VF& y1, VF& y2) __attribute__((always_inline)) {
    const VF d1 = LoadF32(df, in + k), d2 = LoadF32(df, in + h + k);
    VF ac1 = hn::LoadU(df, acc_c + k), ac2 = hn::LoadU(df, acc_c + h + k);
    VF as1 = hn::LoadU(df, acc_s + k), as2 = hn::LoadU(df, acc_s + h + k);
    HalfStep(d1, d2, LoadF32(df, x + k), LoadF32(df, x + h + k), LoadF32(df, c + k), LoadF32(df, c + h + k),
             LoadF32(df, s + k), LoadF32(df, s + h + k), ac1, ac2, as1, as2, y1, y2);
    hn::StoreU(ac1, df, acc_c + k);
    hn::StoreU(ac2, df, acc_c + h + k);
    hn::StoreU(as1, df, acc_s + k);
    hn::StoreU(as2, df, acc_s + h + k);
  };
  j = HalfRuleSteps<LineVectors(HWY_LANES(float) * sizeof(TX)), VF>(
      stream, j, h, lanes, step, [&](VF y, int64_t k) { Put(df, y, out + k, stream); });
  for (; j < h; ++j) {
    const float d1 = LoadScalarF32(in + j), d2 = LoadScalarF32(in + h + j);
    const float x1 = LoadScalarF32(x + j), x2 = LoadScalarF32(x + h + j);
    const float c1 = LoadScalarF32(c + j), c2 = LoadScalarF32(c + h + j);
    const float s1 = LoadScalarF32(s + j), s2 = LoadScalarF32(s + h + j);
    acc_c[j] = std::fma(d1, x1, acc_c[j]);
    acc_c[h + j] = std::fma(d2, x2, acc_c[h + j]);
    acc_s[j] = std::fma(d1, -x2, acc_s[j]);
    acc_s[h + j] = std::fma(d2, x1, acc_s[h + j]);
    StoreScalarF32(std::fma(d1, c1, d2 * s2), out + j);
    StoreScalarF32(std::fma(d2, c2, -(d1 * s1)), out + h + j);
  }
}

template <class TX, class TC>
HWY_INLINE void GradInterleaveRow(bool stream, const TX* in, TX* out, const TX* x, const TC* c, const TC* s,
                                  float* acc_c, float* acc_s, int64_t width, int64_t i = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; i + lanes <= width; i += lanes) {
    VF ac = hn::LoadU(df, acc_c + i), as = hn::LoadU(df, acc_s + i);
    const VF y = InterleaveStep(LoadF32(df, in + i), LoadF32(df, x + i), LoadF32(df, c + i), LoadF32(df, s + i),
                                ac, as);
    hn::StoreU(ac, df, acc_c + i);
    hn::StoreU(as, df, acc_s + i);
    Put(df, y, out + i, stream);
  }
  for (; i < width; i += 2) {
    const float de = LoadScalarF32(in + i), dodd = LoadScalarF32(in + i + 1);
    const float xe = LoadScalarF32(x + i), xo = LoadScalarF32(x + i + 1);
    const float ce = LoadScalarF32(c + i), co = LoadScalarF32(c + i + 1);
    const float se = LoadScalarF32(s + i), so = LoadScalarF32(s + i + 1);
    acc_c[i] = std::fma(de, xe, acc_c[i]);
    acc_c[i + 1] = std::fma(dodd, xo, acc_c[i + 1]);
    acc_s[i] = std::fma(de, -xo, acc_s[i]);
    acc_s[i + 1] = std::fma(dodd, xe, acc_s[i + 1]);
    StoreScalarF32(std::fma(de, ce, dodd * so), out + i);
    StoreScalarF32(std::fma(dodd, co, -(de * se)), out + i + 1);
  }
}

// bf16 pair vectors in the fused backward. Within each vector block of 2N channels the accumulators hold the
// even channels first, then the odd ones ("split" layout); UnsplitBlocks restores channel order per group.
HWY_INLINE int64_t PairBlock() { return 2 * static_cast<int64_t>(hn::Lanes(DF())); }

// The half rule's operands of the pair block at j (first half) and h + j (second), [0] even and [1] odd channels.
struct HalfPairs {
  VF d1[2], d2[2], x1[2], x2[2], c1[2], c2[2], s1[2], s2[2];
};
// cos / sin come from rows widened once per group in split layout (SplitBlocks): plain fp32 loads.
HWY_INLINE void LoadHalfPairs(const BF* in, const BF* x, const float* cw, const float* sw, int64_t j, int64_t h,
                              HalfPairs* v) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  LoadPairs(in + j, &v->d1[0], &v->d1[1]);
  LoadPairs(in + h + j, &v->d2[0], &v->d2[1]);
  LoadPairs(x + j, &v->x1[0], &v->x1[1]);
  LoadPairs(x + h + j, &v->x2[0], &v->x2[1]);
  for (int p = 0; p < 2; ++p) {
    v->c1[p] = hn::LoadU(df, cw + j + p * lanes);
    v->c2[p] = hn::LoadU(df, cw + h + j + p * lanes);
    v->s1[p] = hn::LoadU(df, sw + j + p * lanes);
    v->s2[p] = hn::LoadU(df, sw + h + j + p * lanes);
  }
}

// cw / sw: cos / sin widened in split layout (SplitBlocks); c / s serve the scalar tail.
HWY_INLINE void GradHalfBlockRow(bool stream, const BF* in, BF* out, const BF* x, const BF* c, const BF* s,
                                 float* acc_c, float* acc_s, int64_t h, const float* cw, const float* sw) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  // The pair block at k: y1 for channels [k, k + block), y2 for [h + k, h + k + block), even and odd channels.
  const auto step = [&](int64_t k, PairVectors& py1, PairVectors& py2) __attribute__((always_inline)) {
    VF* y1 = py1.v;
    VF* y2 = py2.v;
    HalfPairs v;
    LoadHalfPairs(in, x, cw, sw, k, h, &v);
    for (int p = 0; p < 2; ++p) {  // p = 0: even channels (split offset 0), 1: odd ones (offset lanes)
      VF ac1 = hn::LoadU(df, acc_c + k + p * lanes), ac2 = hn::LoadU(df, acc_c + h + k + p * lanes);
      VF as1 = hn::LoadU(df, acc_s + k + p * lanes), as2 = hn::LoadU(df, acc_s + h + k + p * lanes);
      HalfStep(v.d1[p], v.d2[p], v.x1[p], v.x2[p], v.c1[p], v.c2[p], v.s1[p], v.s2[p], ac1, ac2, as1, as2, y1[p],
               y2[p]);
      hn::StoreU(ac1, df, acc_c + k + p * lanes);
      hn::StoreU(ac2, df, acc_c + h + k + p * lanes);
      hn::StoreU(as1, df, acc_s + k + p * lanes);
      hn::StoreU(as2, df, acc_s + h + k + p * lanes);
    }
  };
  const int64_t j = HalfRuleSteps<LineVectors(2 * HWY_LANES(float) * sizeof(BF)), PairVectors>(
      stream, 0, h, block, step,
      [&](const PairVectors& y, int64_t k) { StorePairsOfBF16Operands(y.v[0], y.v[1], out + k, stream); });
  GradHalfBlockRow<BF, BF>(stream, in, out, x, c, s, acc_c, acc_s, h, j);
}

HWY_INLINE void GradInterleaveRow(bool stream, const BF* in, BF* out, const BF* x, const BF* c, const BF* s,
                                  float* acc_c, float* acc_s, int64_t width, const float* cw, const float* sw) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  int64_t i = 0;
  for (; i + block <= width; i += block) {
    VF de, dodd, xe, xo, ye, yo;
    LoadPairs(in + i, &de, &dodd);
    LoadPairs(x + i, &xe, &xo);
    const VF ce = hn::LoadU(df, cw + i), co = hn::LoadU(df, cw + i + lanes);
    const VF se = hn::LoadU(df, sw + i), so = hn::LoadU(df, sw + i + lanes);
    VF ace = hn::LoadU(df, acc_c + i), aco = hn::LoadU(df, acc_c + i + lanes);
    VF ase = hn::LoadU(df, acc_s + i), aso = hn::LoadU(df, acc_s + i + lanes);
    HalfStep(de, dodd, xe, xo, ce, co, se, so, ace, aco, ase, aso, ye, yo);
    hn::StoreU(ace, df, acc_c + i);
    hn::StoreU(aco, df, acc_c + i + lanes);
    hn::StoreU(ase, df, acc_s + i);
    hn::StoreU(aso, df, acc_s + i + lanes);
    StorePairsOfBF16Operands(ye, yo, out + i, stream);
  }
  GradInterleaveRow<BF, BF>(stream, in, out, x, c, s, acc_c, acc_s, width, i);
}

// f(begin, count) for every channel range the bf16 grad rows walk in pair blocks, for this mode and width.
template <class F>
HWY_INLINE void ForEachPairRange(RotaryMode mode, int64_t width, const F& f) {
  if (mode == RotaryMode::kInterleave) {
    f(int64_t{0}, width);
    return;
  }
  const int64_t half_block = mode == RotaryMode::kQuarter ? width / 2 : width;  // one half-rule block
  for (int64_t o = 0; o < width; o += half_block) {
    f(o, half_block / 2);
    f(o + half_block / 2, half_block / 2);
  }
}

// Back to channel order: every pair block the bf16 grad rows used.
HWY_INLINE void UnsplitBlocks(RotaryMode mode, int64_t width, float* acc) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  ForEachPairRange(mode, width, [&](int64_t begin, int64_t count) {
    for (int64_t j = begin; j + block <= begin + count; j += block) {
      const VF even = hn::LoadU(df, acc + j), odd = hn::LoadU(df, acc + j + lanes);
      hn::StoreInterleaved2(even, odd, df, acc + j);
    }
  });
}

// The other way: a bf16 cos or sin row widened into split layout for those pair blocks (the tails stay unwritten:
// the rows read them from the bf16 row), once per group instead of once per member row (exact: the same bits).
HWY_INLINE void SplitBlocks(RotaryMode mode, int64_t width, const BF* row, float* split) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  ForEachPairRange(mode, width, [&](int64_t begin, int64_t count) {
    for (int64_t j = begin; j + block <= begin + count; j += block) {
      VF even, odd;
      LoadPairs(row + j, &even, &odd);
      hn::StoreU(even, df, split + j);
      hn::StoreU(odd, df, split + j + lanes);
    }
  });
}

// Two member rows a and b per pass of the half rule: on each accumulator vector a's step, then b's (the order of one
// row after the other, so the same bits) with one load and store of the accumulators instead of two.
template <class TX, class TC>
HWY_INLINE void GradHalfBlockRowPair(bool stream, const TX* in_a, TX* out_a, const TX* x_a, const TX* in_b,
                                     TX* out_b, const TX* x_b, const TC* c, const TC* s, float* acc_c, float* acc_s,
                                     int64_t h) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  for (; j + lanes <= h; j += lanes) {
    const VF c1 = LoadF32(df, c + j), c2 = LoadF32(df, c + h + j);
    const VF s1 = LoadF32(df, s + j), s2 = LoadF32(df, s + h + j);
    VF ac1 = hn::LoadU(df, acc_c + j), ac2 = hn::LoadU(df, acc_c + h + j);
    VF as1 = hn::LoadU(df, acc_s + j), as2 = hn::LoadU(df, acc_s + h + j);
    VF y1, y2;
    HalfStep(LoadF32(df, in_a + j), LoadF32(df, in_a + h + j), LoadF32(df, x_a + j), LoadF32(df, x_a + h + j), c1,
             c2, s1, s2, ac1, ac2, as1, as2, y1, y2);
    Put(df, y1, out_a + j, stream);
    Put(df, y2, out_a + h + j, stream);
    HalfStep(LoadF32(df, in_b + j), LoadF32(df, in_b + h + j), LoadF32(df, x_b + j), LoadF32(df, x_b + h + j), c1,
             c2, s1, s2, ac1, ac2, as1, as2, y1, y2);
    Put(df, y1, out_b + j, stream);
    Put(df, y2, out_b + h + j, stream);
    hn::StoreU(ac1, df, acc_c + j);
    hn::StoreU(ac2, df, acc_c + h + j);
    hn::StoreU(as1, df, acc_s + j);
    hn::StoreU(as2, df, acc_s + h + j);
  }
  GradHalfBlockRow(stream, in_a, out_a, x_a, c, s, acc_c, acc_s, h, j);  // the tails: a's, then b's
  GradHalfBlockRow(stream, in_b, out_b, x_b, c, s, acc_c, acc_s, h, j);
}

template <class TX, class TC>
HWY_INLINE void GradRowContiguous(const RotationConfig& cfg, const TX* in, TX* out, const TX* x, const TC* c,
                                  const TC* s, float* acc_c, float* acc_s) {
  const int64_t width = cfg.width;
  const bool stream = cfg.stream_out;
  switch (cfg.mode) {
    case RotaryMode::kQuarter: {
      const int64_t h = width / 2;
      GradHalfBlockRow(stream, in, out, x, c, s, acc_c, acc_s, width / 4);
      GradHalfBlockRow(stream, in + h, out + h, x + h, c + h, s + h, acc_c + h, acc_s + h, width / 4);
      break;
    }
    case RotaryMode::kInterleave: GradInterleaveRow(stream, in, out, x, c, s, acc_c, acc_s, width); break;
    default: GradHalfBlockRow(stream, in, out, x, c, s, acc_c, acc_s, width / 2); break;
  }
}

// bf16 pairs with cos / sin widened once per group (cw, sw: split layout, SplitBlocks).
HWY_INLINE void GradRowContiguous(const RotationConfig& cfg, const BF* in, BF* out, const BF* x, const BF* c,
                                  const BF* s, const float* cw, const float* sw, float* acc_c, float* acc_s) {
  const int64_t width = cfg.width;
  const bool stream = cfg.stream_out;
  switch (cfg.mode) {
    case RotaryMode::kQuarter: {
      const int64_t h = width / 2;
      GradHalfBlockRow(stream, in, out, x, c, s, acc_c, acc_s, width / 4, cw, sw);
      GradHalfBlockRow(stream, in + h, out + h, x + h, c + h, s + h, acc_c + h, acc_s + h, width / 4, cw + h, sw + h);
      break;
    }
    case RotaryMode::kInterleave: GradInterleaveRow(stream, in, out, x, c, s, acc_c, acc_s, width, cw, sw); break;
    default: GradHalfBlockRow(stream, in, out, x, c, s, acc_c, acc_s, width / 2, cw, sw); break;
  }
}

// Two member rows (a, then b) of the memory form: the half-rule modes in one pass over the accumulators, the
// interleave rule one row after the other. (Not for bf16 pairs: two rows of them need more registers than AVX2 has,
// and were slower than one row at a time.)
template <class TX, class TC>
HWY_INLINE void GradRowContiguousPair(const RotationConfig& cfg, const TX* in_a, TX* out_a, const TX* x_a,
                                      const TX* in_b, TX* out_b, const TX* x_b, const TC* c, const TC* s,
                                      float* acc_c, float* acc_s) {
  const int64_t width = cfg.width;
  const bool stream = cfg.stream_out;
  switch (cfg.mode) {
    case RotaryMode::kQuarter: {
      const int64_t h = width / 2;
      GradHalfBlockRowPair(stream, in_a, out_a, x_a, in_b, out_b, x_b, c, s, acc_c, acc_s, width / 4);
      GradHalfBlockRowPair(stream, in_a + h, out_a + h, x_a + h, in_b + h, out_b + h, x_b + h, c + h, s + h,
                           acc_c + h, acc_s + h, width / 4);
      break;
    }
    case RotaryMode::kInterleave:
      GradRowContiguous(cfg, in_a, out_a, x_a, c, s, acc_c, acc_s);
      GradRowContiguous(cfg, in_b, out_b, x_b, c, s, acc_c, acc_s);
      break;
    default:
      GradHalfBlockRowPair(stream, in_a, out_a, x_a, in_b, out_b, x_b, c, s, acc_c, acc_s, width / 2);
      break;
  }
}

// ------------------------------------------------------------------------------------------------
// Rows with the accumulators in registers. A row of kV vectors keeps gradCos and gradSin of the whole row in
// 2·kV registers over all member rows of a group's side; they are stored once per side (then unsplit and
// summed as the memory form's are). The steps run in the same order from the same zeros: the same bits.

template <int kV>
struct RowAccumulators {
  VF c[kV];
  VF s[kV];
};

// f(std::integral_constant<int, i>) for i in [0, kN): constant indices, so the accumulator arrays stay in
// registers.
template <class F, int... kIs>
HWY_INLINE void UnrollEach(std::integer_sequence<int, kIs...>, const F& f) {
  (f(std::integral_constant<int, kIs>()), ...);
}
template <int kN, class F>
HWY_INLINE void Unroll(const F& f) {
  UnrollEach(std::make_integer_sequence<int, kN>(), f);
}

// Half rule on the block of 2·kJ vectors starting at vector kB (quarter: two such blocks).
template <int kJ, int kB, int kV, class TX, class TC, class S>
HWY_INLINE void RegisterHalfBlock(S stream, const TX* in, TX* out, const TX* x, const TC* c, const TC* s,
                                  RowAccumulators<kV>& a) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), h = kJ * lanes;
  Unroll<kJ>([&](auto k_) {
    constexpr int k = decltype(k_)::value;
    const int64_t j = (kB + k) * lanes;
    VF y1, y2;
    HalfStep(LoadF32(df, in + j), LoadF32(df, in + h + j), LoadF32(df, x + j), LoadF32(df, x + h + j),
             LoadF32(df, c + j), LoadF32(df, c + h + j), LoadF32(df, s + j), LoadF32(df, s + h + j), a.c[kB + k],
             a.c[kB + kJ + k], a.s[kB + k], a.s[kB + kJ + k], y1, y2);
    Put(df, y1, out + j, stream);
    Put(df, y2, out + h + j, stream);
  });
}

// bf16 pairs: block b of 2 vectors holds the even channels in vector 2b, the odd ones in 2b + 1 (split layout).
// cos / sin come widened once per group in split layout (SplitBlocks: the same values, so the same bits, and no
// widening per member row).
template <int kJ, int kB, int kV, class S>
HWY_INLINE void RegisterHalfBlockPairs(S stream, const BF* in, BF* out, const BF* x, const float* c,
                                       const float* s, RowAccumulators<kV>& a) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF())), h = kJ * lanes;
  Unroll<kJ / 2>([&](auto b_) {
    constexpr int b = 2 * decltype(b_)::value;  // first vector of the block
    const int64_t j = (kB + b) * lanes;
    HalfPairs v;
    VF y1[2], y2[2];
    LoadHalfPairs(in, x, c, s, j, h, &v);
    HalfStep(v.d1[0], v.d2[0], v.x1[0], v.x2[0], v.c1[0], v.c2[0], v.s1[0], v.s2[0], a.c[kB + b], a.c[kB + kJ + b],
             a.s[kB + b], a.s[kB + kJ + b], y1[0], y2[0]);
    HalfStep(v.d1[1], v.d2[1], v.x1[1], v.x2[1], v.c1[1], v.c2[1], v.s1[1], v.s2[1], a.c[kB + b + 1],
             a.c[kB + kJ + b + 1], a.s[kB + b + 1], a.s[kB + kJ + b + 1], y1[1], y2[1]);
    StorePairsOfBF16Operands(y1[0], y1[1], out + j, stream);
    StorePairsOfBF16Operands(y2[0], y2[1], out + h + j, stream);
  });
}

template <int kV, class TX, class TC, class S>
HWY_INLINE void RegisterInterleaveRow(S stream, const TX* in, TX* out, const TX* x, const TC* c, const TC* s,
                                      RowAccumulators<kV>& a) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  Unroll<kV>([&](auto v_) {
    constexpr int v = decltype(v_)::value;
    const int64_t i = v * lanes;
    Put(df, InterleaveStep(LoadF32(df, in + i), LoadF32(df, x + i), LoadF32(df, c + i), LoadF32(df, s + i), a.c[v],
                           a.s[v]),
        out + i, stream);
  });
}

// The even and odd channels of a pair block of cos or sin from its split fp32 row.
HWY_INLINE void LoadCosSinPairs(const float* split, VF* even, VF* odd) {
  const DF df;
  *even = hn::LoadU(df, split);
  *odd = hn::LoadU(df, split + hn::Lanes(df));
}

template <int kV, class S>
HWY_INLINE void RegisterInterleaveRowPairs(S stream, const BF* in, BF* out, const BF* x, const float* c,
                                           const float* s, RowAccumulators<kV>& a) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  Unroll<kV / 2>([&](auto b_) {
    constexpr int b = 2 * decltype(b_)::value;
    const int64_t i = b * lanes;
    VF de, dodd, xe, xo, ce, co, se, so, ye, yo;
    LoadPairs(in + i, &de, &dodd);
    LoadPairs(x + i, &xe, &xo);
    LoadCosSinPairs(c + i, &ce, &co);
    LoadCosSinPairs(s + i, &se, &so);
    HalfStep(de, dodd, xe, xo, ce, co, se, so, a.c[b], a.c[b + 1], a.s[b], a.s[b + 1], ye, yo);
    StorePairsOfBF16Operands(ye, yo, out + i, stream);
  });
}

// Whether every output row of the side starts on a multiple of 64 bytes (then every vector store in it is aligned:
// the rows' vector offsets are multiples of the stored vector's bytes).
template <class TX>
HWY_INLINE bool SideRowsAligned(const GradSide& side, const TX* out) {
  if (reinterpret_cast<uintptr_t>(out) % 64 != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (side.member_extent[d] > 1 && (side.member_stride[d][1] * static_cast<int64_t>(sizeof(TX))) % 64 != 0) {
      return false;
    }
  }
  return true;
}

// All member rows of one side of a group, then the accumulators to acc_c / acc_s (width floats each). kSplit: bf16
// rows with cos / sin given as fp32 rows in split layout (TX = BF, TC = float; see RegisterHalfBlockPairs).
// S: the store policy (kernels_rows-inl.h, StreamHere), fixed for the side.
template <RotaryMode kMode, int kV, class TX, class TC, bool kSplit, class S>
HWY_INLINE void SideRowsInRegisters(S stream, const GradSide& side, const TX* in, TX* out, const TX* x, const TC* c,
                                    const TC* s, float* acc_c, float* acc_s) {
  static_assert(!kSplit || (std::is_same<TX, BF>::value && std::is_same<TC, float>::value), "split: bf16 rows");
  const DF df;
  RowAccumulators<kV> a;
  Unroll<kV>([&](auto v_) {
    a.c[decltype(v_)::value] = hn::Zero(df);
    a.s[decltype(v_)::value] = hn::Zero(df);
  });
  const int64_t row_bytes = kV * static_cast<int64_t>(hn::Lanes(df) * sizeof(TX));
  // Half-rule block of 2·kJ vectors from vector kB of a row.
  const auto half = [&](auto j_, auto b_, const TX* row_in, TX* row_out, const TX* row_x) {
    constexpr int kJ = decltype(j_)::value, kB = decltype(b_)::value;
    if constexpr (kSplit) {
      RegisterHalfBlockPairs<kJ, kB, kV>(stream, row_in, row_out, row_x, c, s, a);
    } else {
      RegisterHalfBlock<kJ, kB, kV>(stream, row_in, row_out, row_x, c, s, a);
    }
  };
  using Quarter = std::integral_constant<int, kV / 4>;
  using Half = std::integral_constant<int, kV / 2>;
  using Zero = std::integral_constant<int, 0>;
  ForEachMember(side, in, out, x, row_bytes, [&](const TX* row_in, TX* row_out, const TX* row_x) {
    if constexpr (kMode == RotaryMode::kInterleave) {
      if constexpr (kSplit) {
        RegisterInterleaveRowPairs<kV>(stream, row_in, row_out, row_x, c, s, a);
      } else {
        RegisterInterleaveRow<kV>(stream, row_in, row_out, row_x, c, s, a);
      }
    } else if constexpr (kMode == RotaryMode::kQuarter) {
      half(Quarter(), Zero(), row_in, row_out, row_x);
      half(Quarter(), Half(), row_in, row_out, row_x);
    } else {
      half(Half(), Zero(), row_in, row_out, row_x);
    }
  });
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  Unroll<kV>([&](auto v_) {
    constexpr int v = decltype(v_)::value;
    hn::StoreU(a.c[v], df, acc_c + v * lanes);
    hn::StoreU(a.s[v], df, acc_s + v * lanes);
  });
}

// The side with streaming stores where asked and every row is aligned for them, else with ordinary stores.
template <RotaryMode kMode, int kV, class TX, class TC, bool kSplit = false>
void SideInRegisters(bool stream, const GradSide& side, const TX* in, TX* out, const TX* x, const TC* c,
                     const TC* s, float* acc_c, float* acc_s) {
  if (stream && SideRowsAligned(side, out)) {
    SideRowsInRegisters<kMode, kV, TX, TC, kSplit>(std::true_type(), side, in, out, x, c, s, acc_c, acc_s);
  } else {
    SideRowsInRegisters<kMode, kV, TX, TC, kSplit>(std::false_type(), side, in, out, x, c, s, acc_c, acc_s);
  }
}

template <class TX, class TC>
using SideFn = void(bool, const GradSide&, const TX*, TX*, const TX*, const TC*, const TC*, float*, float*);

template <RotaryMode kMode, class TX, class TC, bool kSplit = false>
SideFn<TX, TC>* PickSideInRegistersForMode(int64_t vectors) {
  switch (vectors) {
    case 2: return &SideInRegisters<kMode, 2, TX, TC, kSplit>;
    case 4: return &SideInRegisters<kMode, 4, TX, TC, kSplit>;
    case 8: return &SideInRegisters<kMode, 8, TX, TC, kSplit>;
    default: return nullptr;
  }
}

// The register form for this row shape, or null (the memory form): rows of 2, 4 or 8 whole vectors (at most 4
// where the target has 16 vector registers: the accumulators take half of them), made of whole blocks of the
// mode's layout (a vector per half-rule half, two for bf16 pairs).
// kSplit: bf16 rows with cos / sin widened in split layout (TX = BF, TC = float), the shapes of bf16 pairs.
template <class TX, class TC, bool kSplit = false>
SideFn<TX, TC>* PickSideInRegisters(RotaryMode mode, int64_t width) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t max_vectors = HWY_MAX_BYTES >= 64 ? 8 : 4;
  if (width % lanes != 0 || width / lanes > max_vectors) return nullptr;
  const int64_t vectors = width / lanes;
  const int64_t block = kSplit ? 2 : 1;
  switch (mode) {
    case RotaryMode::kHalf:
      return vectors % (2 * block) == 0 ? PickSideInRegistersForMode<RotaryMode::kHalf, TX, TC, kSplit>(vectors)
                                        : nullptr;
    case RotaryMode::kQuarter:
      return vectors % (4 * block) == 0 ? PickSideInRegistersForMode<RotaryMode::kQuarter, TX, TC, kSplit>(vectors)
                                        : nullptr;
    case RotaryMode::kInterleave:
      return vectors % block == 0 ? PickSideInRegistersForMode<RotaryMode::kInterleave, TX, TC, kSplit>(vectors)
                                  : nullptr;
    default: return nullptr;
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace rope
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
