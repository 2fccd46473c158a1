// kernels_rotate.cpp — the RoPE rotation row kernels (forward, and backward without gradCos/gradSin), compiled
// once per ISA by Highway (AVX3, AVX2, SCALAR). A row is one vector of `width` channels; the op's plan (args.h)
// says which rows, with which cos/sin rows. Shared pieces: kernels_rows-inl.h; gradCos/gradSin: kernels_grad.cpp.
//
// Arithmetic (bit-exact across the vector bodies, the scalar tails and the strided path): every output is
//   y = fma(a, c_a, +-(b * s_?))
// where a is the element, b its partner in the rotation: the partner product is rounded once, the rest is
// one fused multiply-add, then one round-to-nearest-even to the output dtype.
//
// Row kernels by mode (contiguous last dims; any other stride goes through the fp32 row buffers):
//   half / quarter   lane-aligned halves: no shuffles at all (bf16 quarters of one vector: one half swap)
//   interleave       partner = Shuffle2301 (swap adjacent lanes), signs by OddEven
//   interleave-half  forward: ConcatEven/ConcatOdd de-interleave (bf16: block order, core/simd_convert-inl.h);
//                    backward: StoreInterleaved2 re-interleave; in place (outputs move across the row), rows of
//                    2, 4 or 8 vectors are loaded whole into registers first (bf16 with bf16 cos / sin: in block
//                    order, two steps of it, where AVX2 rows are 8 vectors), other lengths copied aside
// Large out-of-place outputs use non-temporal stores (no write-allocate read), flushed at the end of a range.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rope/kernels_rotate.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "ops/rope/args.h"
#include "ops/rope/kernels_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
template <bool bwd, class TX, class TC>
HWY_INLINE void HalfBlockRow(bool stream, const TX* in, TX* out, const TC* c, const TC* s, int64_t h,
                             int64_t j = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto step = [&](int64_t k, VF& y1, VF& y2) __attribute__((always_inline)) {
    const VF x1 = LoadF32(df, in + k), x2 = LoadF32(df, in + h + k);
    const VF c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + h + k);
    const VF s1 = LoadF32(df, s + k), s2 = LoadF32(df, s + h + k);
    if (bwd) {
      y1 = hn::MulAdd(x1, c1, hn::Mul(x2, s2));
      y2 = hn::MulSub(x2, c2, hn::Mul(x1, s1));
    } else {
      y1 = hn::MulSub(x1, c1, hn::Mul(x2, s1));
      y2 = hn::MulAdd(x2, c2, hn::Mul(x1, s2));
    }
  };
  j = HalfRuleSteps<LineVectors(HWY_LANES(float) * sizeof(TX)), VF>(
      stream, j, h, lanes, step, [&](VF y, int64_t k) { Put(df, y, out + k, stream); });
  for (; j < h; ++j) {
    const float x1 = LoadScalarF32(in + j), x2 = LoadScalarF32(in + h + j);
    const float c1 = LoadScalarF32(c + j), c2 = LoadScalarF32(c + h + j);
    const float s1 = LoadScalarF32(s + j), s2 = LoadScalarF32(s + h + j);
    if (bwd) {
      StoreScalarF32(std::fma(x1, c1, x2 * s2), out + j);
      StoreScalarF32(std::fma(x2, c2, -(x1 * s1)), out + h + j);
    } else {
      StoreScalarF32(std::fma(x1, c1, -(x2 * s1)), out + j);
      StoreScalarF32(std::fma(x2, c2, x1 * s2), out + h + j);
    }
  }
}

