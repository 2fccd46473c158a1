// kernels.cpp — the RoPE row kernels, compiled once per ISA by Highway (AVX3, AVX2, SCALAR). A row is one
// vector of `width` channels; the op's plan (args.h) says which rows, with which cos/sin rows.
//
// Arithmetic (bit-exact across the vector bodies, the scalar tails and the strided path): every output is
//   y = fma(a, c_a, +-(b * s_?))
// where a is the element, b its partner in the rotation: the partner product is rounded once, the rest is
// one fused multiply-add, then one round-to-nearest-even to the output dtype. Reductions (gradCos/gradSin)
// are fma accumulations in fp32 in a fixed row order.
//
// Row kernels by mode (contiguous last dims; any other stride goes through the fp32 row buffers):
//   half / quarter   lane-aligned halves: no shuffles at all
//   interleave       partner = Shuffle2301 (swap adjacent lanes), signs by OddEven
//   interleave-half  forward: ConcatEven/ConcatOdd de-interleave; backward: StoreInterleaved2 re-interleave;
//                    in place, the row is first copied aside (outputs move across the row)
// Large out-of-place outputs use non-temporal stores (no write-allocate read), flushed at the end of a range.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rope/kernels.cpp"
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

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using txops::HWY_NAMESPACE::LoadF32;
using txops::HWY_NAMESPACE::LoadScalarF32;
using txops::HWY_NAMESPACE::StoreF32;
using txops::HWY_NAMESPACE::StoreScalarF32;
using txops::HWY_NAMESPACE::StreamF32;

// ------------------------------------------------------------------------------------------------
// fp32 rows: the formulas of shared/spec/rope.md, one element at a time (strided rows, SCALAR target).

// y[o..o+2h) from x: the half rule on the block of 2h channels starting at o.
HWY_INLINE void HalfBlockF32(bool bwd, const float* x, const float* c, const float* s, float* y, int64_t o,
                             int64_t h) {
  for (int64_t j = o; j < o + h; ++j) {
    if (bwd) {
      y[j] = std::fma(x[j], c[j], x[j + h] * s[j + h]);
      y[j + h] = std::fma(x[j + h], c[j + h], -(x[j] * s[j]));
    } else {
      y[j] = std::fma(x[j], c[j], -(x[j + h] * s[j]));
      y[j + h] = std::fma(x[j + h], c[j + h], x[j] * s[j + h]);
    }
  }
}

HWY_INLINE void RotateRowF32(RotaryMode mode, bool bwd, const float* x, const float* c, const float* s, float* y,
                             int64_t width) {
  const int64_t h = width / 2;
  switch (mode) {
    case RotaryMode::kHalf: HalfBlockF32(bwd, x, c, s, y, 0, h); break;
    case RotaryMode::kQuarter:
      HalfBlockF32(bwd, x, c, s, y, 0, width / 4);
      HalfBlockF32(bwd, x, c, s, y, h, width / 4);
      break;
    case RotaryMode::kInterleave:
      for (int64_t e = 0; e < width; e += 2) {
        if (bwd) {
          y[e] = std::fma(x[e], c[e], x[e + 1] * s[e + 1]);
          y[e + 1] = std::fma(x[e + 1], c[e + 1], -(x[e] * s[e]));
        } else {
          y[e] = std::fma(x[e], c[e], -(x[e + 1] * s[e]));
          y[e + 1] = std::fma(x[e + 1], c[e + 1], x[e] * s[e + 1]);
        }
      }
      break;
    case RotaryMode::kInterleaveHalf:
      for (int64_t k = 0; k < h; ++k) {
        if (bwd) {
          y[2 * k] = std::fma(x[k], c[k], x[h + k] * s[h + k]);
          y[2 * k + 1] = std::fma(x[h + k], c[h + k], -(x[k] * s[k]));
        } else {
          y[k] = std::fma(x[2 * k], c[k], -(x[2 * k + 1] * s[k]));
          y[h + k] = std::fma(x[2 * k + 1], c[h + k], x[2 * k] * s[h + k]);
        }
      }
      break;
  }
}

// rot(x) of the forward, in its input order (dsin = sum dy * rot(x)); grad modes: half, quarter, interleave.
HWY_INLINE void RotatedInputF32(RotaryMode mode, const float* x, float* r, int64_t width) {
  if (mode == RotaryMode::kInterleave) {
    for (int64_t e = 0; e < width; e += 2) {
      r[e] = -x[e + 1];
      r[e + 1] = x[e];
    }
    return;
  }
  const int64_t block = mode == RotaryMode::kQuarter ? width / 2 : width;
  for (int64_t o = 0; o < width; o += block) {
    const int64_t h = block / 2;
    for (int64_t j = o; j < o + h; ++j) {
      r[j] = -x[j + h];
      r[j + h] = x[j];
    }
  }
}

template <class T>
HWY_INLINE void LoadRowF32(const T* p, int64_t step, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = LoadScalarF32(p + i * step);
}
template <class T>
HWY_INLINE void StoreRowF32(const float* src, int64_t n, T* p, int64_t step) {
  for (int64_t i = 0; i < n; ++i) StoreScalarF32(src[i], p + i * step);
}

