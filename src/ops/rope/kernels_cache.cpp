// kernels_cache.cpp — the token loop of RopeWithSinCosCache (cache_rows.h) when every query / key channel step is 1,
// compiled per ISA by Highway (AVX3, AVX2; the SCALAR target has none: cache_rows.cpp's row-buffer path serves it).
//
// Per token, its cos and sin halves are read once from the cache row of its position (in mrope mode lane by lane
// from the row of each channel's section), widened to fp32 in the order the row loop consumes them, and every
// query and key head of the token is rotated with them while they stay in L1. The arithmetic is the row kernels'
// (kernels_rotate.cpp: y = fma(a, c, +-(b * s)), one rounding), with c and s repeated as NeoX (cat(c, c)) or GPT-J
// (c[2k] = c[2k+1]) repeat them, so the bits equal the row-buffer path's. That path copies the halves into
// full-width rows and widens them again for every head: on Zen 4 its 256-token decode ran from cache at 0.19 ns per
// element, this loop at 0.10-0.11 (README.md, session 18). The cache rows of the token kCacheAhead tokens on are
// prefetched into L2: positions are arbitrary, so no hardware prefetcher finds those rows (random-position mrope
// prefill 2.80 -> 2.29 ms). Each head's row of the next token is prefetched into L1 while the head is rotated: without
// it one Xeon core kept too few lines in flight behind the bf16 arithmetic, and memory time and compute time added up
// (8192-token bf16 prefill, 1 thread: 13.8 -> 8.2-9.1 ms; README.md, session 22).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rope/kernels_cache.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "ops/rope/cache_rows.h"
#include "ops/rope/kernels_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
namespace {

constexpr int64_t kCacheAhead = 4;  // tokens between a cache-row prefetch and its use

// The fp32 cos and sin halves (h = rotary_dim / 2 each) of one token, natural channel order.
template <class TC>
void LoadHalves(const CacheJob& job, const int32_t* lane_row, const TC* const* rows, float* c, float* s) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), h = job.config.width / 2;
  const int sections = job.sections == 0 ? 1 : job.sections;
  int64_t k = 0;
  if (job.cache_step == 1) {
    for (; k + N <= h; k += N) {
      VF cv = LoadF32(df, rows[0] + k), sv = LoadF32(df, rows[0] + h + k);
      for (int r = 1; r < sections; ++r) {  // mrope: lanes of section r take row r
        const auto take = hn::RebindMask(df, hn::Eq(hn::LoadU(di, lane_row + k), hn::Set(di, r)));
        cv = hn::IfThenElse(take, LoadF32(df, rows[r] + k), cv);
        sv = hn::IfThenElse(take, LoadF32(df, rows[r] + h + k), sv);
      }
      hn::Store(cv, df, c + k);
      hn::Store(sv, df, s + k);
    }
  }
  for (; k < h; ++k) {
    const TC* row = rows[job.channel_row[k]];
    c[k] = LoadScalarF32(row + k * job.cache_step);
    s[k] = LoadScalarF32(row + (h + k) * job.cache_step);
  }
}

// Whole blocks of 2N channels from natural order into pair order (the N even channels, then the N odd ones), the
// order LoadPairs gives bf16 rows in; a partial block at the end stays in natural order.
void ToPairOrder(float* v, int64_t count) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t j = 0; j + 2 * N <= count; j += 2 * N) {
    const VF lo = hn::Load(df, v + j), hi = hn::Load(df, v + j + N);
    hn::Store(hn::ConcatEven(df, hi, lo), df, v + j);
    hn::Store(hn::ConcatOdd(df, hi, lo), df, v + j + N);
  }
}

// GPT-J's full-width rows: each half channel repeated, dst[2k] = dst[2k + 1] = src[k].
void Repeat(const float* src, int64_t h, float* dst) {
  for (int64_t k = 0; k < h; ++k) dst[2 * k] = dst[2 * k + 1] = src[k];
}

// A bf16 pair store: with a bf16 cache every operand is bf16 (kernels_rows-inl.h, StorePairsOfBF16Operands); an fp32
// cache can bring NaN payloads.
template <class TC>
HWY_INLINE void StoreRow(VF even, VF odd, BF* p, bool stream) {
  if (std::is_same<TC, BF>::value) return StorePairsOfBF16Operands(even, odd, p, stream);
  StorePairs(even, odd, p, stream);
}