template <bool bwd, class TX, class TC>
HWY_INLINE void InterleaveRow(bool stream, const TX* in, TX* out, const TC* c, const TC* s,
                              int64_t width, int64_t i = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; i + lanes <= width; i += lanes) {
    const VF x = LoadF32(df, in + i), cv = LoadF32(df, c + i), sv = LoadF32(df, s + i);
    VF y;
    if (bwd) {
      const VF p = hn::Shuffle2301(hn::Mul(x, sv));  // even lane: x[e+1]*s[e+1]; odd: x[e]*s[e]
      y = hn::MulAdd(x, cv, hn::OddEven(hn::Neg(p), p));
    } else {
      const VF p = hn::Mul(hn::Shuffle2301(x), sv);  // even lane: x[e+1]*s[e]; odd: x[e]*s[e+1]
      y = hn::MulAdd(x, cv, hn::OddEven(p, hn::Neg(p)));
    }
    Put(df, y, out + i, stream);
  }
  for (; i < width; i += 2) {
    const float xe = LoadScalarF32(in + i), xo = LoadScalarF32(in + i + 1);
    const float ce = LoadScalarF32(c + i), co = LoadScalarF32(c + i + 1);
    const float se = LoadScalarF32(s + i), so = LoadScalarF32(s + i + 1);
    if (bwd) {
      StoreScalarF32(std::fma(xe, ce, xo * so), out + i);
      StoreScalarF32(std::fma(xo, co, -(xe * se)), out + i + 1);
    } else {
      StoreScalarF32(std::fma(xe, ce, -(xo * se)), out + i);
      StoreScalarF32(std::fma(xo, co, xe * so), out + i + 1);
    }
  }
}

// One interleave-half block: forward, the pairs' even and odd channels a = xe, b = xo to the two halves' outputs
// y0 (at k) and y1 (at h + k); backward, the halves' vectors a = d1 (at k), b = d2 (at h + k) to the even and odd
// outputs y0, y1 (at 2k). Every vector path computes it here, so all give the same bits.
template <bool bwd>
HWY_INLINE void InterleaveHalfBlock(VF a, VF b, VF c1, VF c2, VF s1, VF s2, VF* y0, VF* y1) {
  if (bwd) {
    *y0 = hn::MulAdd(a, c1, hn::Mul(b, s2));
    *y1 = hn::MulSub(b, c2, hn::Mul(a, s1));
  } else {
    *y0 = hn::MulSub(a, c1, hn::Mul(b, s1));
    *y1 = hn::MulAdd(b, c2, hn::Mul(a, s2));
  }
}

// even and odd interleaved into out[0, 2N) (the backward's outputs).
template <class TX>
HWY_INLINE void PutInterleaved(DF df, VF even, VF odd, TX* out, bool stream) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  HWY_ALIGN float pairs[2 * hn::MaxLanes(df)];
  hn::StoreInterleaved2(even, odd, df, pairs);
  Put(df, hn::Load(df, pairs), out, stream);
  Put(df, hn::Load(df, pairs + lanes), out + lanes, stream);
}

// interleave-half: forward reads pairs (x[2k], x[2k+1]) and writes halves; backward the reverse.
template <bool bwd, class TX, class TC>
HWY_INLINE void InterleaveHalfRow(bool stream, const TX* in, TX* out, const TC* c, const TC* s,
                                  int64_t width, int64_t k = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t h = width / 2;
  for (; k + lanes <= h; k += lanes) {
    const VF c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + h + k);
    const VF s1 = LoadF32(df, s + k), s2 = LoadF32(df, s + h + k);
    VF y0, y1;
    if (bwd) {
      InterleaveHalfBlock<true>(LoadF32(df, in + k), LoadF32(df, in + h + k), c1, c2, s1, s2, &y0, &y1);
      PutInterleaved(df, y0, y1, out + 2 * k, stream);
    } else {
      const VF lo = LoadF32(df, in + 2 * k), hi = LoadF32(df, in + 2 * k + lanes);
      InterleaveHalfBlock<false>(hn::ConcatEven(df, hi, lo), hn::ConcatOdd(df, hi, lo), c1, c2, s1, s2, &y0, &y1);
      Put(df, y0, out + k, stream);
      Put(df, y1, out + h + k, stream);
    }
  }
  for (; k < h; ++k) {
    const float c1 = LoadScalarF32(c + k), c2 = LoadScalarF32(c + h + k);
    const float s1 = LoadScalarF32(s + k), s2 = LoadScalarF32(s + h + k);
    if (bwd) {
      const float d1 = LoadScalarF32(in + k), d2 = LoadScalarF32(in + h + k);
      StoreScalarF32(std::fma(d1, c1, d2 * s2), out + 2 * k);
      StoreScalarF32(std::fma(d2, c2, -(d1 * s1)), out + 2 * k + 1);
    } else {
      const float xe = LoadScalarF32(in + 2 * k), xo = LoadScalarF32(in + 2 * k + 1);
      StoreScalarF32(std::fma(xe, c1, -(xo * s1)), out + k);
      StoreScalarF32(std::fma(xo, c2, xe * s2), out + h + k);
    }
  }
}