template <class TX, class TC>
void RotateRowStrided(const RotationConfig& cfg, const RowStream& st, const TX* in, TX* out, const TC* c,
                      const TC* s) {
  const int64_t n = cfg.width;
  float xb[kMaxWidth], cb[kMaxWidth], sb[kMaxWidth], yb[kMaxWidth];
  LoadRowF32(in, st.step[kIn], n, xb);
  LoadRowF32(c, st.step[kCos], n, cb);
  LoadRowF32(s, st.step[kSin], n, sb);
  RotateRowF32(cfg.mode, cfg.backward, xb, cb, sb, yb, n);
  StoreRowF32(yb, n, out, st.step[kOut]);
}

template <class TX, class TC>
void GradRowStrided(const RotationConfig& cfg, const GradSide& side, const TX* in, TX* out, const TX* x,
                    const TC* c, int64_t c_step, const TC* s, int64_t s_step, float* acc_c, float* acc_s) {
  const int64_t n = cfg.width;
  float db[kMaxWidth], xb[kMaxWidth], cb[kMaxWidth], sb[kMaxWidth], yb[kMaxWidth];
  LoadRowF32(in, side.step[0], n, db);
  LoadRowF32(x, side.step[2], n, xb);
  LoadRowF32(c, c_step, n, cb);
  LoadRowF32(s, s_step, n, sb);
  RotateRowF32(cfg.mode, /*bwd=*/true, db, cb, sb, yb, n);
  for (int64_t j = 0; j < n; ++j) acc_c[j] = std::fma(db[j], xb[j], acc_c[j]);
  float* rotated = cb;  // cos is no longer needed
  RotatedInputF32(cfg.mode, xb, rotated, n);
  for (int64_t j = 0; j < n; ++j) acc_s[j] = std::fma(db[j], rotated[j], acc_s[j]);
  StoreRowF32(yb, n, out, side.step[1]);
}

// Calls row(in, out, cos, sin) for rows [begin, end) of `st` in memory order; the innermost outer dim runs as
// a pointer-increment loop, so the per-row cost is a few adds.
constexpr int64_t kPrefetchRows = 8;

template <class TX, class TC, class RowFn>
HWY_INLINE void ForEachRow(const RowStream& st, int64_t width, int64_t begin, int64_t end, const RowFn& row) {
  const int64_t row_bytes = st.step[kIn] == 1 ? width * static_cast<int64_t>(sizeof(TX)) : 0;
  const int64_t e1 = st.extent[1], e2 = st.extent[2];
  int64_t i2 = begin % e2, i1 = (begin / e2) % e1, i0 = begin / e2 / e1;
  const int64_t(*sd)[4] = st.stride;
  const int64_t din = sd[2][kIn], dout = sd[2][kOut], dcos = sd[2][kCos], dsin = sd[2][kSin];
  while (begin < end) {
    const int64_t run = std::min(end - begin, e2 - i2);
    int64_t off[4];
    for (int t = 0; t < 4; ++t) off[t] = i0 * sd[0][t] + i1 * sd[1][t] + i2 * sd[2][t];
    const TX* in = static_cast<const TX*>(st.in) + off[kIn];
    TX* out = static_cast<TX*>(st.out) + off[kOut];
    const TC* c = static_cast<const TC*>(st.cos) + off[kCos];
    const TC* s = static_cast<const TC*>(st.sin) + off[kSin];
    for (int64_t r = 0; r < run; ++r, in += din, out += dout, c += dcos, s += dsin) {
      // Software prefetch of the row kPrefetchRows ahead (a hint: it never faults, even past the view's end):
      // partial-row slices leave gaps the hardware stream prefetcher does not follow.
      const char* ahead = reinterpret_cast<const char*>(in + kPrefetchRows * din);
      for (int64_t b = 0; b < row_bytes; b += 64) hwy::Prefetch(ahead + b);
      row(in, out, c, s);
    }
    begin += run;
    i2 = 0;
    if (++i1 == e1) {
      i1 = 0;
      ++i0;
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Contiguous rows with SIMD (not on the SCALAR target, where the fp32 row path above is the kernel).
#if HWY_TARGET != HWY_SCALAR
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

template <class TX>
HWY_INLINE void Put(DF df, VF v, TX* p, bool stream) {
  if (stream && (reinterpret_cast<uintptr_t>(p) % (hn::Lanes(df) * sizeof(TX))) == 0) {
    StreamF32(df, v, p);
  } else {
    StoreF32(df, v, p);
  }
}

// ---- bf16 rounding with AVX512_BF16 (AVX-512 target, CPUs that have it) ----
// vcvtne2ps2bf16 / vcvtneps2bf16 round to nearest even and quiet NaNs exactly like the integer rounding
// (core/dtype.h f32_to_bf16), except that they treat fp32 denormal inputs as zero. A vector holding a denormal
// (one FP-class test per input vector) therefore takes the integer rounding instead, so the bits are those of
// f32_to_bf16 for every input: dev/rope/bf16cvt_check.cpp checks the helpers below on all 2^32 patterns.
// Normal fp32 inputs never round to a bf16 denormal (same exponent range), so output flushing never applies.
// Emitted with inline asm: the AVX3 target is not compiled with -mavx512bf16; used only where CPUID has it.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define TXOPS_ROPE_BF16CVT 1
// __builtin_cpu_init first: this initializer may run before libgcc's CPU-detection constructor (shared libraries).
static const bool kBf16Cvt = (__builtin_cpu_init(), __builtin_cpu_supports("avx512bf16"));

HWY_INLINE bool AnyDenormal(VF a) { return _mm512_fpclass_ps_mask(a.raw, 0x20) != 0; }
HWY_INLINE bool AnyDenormal(VF a, VF b) {
  return (_mm512_fpclass_ps_mask(a.raw, 0x20) | _mm512_fpclass_ps_mask(b.raw, 0x20)) != 0;
}
// u16 lanes 0..15 = bf16(lo), 16..31 = bf16(hi)
HWY_INLINE __m512i Cvt2BF16(VF hi, VF lo) {
  __m512i r;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi.raw), "v"(lo.raw));
  return r;
}
HWY_INLINE __m256i CvtBF16(VF v) {
  __m256i r;
  asm("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v.raw));
  return r;
}
#else
#define TXOPS_ROPE_BF16CVT 0
#endif

HWY_INLINE void Put(DF df, VF v, hwy::bfloat16_t* p, bool stream) {
#if TXOPS_ROPE_BF16CVT
  if (kBf16Cvt && !AnyDenormal(v)) {
    const __m256i r = CvtBF16(v);
    if (stream && (reinterpret_cast<uintptr_t>(p) % 32) == 0) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), r);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
    }
    return;
  }