// NeoX (channel j pairs with j + h), the scalar tail: the row kernels' formulas.
template <class TX>
HWY_INLINE void NeoxTail(const TX* in, TX* out, const float* c, const float* s, int64_t h, int64_t j) {
  for (; j < h; ++j) {
    const float x1 = LoadScalarF32(in + j), x2 = LoadScalarF32(in + h + j);
    StoreScalarF32(std::fma(x1, c[j], -(x2 * s[j])), out + j);
    StoreScalarF32(std::fma(x2, c[j], x1 * s[j]), out + h + j);
  }
}

// NeoX, N channels at a time; c, s natural order.
template <class TX>
HWY_INLINE void NeoxRow(bool stream, const TX* in, TX* out, const float* c, const float* s, int64_t h) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  for (; j + N <= h; j += N) {
    const VF x1 = LoadF32(df, in + j), x2 = LoadF32(df, in + h + j);
    const VF cv = hn::Load(df, c + j), sv = hn::Load(df, s + j);
    Put(df, hn::MulSub(x1, cv, hn::Mul(x2, sv)), out + j, stream);
    Put(df, hn::MulAdd(x2, cv, hn::Mul(x1, sv)), out + h + j, stream);
  }
  NeoxTail(in, out, c, s, h, j);
}

// NeoX, bf16 rows as pair vectors (2N channels); c, s in pair order (ToPairOrder); TC the cache's type.
template <class TC>
HWY_INLINE void NeoxPairRow(bool stream, const BF* in, BF* out, const float* c, const float* s, int64_t h) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  for (; j + 2 * N <= h; j += 2 * N) {
    VF x1[2], x2[2], y1[2], y2[2];
    LoadPairs(in + j, &x1[0], &x1[1]);
    LoadPairs(in + h + j, &x2[0], &x2[1]);
    for (int p = 0; p < 2; ++p) {
      const VF cv = hn::Load(df, c + j + p * N), sv = hn::Load(df, s + j + p * N);
      y1[p] = hn::MulSub(x1[p], cv, hn::Mul(x2[p], sv));
      y2[p] = hn::MulAdd(x2[p], cv, hn::Mul(x1[p], sv));
    }
    StoreRow<TC>(y1[0], y1[1], out + j, stream);
    StoreRow<TC>(y2[0], y2[1], out + h + j, stream);
  }
  NeoxTail(in, out, c, s, h, j);
}

// GPT-J (channel 2k pairs with 2k + 1), the scalar tail from channel i; c, s are the half rows.
template <class TX>
HWY_INLINE void GptjTail(const TX* in, TX* out, const float* c, const float* s, int64_t width, int64_t i) {
  for (; i < width; i += 2) {
    const float xe = LoadScalarF32(in + i), xo = LoadScalarF32(in + i + 1);
    const float cv = c[i / 2], sv = s[i / 2];
    StoreScalarF32(std::fma(xe, cv, -(xo * sv)), out + i);
    StoreScalarF32(std::fma(xo, cv, xe * sv), out + i + 1);
  }
}

// GPT-J, N channels at a time: partner by Shuffle2301, signs by OddEven; cw, sw full width (Repeat), c, s the
// halves for the tail.
template <class TX>
HWY_INLINE void GptjRow(bool stream, const TX* in, TX* out, const float* cw, const float* sw, const float* c,
                        const float* s, int64_t width) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + N <= width; i += N) {
    const VF x = LoadF32(df, in + i);
    const VF p = hn::Mul(hn::Shuffle2301(x), hn::Load(df, sw + i));  // even lane: x[e+1] s[e]; odd: x[e] s[e+1]
    Put(df, hn::MulAdd(x, hn::Load(df, cw + i), hn::OddEven(p, hn::Neg(p))), out + i, stream);
  }
  GptjTail(in, out, c, s, width, i);
}

// GPT-J, bf16 rows as pair vectors: the even channels of 2N are the N channels 2k, the odd ones 2k + 1, so both
// take the half rows' c[k], s[k] in natural order.
template <class TC>
HWY_INLINE void GptjPairRow(bool stream, const BF* in, BF* out, const float* c, const float* s, int64_t width) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 2 * N <= width; i += 2 * N) {
    VF xe, xo;
    LoadPairs(in + i, &xe, &xo);
    const VF cv = hn::Load(df, c + i / 2), sv = hn::Load(df, s + i / 2);
    StoreRow<TC>(hn::MulSub(xe, cv, hn::Mul(xo, sv)), hn::MulAdd(xo, cv, hn::Mul(xe, sv)), out + i, stream);
  }
  GptjTail(in, out, c, s, width, i);
}