// half block: channel j pairs with j + h; even and odd channels are independent rotations.
template <bool bwd>
HWY_INLINE void HalfBlockRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t h) {
  const int64_t block = 2 * static_cast<int64_t>(hn::Lanes(DF()));
  // The pair block at k: y1 for channels [k, k + block), y2 for [h + k, h + k + block), even and odd channels.
  const auto step = [&](int64_t k, PairVectors& py1, PairVectors& py2) __attribute__((always_inline)) {
    VF* y1 = py1.v;
    VF* y2 = py2.v;
    VF x1[2], x2[2], c1[2], c2[2], s1[2], s2[2];
    LoadPairs(in + k, &x1[0], &x1[1]);
    LoadPairs(in + h + k, &x2[0], &x2[1]);
    LoadPairs(c + k, &c1[0], &c1[1]);
    LoadPairs(c + h + k, &c2[0], &c2[1]);
    LoadPairs(s + k, &s1[0], &s1[1]);
    LoadPairs(s + h + k, &s2[0], &s2[1]);
    for (int p = 0; p < 2; ++p) {
      if (bwd) {
        y1[p] = hn::MulAdd(x1[p], c1[p], hn::Mul(x2[p], s2[p]));
        y2[p] = hn::MulSub(x2[p], c2[p], hn::Mul(x1[p], s1[p]));
      } else {
        y1[p] = hn::MulSub(x1[p], c1[p], hn::Mul(x2[p], s1[p]));
        y2[p] = hn::MulAdd(x2[p], c2[p], hn::Mul(x1[p], s2[p]));
      }
    }
  };
  const int64_t j = HalfRuleSteps<LineVectors(2 * HWY_LANES(float) * sizeof(BF)), PairVectors>(
      stream, 0, h, block, step,
      [&](const PairVectors& y, int64_t k) { StorePairsOfBF16Operands(y.v[0], y.v[1], out + k, stream); });
  HalfBlockRow<bwd, BF, BF>(stream, in, out, c, s, h, j);
}

// quarter, with quarters of one vector (N channels): a pair vector of 2N channels is the half rule's whole block,
// its lanes [0, N/2) the first quarter's even (or odd) channels and [N/2, N) the second's, so each element's partner
// is the lane N/2 away: one swap of the vector's halves instead of the generic path's widening loads and per-vector
// rounding. The sign goes on by an xor (what Neg is), so the bits are the half rule's.
template <bool bwd>
HWY_INLINE void QuarterPairRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t h) {
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const size_t lanes = hn::Lanes(df);
  // -0.0 on the lanes whose partner product is subtracted: the first quarter forward, the second backward.
  const auto first = hn::FirstN(du, lanes / 2);
  const VF sign = hn::BitCast(df, bwd ? hn::IfThenZeroElse(first, hn::Set(du, 0x80000000u))
                                      : hn::IfThenElseZero(first, hn::Set(du, 0x80000000u)));
  for (int64_t o = 0; o < 2 * h; o += h) {  // the two half-rule blocks of the row
    VF x[2], cv[2], sv[2], y[2];
    LoadPairs(in + o, &x[0], &x[1]);
    LoadPairs(c + o, &cv[0], &cv[1]);
    LoadPairs(s + o, &sv[0], &sv[1]);
    for (int p = 0; p < 2; ++p) {
      // forward: partner x times this lane's sin; backward: the partner's x times the partner's sin
      const VF prod = bwd ? hn::ConcatLowerUpper(df, hn::Mul(x[p], sv[p]), hn::Mul(x[p], sv[p]))
                          : hn::Mul(hn::ConcatLowerUpper(df, x[p], x[p]), sv[p]);
      y[p] = hn::MulAdd(x[p], cv[p], hn::Xor(prod, sign));
    }
    StorePairsOfBF16Operands(y[0], y[1], out + o, stream);
  }
}