#endif
  if (stream && (reinterpret_cast<uintptr_t>(p) % (hn::Lanes(df) * sizeof(hwy::bfloat16_t))) == 0) {
    StreamF32(df, v, p);
  } else {
    StoreF32(df, v, p);
  }
}

template <bool bwd, class TX, class TC>
HWY_INLINE void HalfBlockRow(bool stream, const TX* in, TX* out, const TC* c, const TC* s, int64_t h,
                             int64_t j = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; j + lanes <= h; j += lanes) {
    const VF x1 = LoadF32(df, in + j), x2 = LoadF32(df, in + h + j);
    const VF c1 = LoadF32(df, c + j), c2 = LoadF32(df, c + h + j);
    const VF s1 = LoadF32(df, s + j), s2 = LoadF32(df, s + h + j);
    VF y1, y2;
    if (bwd) {
      y1 = hn::MulAdd(x1, c1, hn::Mul(x2, s2));
      y2 = hn::MulAdd(x2, c2, hn::Neg(hn::Mul(x1, s1)));
    } else {
      y1 = hn::MulAdd(x1, c1, hn::Neg(hn::Mul(x2, s1)));
      y2 = hn::MulAdd(x2, c2, hn::Mul(x1, s2));
    }
    Put(df, y1, out + j, stream);
    Put(df, y2, out + h + j, stream);
  }
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
    if (bwd) {
      const VF d1 = LoadF32(df, in + k), d2 = LoadF32(df, in + h + k);
      const VF even = hn::MulAdd(d1, c1, hn::Mul(d2, s2));
      const VF odd = hn::MulAdd(d2, c2, hn::Neg(hn::Mul(d1, s1)));
      HWY_ALIGN float pairs[2 * hn::MaxLanes(df)];
      hn::StoreInterleaved2(even, odd, df, pairs);
      Put(df, hn::Load(df, pairs), out + 2 * k, stream);
      Put(df, hn::Load(df, pairs + lanes), out + 2 * k + lanes, stream);
    } else {
      const VF lo = LoadF32(df, in + 2 * k), hi = LoadF32(df, in + 2 * k + lanes);
      const VF xe = hn::ConcatEven(df, hi, lo), xo = hn::ConcatOdd(df, hi, lo);
      Put(df, hn::MulAdd(xe, c1, hn::Neg(hn::Mul(xo, s1))), out + k, stream);
      Put(df, hn::MulAdd(xo, c2, hn::Mul(xe, s2)), out + h + k, stream);
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

// ---- bf16 activations and bf16 cos/sin: "pair" vectors ----
// 2N bf16 elements load as N u32 lanes: the even elements are the low halves, the odd ones the high halves, so
// widening is one shift or one mask, and pairs (2k, 2k+1) arrive split with no shuffle at all. Stores round
// both parities to nearest even (core/dtype.h rule, NaN quieted) and merge them back into one full vector.
// Used by every mode; element formulas are unchanged, so results are bit-identical to the generic path.
using BF = hwy::bfloat16_t;
using DU = hn::RebindToUnsigned<DF>;
using VU = hn::Vec<DU>;

HWY_INLINE void LoadPairs(const BF* p, VF* even, VF* odd) {
  const DF df;
  const DU du;
  const VU bits = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
  *even = hn::BitCast(df, hn::ShiftLeft<16>(bits));
  *odd = hn::BitCast(df, hn::And(bits, hn::Set(du, 0xFFFF0000u)));
}

// The bf16 of `v` (round to nearest even, NaN quieted) in the high 16 bits of each u32 lane.
HWY_INLINE VU RoundToBF16High(VF v) {
  const DU du;
  const VU bits = hn::BitCast(du, v);
  const VU lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const VU rounded = hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), lsb));
  const VU quiet = hn::Or(bits, hn::Set(du, 0x00400000u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
}

HWY_INLINE void StorePairs(VF even, VF odd, BF* p, bool stream) {
  const DU du;
  VU merged;
#if TXOPS_ROPE_BF16CVT
  if (kBf16Cvt && !AnyDenormal(even, odd)) {
    // [bf16(even) x16, bf16(odd) x16] -> lane j = bf16(even_j) | bf16(odd_j) << 16
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    merged = VU{_mm512_permutexvar_epi16(idx, Cvt2BF16(odd, even))};
  } else
#endif
  {
    merged = hn::Or(hn::ShiftRight<16>(RoundToBF16High(even)), hn::And(RoundToBF16High(odd), hn::Set(du, 0xFFFF0000u)));
  }
  uint32_t* q = reinterpret_cast<uint32_t*>(p);
  if (stream && (reinterpret_cast<uintptr_t>(q) % (hn::Lanes(du) * 4)) == 0) {
    hn::Stream(merged, du, q);
  } else {
    hn::StoreU(merged, du, q);
  }
}

// half block: channel j pairs with j + h; even and odd channels are independent rotations.
template <bool bwd>
HWY_INLINE void HalfBlockRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t h) {
  const int64_t block = 2 * static_cast<int64_t>(hn::Lanes(DF()));
  int64_t j = 0;
  for (; j + block <= h; j += block) {
    VF x1[2], x2[2], c1[2], c2[2], s1[2], s2[2], y1[2], y2[2];
    LoadPairs(in + j, &x1[0], &x1[1]);
    LoadPairs(in + h + j, &x2[0], &x2[1]);
    LoadPairs(c + j, &c1[0], &c1[1]);
    LoadPairs(c + h + j, &c2[0], &c2[1]);
    LoadPairs(s + j, &s1[0], &s1[1]);
    LoadPairs(s + h + j, &s2[0], &s2[1]);
    for (int p = 0; p < 2; ++p) {
      if (bwd) {
        y1[p] = hn::MulAdd(x1[p], c1[p], hn::Mul(x2[p], s2[p]));
        y2[p] = hn::MulAdd(x2[p], c2[p], hn::Neg(hn::Mul(x1[p], s1[p])));
      } else {
        y1[p] = hn::MulAdd(x1[p], c1[p], hn::Neg(hn::Mul(x2[p], s1[p])));
        y2[p] = hn::MulAdd(x2[p], c2[p], hn::Mul(x1[p], s2[p]));
      }
    }
    StorePairs(y1[0], y1[1], out + j, stream);
    StorePairs(y2[0], y2[1], out + h + j, stream);
  }
  HalfBlockRow<bwd, BF, BF>(stream, in, out, c, s, h, j);
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
      StorePairs(hn::MulAdd(xe, ce, hn::Mul(xo, so)), hn::MulAdd(xo, co, hn::Neg(hn::Mul(xe, se))), out + i, stream);
    } else {
      StorePairs(hn::MulAdd(xe, ce, hn::Neg(hn::Mul(xo, se))), hn::MulAdd(xo, co, hn::Mul(xe, so)), out + i, stream);
    }
  }
  InterleaveRow<bwd, BF, BF>(stream, in, out, c, s, width, i);
}