template <class TX, class TC>
void CacheTokensT(const CacheJob& job, int64_t begin, int64_t end) {
  const int64_t width = job.config.width, h = width / 2;
  const bool neox = job.config.mode == RotaryMode::kHalf, stream = job.config.stream_out;
  constexpr bool kPairs = std::is_same<TX, BF>::value;
  const int sections = job.sections == 0 ? 1 : job.sections;
  const TC* cache = static_cast<const TC*>(job.cache);
  int32_t lane_row[kMaxWidth / 2];
  for (int64_t k = 0; k < h; ++k) lane_row[k] = job.channel_row[k];
  HWY_ALIGN float c[kMaxWidth / 2], s[kMaxWidth / 2], cw[kMaxWidth], sw[kMaxWidth];
  const int64_t row_bytes = job.cache_step == 1 ? width * static_cast<int64_t>(sizeof(TC)) : 0;
  const int64_t rotated_bytes = width * static_cast<int64_t>(sizeof(TX));
  for (int64_t t = begin; t < end; ++t) {
    if (t + kCacheAhead < end) {
      for (int r = 0; r < sections; ++r) {
        const char* row = reinterpret_cast<const char*>(
            cache + cache_position(job, r, t + kCacheAhead) * job.cache_row_stride);
        for (int64_t b = 0; b < row_bytes; b += 64) PrefetchL2(row + b);
      }
    }
    const TC* rows[kMaxMropeSections];
    for (int r = 0; r < sections; ++r) rows[r] = cache + cache_position(job, r, t) * job.cache_row_stride;
    LoadHalves(job, lane_row, rows, c, s);
    if (neox && kPairs) {
      ToPairOrder(c, h);
      ToPairOrder(s, h);
    } else if (!neox && !kPairs) {
      Repeat(c, h, cw);
      Repeat(s, h, sw);
    }
    for (const CacheSide& side : job.sides) {
      if (side.heads == 0) continue;  // an empty key may have no data at all
      const TX* in = static_cast<const TX*>(side.in) + t * side.in_token_stride;
      TX* out = static_cast<TX*>(side.out) + t * side.out_token_stride;
      // The next token's row of this head, prefetched while this one is rotated (none after the range's last).
      const char* next = reinterpret_cast<const char*>(t + 1 < end ? in + side.in_token_stride : nullptr);
      for (int64_t head = 0; head < side.heads; ++head, in += job.head_size, out += job.head_size) {
        if (next != nullptr) {
          PrefetchBytes(next, rotated_bytes);
          next += job.head_size * static_cast<int64_t>(sizeof(TX));
        }
        if constexpr (kPairs) {
          neox ? NeoxPairRow<TC>(stream, in, out, c, s, h) : GptjPairRow<TC>(stream, in, out, c, s, width);
        } else {
          neox ? NeoxRow(stream, in, out, c, s, h) : GptjRow(stream, in, out, cw, sw, c, s, width);
        }
      }
    }
  }
  if (stream) hwy::FlushStream();
}

template <class TX>
CacheTokenKernel* PickFor(DType cs) {
  if (cs == DType::kF32) return &CacheTokensT<TX, float>;
  return &CacheTokensT<TX, TX>;  // validation: the cache is the activations' dtype or fp32
}

}  // namespace
#endif  // HWY_TARGET != HWY_SCALAR

CacheTokenKernel* PickCacheTokenKernel(DType x, DType cs) {
#if HWY_TARGET == HWY_SCALAR
  (void)x, (void)cs;
  return nullptr;
#else
  switch (x) {
    case DType::kF32: return PickFor<float>(cs);
    case DType::kF16: return PickFor<hwy::float16_t>(cs);
    case DType::kBF16: return PickFor<hwy::bfloat16_t>(cs);
    default: return nullptr;
  }
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace rope
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
namespace rope {

CacheTokenKernel* select_cache_token_kernel(Isa isa, DType x, DType cs) {
  return TXOPS_SELECT_KERNEL(isa, PickCacheTokenKernel)(x, cs);
}

}  // namespace rope
}  // namespace txops
#endif  // HWY_ONCE