template <bool bwd>
HWY_INLINE void InterleaveRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t width) {
  const int64_t block = 2 * static_cast<int64_t>(hn::Lanes(DF()));
  int64_t i = 0;
  for (; i + block <= width; i += block) {
    VF xe, xo, ce, co, se, so;
    LoadPairs(in + i, &xe, &xo);
    LoadPairs(c + i, &ce, &co);
    LoadPairs(s + i, &se, &so);
    if (bwd) {
      StorePairsOfBF16Operands(hn::MulAdd(xe, ce, hn::Mul(xo, so)), hn::MulSub(xo, co, hn::Mul(xe, se)),
                               out + i, stream);
    } else {
      StorePairsOfBF16Operands(hn::MulSub(xe, ce, hn::Mul(xo, se)), hn::MulAdd(xo, co, hn::Mul(xe, so)),
                               out + i, stream);
    }
  }
  InterleaveRow<bwd, BF, BF>(stream, in, out, c, s, width, i);
}

#if TXOPS_HAVE_BF16_BLOCKS
// InterleaveHalfBlock on one block-order step: the channels [k, k + 2N) of each half of bf16 cos / sin, loaded in
// block order (lo: the first four of every eight, hi: the rest), against the operands a, b in the same order.
template <bool bwd>
HWY_INLINE void InterleaveHalfBlocks(VF al, VF bl, VF ah, VF bh, const BF* c, const BF* s, int64_t h, int64_t k,
                                     VF* y0l, VF* y1l, VF* y0h, VF* y1h) {
  const DF df;
  VF c1l, c1h, c2l, c2h, s1l, s1h, s2l, s2h;
  LoadBF16Blocks(df, c + k, &c1l, &c1h);
  LoadBF16Blocks(df, c + h + k, &c2l, &c2h);
  LoadBF16Blocks(df, s + k, &s1l, &s1h);
  LoadBF16Blocks(df, s + h + k, &s2l, &s2h);
  InterleaveHalfBlock<bwd>(al, bl, c1l, c2l, s1l, s2l, y0l, y1l);
  InterleaveHalfBlock<bwd>(ah, bh, c1h, c2h, s1h, s2h, y0h, y1h);
}

// One block-order step of the bf16 forward: 2N pairs (their even and odd channels in block order,
// LoadBF16PairsInBlocks) to outputs [k, k + 2N) and [h + k, h + k + 2N). Cos / sin widen by one unpack, and each half
// of the output leaves in one full-width store; it rounds with one vcvtne2ps2bf16 + vpermq per pair of vectors where
// the CPU has AVX512_BF16, the integer rounding + packus elsewhere (PackBlocksOfBF16Operands; README, sessions 19, 21).
HWY_INLINE void InterleaveHalfForwardStep(bool stream, VF xel, VF xol, VF xeh, VF xoh, BF* out, const BF* c,
                                          const BF* s, int64_t h, int64_t k) {
  const DF df;
  const hn::Repartition<uint16_t, DF> d16;
  VF y0l, y1l, y0h, y1h;
  InterleaveHalfBlocks<false>(xel, xol, xeh, xoh, c, s, h, k, &y0l, &y1l, &y0h, &y1h);
  StoreBF16Bits(d16, PackBlocksOfBF16Operands(df, y0l, y0h), out + k, stream);
  StoreBF16Bits(d16, PackBlocksOfBF16Operands(df, y1l, y1h), out + h + k, stream);
}

// The bf16 forward in place on a row of kSteps block-order steps (4N channels each): every pair is loaded before
// the first store, so the row needs no copy aside (AVX2's D = 64 rows: two steps).
template <int kSteps>
HWY_INLINE void InterleaveHalfForwardInPlace(bool stream, BF* row, const BF* c, const BF* s) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), h = kSteps * 2 * lanes;
  VF xel[kSteps], xol[kSteps], xeh[kSteps], xoh[kSteps];
  for (int i = 0; i < kSteps; ++i) LoadBF16PairsInBlocks(df, row + 4 * lanes * i, &xel[i], &xol[i], &xeh[i], &xoh[i]);
  for (int i = 0; i < kSteps; ++i)
    InterleaveHalfForwardStep(stream, xel[i], xol[i], xeh[i], xoh[i], row, c, s, h, 2 * lanes * i);
}
#endif