template <bool bwd>
HWY_INLINE void InterleaveHalfRow(bool stream, const BF* in, BF* out, const BF* c, const BF* s, int64_t width) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t h = width / 2;
  int64_t k = 0;
  for (; k + lanes <= h; k += lanes) {
    const VF c1 = LoadF32(df, c + k), c2 = LoadF32(df, c + h + k);
    const VF s1 = LoadF32(df, s + k), s2 = LoadF32(df, s + h + k);
    if (bwd) {
      const VF d1 = LoadF32(df, in + k), d2 = LoadF32(df, in + h + k);
      StorePairs(hn::MulAdd(d1, c1, hn::Mul(d2, s2)), hn::MulAdd(d2, c2, hn::Neg(hn::Mul(d1, s1))), out + 2 * k,
                 stream);
    } else {
      VF xe, xo;
      LoadPairs(in + 2 * k, &xe, &xo);
      Put(df, hn::MulAdd(xe, c1, hn::Neg(hn::Mul(xo, s1))), out + k, stream);
      Put(df, hn::MulAdd(xo, c2, hn::Mul(xe, s2)), out + h + k, stream);
    }
  }
  InterleaveHalfRow<bwd, BF, BF>(stream, in, out, c, s, width, k);
}

// Row loops specialised by mode and direction (the row body inlines into a pointer-increment loop).
template <bool bwd, class TX, class TC>
void RotateRowsSimd(const RotationConfig& cfg, const RowStream& st, int64_t begin, int64_t end) {
  const int64_t width = cfg.width, h = width / 2;
  const bool stream = cfg.stream_out;
  switch (cfg.mode) {
    case RotaryMode::kHalf:
      ForEachRow<TX, TC>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const TC* c, const TC* s) {
        HalfBlockRow<bwd>(stream, in, out, c, s, h);
      });
      break;
    case RotaryMode::kQuarter:
      ForEachRow<TX, TC>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const TC* c, const TC* s) {
        HalfBlockRow<bwd>(stream, in, out, c, s, width / 4);
        HalfBlockRow<bwd>(stream, in + h, out + h, c + h, s + h, width / 4);
      });
      break;
    case RotaryMode::kInterleave:
      ForEachRow<TX, TC>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const TC* c, const TC* s) {
        InterleaveRow<bwd>(stream, in, out, c, s, width);
      });
      break;
    case RotaryMode::kInterleaveHalf: {
      TX saved[kMaxWidth];
      ForEachRow<TX, TC>(st, cfg.width, begin, end, [&](const TX* in, TX* out, const TC* c, const TC* s) {
        if (in == out) {  // outputs move across the row: read from a copy
          std::memcpy(saved, in, static_cast<size_t>(width) * sizeof(TX));
          in = saved;
        }
        InterleaveHalfRow<bwd>(stream, in, out, c, s, width);
      });
      break;
    }
  }
}

// Backward row with the cos/sin gradient accumulation (half / quarter block of 2h channels at o).
template <class TX, class TC>
HWY_INLINE void GradHalfBlockRow(bool stream, const TX* in, TX* out, const TX* x, const TC* c, const TC* s,
                                 float* acc_c, float* acc_s, int64_t h, int64_t j = 0) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  for (; j + lanes <= h; j += lanes) {
    const VF d1 = LoadF32(df, in + j), d2 = LoadF32(df, in + h + j);
    const VF x1 = LoadF32(df, x + j), x2 = LoadF32(df, x + h + j);
    const VF c1 = LoadF32(df, c + j), c2 = LoadF32(df, c + h + j);
    const VF s1 = LoadF32(df, s + j), s2 = LoadF32(df, s + h + j);
    hn::StoreU(hn::MulAdd(d1, x1, hn::LoadU(df, acc_c + j)), df, acc_c + j);
    hn::StoreU(hn::MulAdd(d2, x2, hn::LoadU(df, acc_c + h + j)), df, acc_c + h + j);
    hn::StoreU(hn::MulAdd(d1, hn::Neg(x2), hn::LoadU(df, acc_s + j)), df, acc_s + j);
    hn::StoreU(hn::MulAdd(d2, x1, hn::LoadU(df, acc_s + h + j)), df, acc_s + h + j);
    Put(df, hn::MulAdd(d1, c1, hn::Mul(d2, s2)), out + j, stream);
    Put(df, hn::MulAdd(d2, c2, hn::Neg(hn::Mul(d1, s1))), out + h + j, stream);
  }
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
    const VF d = LoadF32(df, in + i), xv = LoadF32(df, x + i);
    const VF cv = LoadF32(df, c + i), sv = LoadF32(df, s + i);
    const VF swapped = hn::Shuffle2301(xv);
    const VF rot = hn::OddEven(swapped, hn::Neg(swapped));
    hn::StoreU(hn::MulAdd(d, xv, hn::LoadU(df, acc_c + i)), df, acc_c + i);
    hn::StoreU(hn::MulAdd(d, rot, hn::LoadU(df, acc_s + i)), df, acc_s + i);
    const VF p = hn::Shuffle2301(hn::Mul(d, sv));
    Put(df, hn::MulAdd(d, cv, hn::OddEven(hn::Neg(p), p)), out + i, stream);
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

// acc[j..j+N) += even_grad * even_factor, acc[j+N..j+2N) += odd_grad * odd_factor (split layout).
HWY_INLINE void AccumulateSplit(float* acc, int64_t j, VF even_factor, VF odd_factor, VF even_grad, VF odd_grad) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  hn::StoreU(hn::MulAdd(even_grad, even_factor, hn::LoadU(df, acc + j)), df, acc + j);
  hn::StoreU(hn::MulAdd(odd_grad, odd_factor, hn::LoadU(df, acc + j + lanes)), df, acc + j + lanes);
}