#if HWY_TARGET == HWY_AVX2
// The bf16 backward in place on an AVX2 row of kSteps steps of 16 channel pairs: the halves load in block order (one
// unpack per vector, where a widening load is two operations), all before the first store; each step's rounded pairs
// (bf16 y0 | y1 << 16, block order: k + 0..3, 8..11 and k + 4..7, 12..15) go back to channel order with one
// 128-bit permute per output vector. InterleaveHalfBlock and the pair rounding as every path: the same bits.
template <int kSteps>
HWY_INLINE void InterleaveHalfBackwardInPlace(bool stream, BF* row, const BF* c, const BF* s) {
  const DF df;
  const DU du;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), h = kSteps * 2 * lanes;
  VF d1l[kSteps], d1h[kSteps], d2l[kSteps], d2h[kSteps];
  for (int i = 0; i < kSteps; ++i) {
    LoadBF16Blocks(df, row + 2 * lanes * i, &d1l[i], &d1h[i]);
    LoadBF16Blocks(df, row + h + 2 * lanes * i, &d2l[i], &d2h[i]);
  }
  for (int i = 0; i < kSteps; ++i) {
    const int64_t k = 2 * lanes * i;
    VF y0l, y1l, y0h, y1h;
    InterleaveHalfBlocks<true>(d1l[i], d2l[i], d1h[i], d2h[i], c, s, h, k, &y0l, &y1l, &y0h, &y1h);
    const VU ml = txops::HWY_NAMESPACE::MergeBF16PairsOfBF16Operands(df, y0l, y1l);
    const VU mh = txops::HWY_NAMESPACE::MergeBF16PairsOfBF16Operands(df, y0h, y1h);
    StoreMerged(hn::ConcatLowerLower(du, mh, ml), row + 2 * k, stream);
    StoreMerged(hn::ConcatUpperUpper(du, mh, ml), row + 2 * k + 2 * lanes, stream);
  }
}
#endif

template <bool bwd>
HWY_INLINE void InterleaveHalfRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t width) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t h = width / 2;
  int64_t k = 0;
#if TXOPS_HAVE_BF16_BLOCKS
  // Forward: block order (core/simd_convert-inl.h, InterleaveHalfForwardStep).
  if (!bwd) {
    for (; k + 2 * lanes <= h; k += 2 * lanes) {
      VF xel, xol, xeh, xoh;
      LoadBF16PairsInBlocks(df, in + 2 * k, &xel, &xol, &xeh, &xoh);
      InterleaveHalfForwardStep(stream, xel, xol, xeh, xoh, out, c, s, h, k);
    }
  }
#endif
  for (; k + lanes <= h; k += lanes) {
    const VF c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + h + k);
    const VF s1 = LoadF32(df, s + k), s2 = LoadF32(df, s + h + k);
    VF y0, y1;
    if (bwd) {
      InterleaveHalfBlock<true>(LoadF32(df, in + k), LoadF32(df, in + h + k), c1, c2, s1, s2, &y0, &y1);
      StorePairsOfBF16Operands(y0, y1, out + 2 * k, stream);
    } else {
      VF xe, xo;
      LoadPairs(in + 2 * k, &xe, &xo);
      InterleaveHalfBlock<false>(xe, xo, c1, c2, s1, s2, &y0, &y1);
      PutOfBF16Operands(df, y0, out + k, stream);
      PutOfBF16Operands(df, y1, out + h + k, stream);
    }
  }
  InterleaveHalfRow<bwd, BF, BF>(stream, in, out, c, s, width, k);
}