HWY_INLINE void GradHalfBlockRow(bool stream, const BF* in, BF* out, const BF* x, const BF* c, const BF* s,
                                 float* acc_c, float* acc_s, int64_t h) {
  const int64_t block = PairBlock();
  int64_t j = 0;
  for (; j + block <= h; j += block) {
    VF d1[2], d2[2], x1[2], x2[2], c1[2], c2[2], s1[2], s2[2], y1[2], y2[2];
    LoadPairs(in + j, &d1[0], &d1[1]);
    LoadPairs(in + h + j, &d2[0], &d2[1]);
    LoadPairs(x + j, &x1[0], &x1[1]);
    LoadPairs(x + h + j, &x2[0], &x2[1]);
    LoadPairs(c + j, &c1[0], &c1[1]);
    LoadPairs(c + h + j, &c2[0], &c2[1]);
    LoadPairs(s + j, &s1[0], &s1[1]);
    LoadPairs(s + h + j, &s2[0], &s2[1]);
    AccumulateSplit(acc_c, j, x1[0], x1[1], d1[0], d1[1]);
    AccumulateSplit(acc_c, h + j, x2[0], x2[1], d2[0], d2[1]);
    AccumulateSplit(acc_s, j, hn::Neg(x2[0]), hn::Neg(x2[1]), d1[0], d1[1]);
    AccumulateSplit(acc_s, h + j, x1[0], x1[1], d2[0], d2[1]);
    for (int p = 0; p < 2; ++p) {
      y1[p] = hn::MulAdd(d1[p], c1[p], hn::Mul(d2[p], s2[p]));
      y2[p] = hn::MulAdd(d2[p], c2[p], hn::Neg(hn::Mul(d1[p], s1[p])));
    }
    StorePairs(y1[0], y1[1], out + j, stream);
    StorePairs(y2[0], y2[1], out + h + j, stream);
  }
  GradHalfBlockRow<BF, BF>(stream, in, out, x, c, s, acc_c, acc_s, h, j);
}

HWY_INLINE void GradInterleaveRow(bool stream, const BF* in, BF* out, const BF* x, const BF* c, const BF* s,
                                  float* acc_c, float* acc_s, int64_t width) {
  const int64_t block = PairBlock();
  int64_t i = 0;
  for (; i + block <= width; i += block) {
    VF de, dodd, xe, xo, ce, co, se, so;
    LoadPairs(in + i, &de, &dodd);
    LoadPairs(x + i, &xe, &xo);
    LoadPairs(c + i, &ce, &co);
    LoadPairs(s + i, &se, &so);
    AccumulateSplit(acc_c, i, xe, xo, de, dodd);
    AccumulateSplit(acc_s, i, hn::Neg(xo), xe, de, dodd);
    StorePairs(hn::MulAdd(de, ce, hn::Mul(dodd, so)), hn::MulAdd(dodd, co, hn::Neg(hn::Mul(de, se))), out + i,
               stream);
  }
  GradInterleaveRow<BF, BF>(stream, in, out, x, c, s, acc_c, acc_s, width, i);
}

// Back to channel order: every pair block the bf16 grad rows used, for this mode and width.
HWY_INLINE void UnsplitRange(float* acc, int64_t begin, int64_t count) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  for (int64_t j = begin; j + block <= begin + count; j += block) {
    const VF even = hn::LoadU(df, acc + j), odd = hn::LoadU(df, acc + j + lanes);
    hn::StoreInterleaved2(even, odd, df, acc + j);
  }
}
HWY_INLINE void UnsplitBlocks(RotaryMode mode, int64_t width, float* acc) {
  if (mode == RotaryMode::kInterleave) {
    UnsplitRange(acc, 0, width);
    return;
  }
  const int64_t half_block = mode == RotaryMode::kQuarter ? width / 2 : width;  // one half-rule block
  for (int64_t o = 0; o < width; o += half_block) {
    const int64_t h = half_block / 2;
    UnsplitRange(acc, o, h);
    UnsplitRange(acc, o + h, h);
  }
}

// Two member rows of a group at once in the half/quarter grad: the cos/sin gradient accumulators are loaded and
// stored once for both rows, and per element still take row r0's fma, then row r1's (the order of two
// sequential one-row calls: bit-identical). Tails run the one-row code per row, in the same row order.
template <class TX, class TC>
HWY_INLINE void GradHalfBlockRow2(bool stream, const TX* const* in, TX* const* out, const TX* const* x, const TC* c,
                                  const TC* s, float* acc_c, float* acc_s, int64_t h) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  for (; j + lanes <= h; j += lanes) {
    const VF c1 = LoadF32(df, c + j), c2 = LoadF32(df, c + h + j);
    const VF s1 = LoadF32(df, s + j), s2 = LoadF32(df, s + h + j);
    VF ac1 = hn::LoadU(df, acc_c + j), ac2 = hn::LoadU(df, acc_c + h + j);
    VF as1 = hn::LoadU(df, acc_s + j), as2 = hn::LoadU(df, acc_s + h + j);
    for (int r = 0; r < 2; ++r) {
      const VF d1 = LoadF32(df, in[r] + j), d2 = LoadF32(df, in[r] + h + j);
      const VF x1 = LoadF32(df, x[r] + j), x2 = LoadF32(df, x[r] + h + j);
      ac1 = hn::MulAdd(d1, x1, ac1);
      ac2 = hn::MulAdd(d2, x2, ac2);
      as1 = hn::MulAdd(d1, hn::Neg(x2), as1);
      as2 = hn::MulAdd(d2, x1, as2);
      Put(df, hn::MulAdd(d1, c1, hn::Mul(d2, s2)), out[r] + j, stream);
      Put(df, hn::MulAdd(d2, c2, hn::Neg(hn::Mul(d1, s1))), out[r] + h + j, stream);
    }
    hn::StoreU(ac1, df, acc_c + j);
    hn::StoreU(ac2, df, acc_c + h + j);
    hn::StoreU(as1, df, acc_s + j);
    hn::StoreU(as2, df, acc_s + h + j);
  }
  for (int r = 0; r < 2; ++r) GradHalfBlockRow(stream, in[r], out[r], x[r], c, s, acc_c, acc_s, h, j);
}