// interleave-half in place on a row of 2·kBlocks vectors (kBlocks blocks of N channels per half): every input vector
// is loaded before the first store, so the row needs no copy aside (with it, the partial ops' D = 64 fp32 rows took
// 1.7x as long in cache); InterleaveHalfBlock as every path, so the same bits. kPairs: bf16 rows with bf16 cos / sin,
// whose backward stores pair vectors as the bf16 InterleaveHalfRow does (its forward, in block order, is not done
// here).
template <bool bwd, int kBlocks, bool kPairs, class TX, class TC>
HWY_INLINE void InterleaveHalfRowInPlace(bool stream, TX* row, const TC* c, const TC* s) {
  static_assert(bwd || !kPairs, "the bf16 pair forward runs in block order");
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), h = kBlocks * lanes;
  VF v[2 * kBlocks];
  for (int i = 0; i < 2 * kBlocks; ++i) v[i] = LoadF32(df, row + i * lanes);
  for (int b = 0; b < kBlocks; ++b) {
    const int64_t k = b * lanes;
    const VF c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + h + k);
    const VF s1 = LoadF32(df, s + k), s2 = LoadF32(df, s + h + k);
    VF y0, y1;
    if (bwd) {
      InterleaveHalfBlock<true>(v[b], v[kBlocks + b], c1, c2, s1, s2, &y0, &y1);
      if constexpr (kPairs) {
        StorePairsOfBF16Operands(y0, y1, row + 2 * k, stream);
      } else {
        PutInterleaved(df, y0, y1, row + 2 * k, stream);
      }
    } else {
      InterleaveHalfBlock<false>(hn::ConcatEven(df, v[2 * b + 1], v[2 * b]), hn::ConcatOdd(df, v[2 * b + 1], v[2 * b]),
                                 c1, c2, s1, s2, &y0, &y1);
      Put(df, y0, row + k, stream);
      Put(df, y1, row + h + k, stream);
    }
  }
}

// Row loops specialised by mode and direction (the row body inlines into a pointer-increment loop).
template <bool bwd, class TX, class TC>
void RotateRowsSimd(const RotationConfig& cfg, const RowStream& st, int64_t begin, int64_t end) {
  const int64_t width = cfg.width, h = width / 2;
  const bool stream = cfg.stream_out;
  constexpr bool kWiden = std::is_same<TC, hwy::float16_t>::value;  // fp16 cos / sin as fp32 rows (ForEachRow)
  switch (cfg.mode) {
    case RotaryMode::kHalf:
      ForEachRow<TX, TC, kWiden>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const auto* c, const auto* s) {
        HalfBlockRow<bwd>(stream, in, out, c, s, h);
      });
      break;
    case RotaryMode::kQuarter:
      if constexpr (std::is_same<TX, BF>::value && std::is_same<TC, BF>::value) {
        if (width == 4 * static_cast<int64_t>(hn::Lanes(DF()))) {  // quarters of one vector
          ForEachRow<TX, TC, kWiden>(st, cfg.width, begin, end,
                                     [&](const TX* in, TX* out, const TC* c, const TC* s) __attribute__((always_inline)) {
                                       QuarterPairRow<bwd>(stream, in, out, c, s, h);
                                     });
          break;
        }
      }
      // always_inline: two calls per row, each of a vector or two at D = 64 (a call per row cost a third more).
      ForEachRow<TX, TC, kWiden>(st, cfg.width, begin, end,
                                 [&](const TX* in, TX* out, const auto* c, const auto* s) __attribute__((always_inline)) {
        HalfBlockRow<bwd>(stream, in, out, c, s, width / 4);
        HalfBlockRow<bwd>(stream, in + h, out + h, c + h, s + h, width / 4);
      });
      break;
    case RotaryMode::kInterleave:
      ForEachRow<TX, TC, kWiden>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const auto* c, const auto* s) {
        InterleaveRow<bwd>(stream, in, out, c, s, width);
      });
      break;
    case RotaryMode::kInterleaveHalf: {
      TX saved[kMaxWidth];
      // In place the outputs move across the row, so every input is read before the first store. Rows of 2, 4 or 8
      // vectors are loaded whole into registers (AVX2's bf16 backward in block order). The bf16 forward with bf16
      // cos / sin runs in block order: one step reads a row of 4 vectors before it stores, and a row of 8 loads
      // both its steps first. Other rows are copied aside.
      enum class InPlace { kCopyAside, kRegisters, kOneBlockStep, kTwoBlockSteps };
      constexpr bool kPairs = std::is_same<TX, BF>::value && std::is_same<TC, BF>::value;
      const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF())), vectors = width % lanes == 0 ? width / lanes : 0;
      InPlace how = InPlace::kCopyAside;
      if (bwd || !kPairs) {
        if (vectors == 2 || vectors == 4 || vectors == 8) how = InPlace::kRegisters;
      } else {
#if TXOPS_HAVE_BF16_BLOCKS
        how = vectors == 4 ? InPlace::kOneBlockStep : vectors == 8 ? InPlace::kTwoBlockSteps : InPlace::kCopyAside;
#endif
      }
      // always_inline: D = 64 rows take two vector iterations, so a call per row was a fifth of the time.
      ForEachRow<TX, TC, kWiden>(st, cfg.width, begin, end,
                         [&](const TX* in, TX* out, const auto* c, const auto* s) __attribute__((always_inline)) {
        if (in == out && how == InPlace::kRegisters) {
          if (vectors == 2) {
            InterleaveHalfRowInPlace<bwd, 1, kPairs && bwd>(stream, out, c, s);
          } else if (vectors == 4) {
            InterleaveHalfRowInPlace<bwd, 2, kPairs && bwd>(stream, out, c, s);
          } else {
#if HWY_TARGET == HWY_AVX2
            if constexpr (kPairs && bwd) InterleaveHalfBackwardInPlace<2>(stream, out, c, s); else
#endif
            InterleaveHalfRowInPlace<bwd, 4, kPairs && bwd>(stream, out, c, s);
          }
#if TXOPS_HAVE_BF16_BLOCKS
        } else if (in == out && how == InPlace::kTwoBlockSteps) {
          if constexpr (kPairs && !bwd) InterleaveHalfForwardInPlace<2>(stream, out, c, s);
#endif
        } else {
          if (in == out && how == InPlace::kCopyAside) {
            std::memcpy(saved, in, static_cast<size_t>(width) * sizeof(TX));
            in = saved;
          }
          InterleaveHalfRow<bwd>(stream, in, out, c, s, width);
        }
#ifdef TXOPS_FUZZ_PLANT_OOB  // make fuzz-plant-check only: one element past the row end, for the fuzzers to find
        out[width] = out[0];
#endif
      });
      break;
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// ------------------------------------------------------------------------------------------------
// Row and group loops.