HWY_INLINE void GradHalfBlockRow2(bool stream, const BF* const* in, BF* const* out, const BF* const* x, const BF* c,
                                  const BF* s, float* acc_c, float* acc_s, int64_t h) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df)), block = PairBlock();
  int64_t j = 0;
  for (; j + block <= h; j += block) {
    VF c1[2], c2[2], s1[2], s2[2], ac1[2], ac2[2], as1[2], as2[2];
    LoadPairs(c + j, &c1[0], &c1[1]);
    LoadPairs(c + h + j, &c2[0], &c2[1]);
    LoadPairs(s + j, &s1[0], &s1[1]);
    LoadPairs(s + h + j, &s2[0], &s2[1]);
    for (int p = 0; p < 2; ++p) {  // split layout: even channels at j, odd at j + lanes
      ac1[p] = hn::LoadU(df, acc_c + j + p * lanes);
      ac2[p] = hn::LoadU(df, acc_c + h + j + p * lanes);
      as1[p] = hn::LoadU(df, acc_s + j + p * lanes);
      as2[p] = hn::LoadU(df, acc_s + h + j + p * lanes);
    }
    for (int r = 0; r < 2; ++r) {
      VF d1[2], d2[2], x1[2], x2[2], y1[2], y2[2];
      LoadPairs(in[r] + j, &d1[0], &d1[1]);
      LoadPairs(in[r] + h + j, &d2[0], &d2[1]);
      LoadPairs(x[r] + j, &x1[0], &x1[1]);
      LoadPairs(x[r] + h + j, &x2[0], &x2[1]);
      for (int p = 0; p < 2; ++p) {
        ac1[p] = hn::MulAdd(d1[p], x1[p], ac1[p]);
        ac2[p] = hn::MulAdd(d2[p], x2[p], ac2[p]);
        as1[p] = hn::MulAdd(d1[p], hn::Neg(x2[p]), as1[p]);
        as2[p] = hn::MulAdd(d2[p], x1[p], as2[p]);
        y1[p] = hn::MulAdd(d1[p], c1[p], hn::Mul(d2[p], s2[p]));
        y2[p] = hn::MulAdd(d2[p], c2[p], hn::Neg(hn::Mul(d1[p], s1[p])));
      }
      StorePairs(y1[0], y1[1], out[r] + j, stream);
      StorePairs(y2[0], y2[1], out[r] + h + j, stream);
    }
    for (int p = 0; p < 2; ++p) {
      hn::StoreU(ac1[p], df, acc_c + j + p * lanes);
      hn::StoreU(ac2[p], df, acc_c + h + j + p * lanes);
      hn::StoreU(as1[p], df, acc_s + j + p * lanes);
      hn::StoreU(as2[p], df, acc_s + h + j + p * lanes);
    }
  }
  for (int r = 0; r < 2; ++r) GradHalfBlockRow<BF, BF>(stream, in[r], out[r], x[r], c, s, acc_c, acc_s, h, j);
}