template <class TX, class TC>
void RotateStreamRows(const RowJob& job, const RowStream& st, int64_t begin, int64_t end) {
#if HWY_TARGET != HWY_SCALAR
  if (job.simd_rows) {
    if (job.config.backward) {
      RotateRowsSimd<true, TX, TC>(job.config, st, begin, end);
    } else {
      RotateRowsSimd<false, TX, TC>(job.config, st, begin, end);
    }
    return;
  }
#endif
  ForEachRow<TX, TC>(st, job.config.width, begin, end, [&](const TX* in, TX* out, const TC* c, const TC* s) {
    RotateRowStrided(job.config, st, in, out, c, s);
  });
}

template <class TX, class TC>
void RotateRows(const RowJob& job, int64_t begin, int64_t end) {
  for (int i = 0; i < job.stream_count; ++i) {
    const RowStream& st = job.streams[i];
    const int64_t rows = st.rows();
    const int64_t b = begin < 0 ? 0 : begin, e = end < rows ? end : rows;
    if (b < e) RotateStreamRows<TX, TC>(job, st, b, e);
    begin -= rows;
    end -= rows;
  }
  if (job.config.stream_out) hwy::FlushStream();
}

// Kernel tables by storage type.
template <class TX>
RowKernel* PickRowKernelFor(DType cs) {
  switch (cs) {
    case DType::kF32: return &RotateRows<TX, float>;
    case DType::kF16: return &RotateRows<TX, hwy::float16_t>;
    case DType::kBF16: return &RotateRows<TX, hwy::bfloat16_t>;
    default: return nullptr;
  }
}
RowKernel* PickRowKernel(DType x, DType cs) {
  switch (x) {
    case DType::kF32: return PickRowKernelFor<float>(cs);
    case DType::kF16: return PickRowKernelFor<hwy::float16_t>(cs);
    case DType::kBF16: return PickRowKernelFor<hwy::bfloat16_t>(cs);
    default: return nullptr;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rope
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
namespace rope {

RowKernel* select_row_kernel(Isa isa, const RotationConfig& config, Isa* chosen) {
  *chosen = selected_isa(isa, TXOPS_AVX3_FN(PickRowKernel), TXOPS_AVX2_FN(PickRowKernel));
  return TXOPS_SELECT_KERNEL(isa, PickRowKernel)(config.x_dtype, config.cs_dtype);
}

}  // namespace rope
}  // namespace txops
#endif  // HWY_ONCE