// Two rows (half / quarter modes only; the caller checks).
template <class TX, class TC>
HWY_INLINE void GradRowContiguous2(const RotationConfig& cfg, const TX* const* in, TX* const* out,
                                   const TX* const* x, const TC* c, const TC* s, float* acc_c, float* acc_s) {
  const int64_t width = cfg.width;
  const bool stream = cfg.stream_out;
  if (cfg.mode == RotaryMode::kQuarter) {
    const int64_t h = width / 2;
    GradHalfBlockRow2(stream, in, out, x, c, s, acc_c, acc_s, width / 4);
    const TX* in_h[2] = {in[0] + h, in[1] + h};
    TX* out_h[2] = {out[0] + h, out[1] + h};
    const TX* x_h[2] = {x[0] + h, x[1] + h};
    GradHalfBlockRow2(stream, in_h, out_h, x_h, c + h, s + h, acc_c + h, acc_s + h, width / 4);
  } else {
    GradHalfBlockRow2(stream, in, out, x, c, s, acc_c, acc_s, width / 2);
  }
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

template <class TX, class TC>
void GradGroups(const GradJob& job, int64_t begin, int64_t end) {
  if (begin >= end) return;
  const RotationConfig& cfg = job.config;
  const int64_t width = cfg.width;
  HWY_ALIGN float acc_c[2][kMaxWidth];
  HWY_ALIGN float acc_s[2][kMaxWidth];
  OuterCursor<10> group(job.group_extent, job.group_stride, begin);
  for (int64_t g = begin; g < end; ++g, group.next()) {
    const TC* c = static_cast<const TC*>(job.cos) + group.offset[kGCos];
    const TC* s = static_cast<const TC*>(job.sin) + group.offset[kGSin];
    for (int side_index = 0; side_index < 2; ++side_index) {
      const GradSide& side = job.sides[side_index];
      float* ac = acc_c[side_index];
      float* as = acc_s[side_index];
      std::fill(ac, ac + width, 0.0f);
      std::fill(as, as + width, 0.0f);
      const int64_t members = side.member_extent[0] * side.member_extent[1] * side.member_extent[2];
      if (members == 0) continue;
      const TX* in = static_cast<const TX*>(side.in) + group.offset[kGSide0 + 3 * side_index];
      TX* out = static_cast<TX*>(side.out) + group.offset[kGSide0 + 3 * side_index + 1];
      const TX* x = static_cast<const TX*>(side.x) + group.offset[kGSide0 + 3 * side_index + 2];
      const int64_t(*ms)[3] = side.member_stride;
      for (int64_t i0 = 0; i0 < side.member_extent[0]; ++i0) {
        for (int64_t i1 = 0; i1 < side.member_extent[1]; ++i1) {
          const int64_t base[3] = {i0 * ms[0][0] + i1 * ms[1][0], i0 * ms[0][1] + i1 * ms[1][1],
                                   i0 * ms[0][2] + i1 * ms[1][2]};
          int64_t i2 = 0;
#if HWY_TARGET != HWY_SCALAR
          if (job.simd_rows && (cfg.mode == RotaryMode::kHalf || cfg.mode == RotaryMode::kQuarter)) {
            for (; i2 + 2 <= side.member_extent[2]; i2 += 2) {  // two rows per pass, same accumulation order
              const TX* row_in[2] = {in + base[0] + i2 * ms[2][0], in + base[0] + (i2 + 1) * ms[2][0]};
              TX* row_out[2] = {out + base[1] + i2 * ms[2][1], out + base[1] + (i2 + 1) * ms[2][1]};
              const TX* row_x[2] = {x + base[2] + i2 * ms[2][2], x + base[2] + (i2 + 1) * ms[2][2]};
              GradRowContiguous2(cfg, row_in, row_out, row_x, c, s, ac, as);
            }
          }
#endif
          for (; i2 < side.member_extent[2]; ++i2) {
            const TX* row_in = in + base[0] + i2 * ms[2][0];
            TX* row_out = out + base[1] + i2 * ms[2][1];
            const TX* row_x = x + base[2] + i2 * ms[2][2];
#if HWY_TARGET != HWY_SCALAR
            if (job.simd_rows) {
              GradRowContiguous(cfg, row_in, row_out, row_x, c, s, ac, as);
              continue;
            }
#endif
            GradRowStrided(cfg, side, row_in, row_out, row_x, c, job.cs_step[0], s, job.cs_step[1], ac, as);
          }
        }
      }
#if HWY_TARGET != HWY_SCALAR
      if (job.simd_rows && std::is_same<TX, BF>::value && std::is_same<TC, BF>::value) {
        UnsplitBlocks(cfg.mode, width, ac);  // the bf16 pair rows accumulate in split layout
        UnsplitBlocks(cfg.mode, width, as);
      }
#endif
    }
    TC* dc = static_cast<TC*>(job.dcos) + group.offset[kGDcos];
    TC* ds = static_cast<TC*>(job.dsin) + group.offset[kGDsin];
    int64_t j = 0;
#if HWY_TARGET != HWY_SCALAR
    if (job.cs_step[2] == 1 && job.cs_step[3] == 1) {
      const DF df;
      for (; j + static_cast<int64_t>(hn::Lanes(df)) <= width; j += hn::Lanes(df)) {
        StoreF32(df, hn::Add(hn::Load(df, acc_c[0] + j), hn::Load(df, acc_c[1] + j)), dc + j);
        StoreF32(df, hn::Add(hn::Load(df, acc_s[0] + j), hn::Load(df, acc_s[1] + j)), ds + j);
      }
    }
#endif
    for (; j < width; ++j) {
      StoreScalarF32(acc_c[0][j] + acc_c[1][j], dc + j * job.cs_step[2]);
      StoreScalarF32(acc_s[0][j] + acc_s[1][j], ds + j * job.cs_step[3]);
    }
  }
  if (cfg.stream_out) hwy::FlushStream();
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
template <class TX>
GradKernel* PickGradKernelFor(DType cs) {
  switch (cs) {
    case DType::kF32: return &GradGroups<TX, float>;
    case DType::kF16: return &GradGroups<TX, hwy::float16_t>;
    case DType::kBF16: return &GradGroups<TX, hwy::bfloat16_t>;
    default: return nullptr;
  }
}
GradKernel* PickGradKernel(DType x, DType cs) {
  switch (x) {
    case DType::kF32: return PickGradKernelFor<float>(cs);
    case DType::kF16: return PickGradKernelFor<hwy::float16_t>(cs);
    case DType::kBF16: return PickGradKernelFor<hwy::bfloat16_t>(cs);
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

GradKernel* select_grad_kernel(Isa isa, const RotationConfig& config, Isa* chosen) {
  *chosen = selected_isa(isa, TXOPS_AVX3_FN(PickGradKernel), TXOPS_AVX2_FN(PickGradKernel));
  return TXOPS_SELECT_KERNEL(isa, PickGradKernel)(config.x_dtype, config.cs_dtype);
}

}  // namespace rope
}  // namespace txops
#endif  // HWY_ONCE
