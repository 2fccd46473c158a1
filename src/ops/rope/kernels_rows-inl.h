// kernels_rows-inl.h — per-target (Highway) pieces shared by the RoPE kernels (kernels_rotate.cpp,
// kernels_grad.cpp): the fp32 one-element-at-a-time rows (strided rows, SCALAR target), the row iteration, and
// the SIMD stores (non-temporal when asked, bf16 rounding with AVX512_BF16 where the CPU has it, bf16 "pair"
// vectors). The arithmetic rules are in kernels_rotate.cpp's header.
//
// Include after <hwy/highway.h> inside a foreach_target translation unit; per-target include guard below.
#if defined(TXOPS_OPS_ROPE_KERNELS_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_ROPE_KERNELS_ROWS_INL_H_
#undef TXOPS_OPS_ROPE_KERNELS_ROWS_INL_H_
#else
#define TXOPS_OPS_ROPE_KERNELS_ROWS_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/isa_dispatch.h"
#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "ops/rope/args.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using txops::HWY_NAMESPACE::LoadF32;
using txops::HWY_NAMESPACE::LoadRowF32;
using txops::HWY_NAMESPACE::LoadScalarF32;
using txops::HWY_NAMESPACE::StoreF32;
using txops::HWY_NAMESPACE::StoreRowF32;
using txops::HWY_NAMESPACE::StoreScalarF32;
using txops::HWY_NAMESPACE::StreamF32;
#if TXOPS_HAVE_BF16_BLOCKS
using txops::HWY_NAMESPACE::LoadBF16Blocks;
using txops::HWY_NAMESPACE::LoadBF16PairsInBlocks;
using txops::HWY_NAMESPACE::PackBF16BlocksOfBF16Operands;
#endif

// ------------------------------------------------------------------------------------------------
// fp32 rows: the formulas of docs/rope.md, one element at a time (strided rows, SCALAR target).

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

// The forward's two factors in its output order, for dcos = sum dy * p and dsin = sum dy * r: p = x and
// r = rot(x) (half, quarter, interleave), or p = cat(xe, xo) and r = cat(-xo, xe) for interleave-half.
HWY_INLINE void ForwardFactorsF32(RotaryMode mode, const float* x, float* p, float* r, int64_t width) {
  if (mode == RotaryMode::kInterleaveHalf) {
    const int64_t h = width / 2;
    for (int64_t k = 0; k < h; ++k) {
      p[k] = x[2 * k];
      p[h + k] = x[2 * k + 1];
      r[k] = -x[2 * k + 1];
      r[h + k] = x[2 * k];
    }
    return;
  }
  for (int64_t j = 0; j < width; ++j) p[j] = x[j];
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

template <class TX, class TC>
void RotateRowStrided(const RotationConfig& cfg, const RowStream& st, const TX* in, TX* out, const TC* c,
                      const TC* s) {
  const int64_t n = cfg.width;
  float xb[kMaxWidth], cb[kMaxWidth], sb[kMaxWidth], yb[kMaxWidth];
  LoadRowF32(in, st.step[kIn], n, n, xb);
  LoadRowF32(c, st.step[kCos], n, n, cb);
  LoadRowF32(s, st.step[kSin], n, n, sb);
  RotateRowF32(cfg.mode, cfg.backward, xb, cb, sb, yb, n);
  StoreRowF32(yb, n, out, st.step[kOut]);
}

template <class TX, class TC>
void GradRowStrided(const RotationConfig& cfg, const GradSide& side, const TX* in, TX* out, const TX* x,
                    const TC* c, int64_t c_step, const TC* s, int64_t s_step, float* acc_c, float* acc_s) {
  const int64_t n = cfg.width;
  float db[kMaxWidth], xb[kMaxWidth], cb[kMaxWidth], sb[kMaxWidth], yb[kMaxWidth];
  std::fill(yb, yb + n, 0.0f);  // RotateRowF32 writes all n; GCC's flow analysis cannot see it through the mode switch
  LoadRowF32(in, side.step[0], n, n, db);
  LoadRowF32(x, side.step[2], n, n, xb);
  LoadRowF32(c, c_step, n, n, cb);
  LoadRowF32(s, s_step, n, n, sb);
  RotateRowF32(cfg.mode, /*bwd=*/true, db, cb, sb, yb, n);
  float* plain = cb;    // cos and sin are no longer needed
  float* rotated = sb;
  ForwardFactorsF32(cfg.mode, xb, plain, rotated, n);
  for (int64_t j = 0; j < n; ++j) acc_c[j] = std::fma(db[j], plain[j], acc_c[j]);
  for (int64_t j = 0; j < n; ++j) acc_s[j] = std::fma(db[j], rotated[j], acc_s[j]);
  StoreRowF32(yb, n, out, side.step[1]);
}

// Calls row(in, out, cos, sin) for rows [begin, end) of `st` in memory order; the innermost outer dim runs as
// a pointer-increment loop, so the per-row cost is a few adds. kWidenCosSin (contiguous 16-bit cos / sin rows): where
// a run's rows share their cos / sin rows (stride 0: the heads of one token) the row function gets fp32 copies made
// once per run, else the rows as they are (widening each row's own copy first was slower). Widening is exact, so
// the bits are the same; it took two of the four conversions per pair of fp16 output vectors off the head loop
// (README, session 23).
constexpr int64_t kPrefetchRows = 8;
constexpr int64_t kHeadGroup = 4;
// How many rows ahead ForEachRow prefetches: kPrefetchRows, or as many as make kPrefetchAheadBytes of the rows' own
// bytes where rows are narrower (a partial op's slice of 2 lines per row: its rows go by faster, and the hardware
// prefetchers leave them alone). Measured with `txops bench --cold` on the bf16 / fp16 slices of DeepSeek-V3's
// partial ops (README, session 29): 8 rows ahead 10.2-10.8 GB/s, 16 or 32 rows 11.2-11.8, none 5-6.
constexpr int64_t kPrefetchAheadBytes = 2048;
// Rows with gaps (a slice of each row, prefetched into L2 by PrefetchRowAhead) go 8 KiB of their bytes ahead: on a
// Zen 4 the DeepSeek-V3 partial cases (slice of 128 / 256 bytes) ran 10-20 % faster than at 2 KiB; 16 KiB was as
// fast as 8, and contiguous rows were slower at 4 or 8 KiB than at 2 (README, session 32).
constexpr int64_t kGapPrefetchAheadBytes = 8192;
HWY_INLINE int64_t PrefetchRowsAhead(bool gaps, int64_t row_bytes) {
  const int64_t ahead_bytes = gaps ? kGapPrefetchAheadBytes : kPrefetchAheadBytes;
  return row_bytes > 0 ? std::max(kPrefetchRows, ahead_bytes / row_bytes) : kPrefetchRows;
}
// The prefetch of one row ahead: into L2 where the rows have gaps between them (a partial op's slice, row_bytes
// short of the row stride; the hardware stream prefetcher does not follow those), else into L1. For the slices L2 ran
// 1.3-2.2x faster on a Zen 4 (the L1 prefetches held the loads up, as in the GDR decode); contiguous rows were as
// fast or faster with L1 (README, session 31).
HWY_INLINE void PrefetchRowAhead(bool gaps, const char* row, int64_t row_bytes) {
  if (gaps) {
    PrefetchBytesL2(row, row_bytes);
  } else {
    PrefetchBytes(row, row_bytes);
  }
}

template <class TX, class TC, bool kWidenCosSin = false, class RowFn>
HWY_INLINE void ForEachRow(const RowStream& st, int64_t width, int64_t begin, int64_t end, const RowFn& row) {
  const int64_t row_bytes = st.step[kIn] == 1 ? width * static_cast<int64_t>(sizeof(TX)) : 0;
  const int64_t e1 = st.extent[1], e2 = st.extent[2];
  int64_t i2 = begin % e2, i1 = (begin / e2) % e1, i0 = begin / e2 / e1;
  const int64_t(*sd)[4] = st.stride;
  const int64_t din = sd[2][kIn], dout = sd[2][kOut], dcos = sd[2][kCos], dsin = sd[2][kSin];
  const bool gaps = din * static_cast<int64_t>(sizeof(TX)) > row_bytes;
  const int64_t ahead_rows = PrefetchRowsAhead(gaps, row_bytes);
  // Rows of kHeadGroup consecutive indices of outer dim 1 that share their cos / sin rows (stride 0 there, e.g. the
  // heads of (B, N, S, D)) while the innermost dim walks them (S) run side by side, row r of each before row r + 1:
  // each cos / sin row is read from memory once per group instead of once per head, and is in L1 for the group's
  // other rows. The rows' results do not depend on the order they run in (README, session 26). fp32 rows only: 16-bit
  // rows in groups ran 1.2-2x slower on a Zen 4 (both ISAs, D = 64 and 128) and gained nothing clear on the Xeon
  // (README, session 30).
  // (The strides of dim 1 are used only when it has a group's extent: a size-1 dim's stride may be anything.)
  const bool grouped = sizeof(TX) == 4 && e1 >= kHeadGroup && sd[1][kCos] == 0 && sd[1][kSin] == 0 &&
                       (dcos != 0 || dsin != 0) && st.step[kIn] == 1;
  while (begin < end) {
    int64_t off[4];
    for (int t = 0; t < 4; ++t) off[t] = i0 * sd[0][t] + i1 * sd[1][t] + i2 * sd[2][t];
    const TX* in = static_cast<const TX*>(st.in) + off[kIn];
    TX* out = static_cast<TX*>(st.out) + off[kOut];
    const TC* c = static_cast<const TC*>(st.cos) + off[kCos];
    const TC* s = static_cast<const TC*>(st.sin) + off[kSin];
    int64_t heads = 1;  // the indices of outer dim 1 this step covers
    if (grouped && i2 == 0 && i1 + kHeadGroup <= e1 && end - begin >= kHeadGroup * e2) {
      heads = kHeadGroup;
      const int64_t din1 = sd[1][kIn], dout1 = sd[1][kOut], group_bytes = din1 * static_cast<int64_t>(sizeof(TX));
      for (int64_t r = 0; r < e2; ++r, in += din, out += dout, c += dcos, s += dsin) {
        const char* ahead = reinterpret_cast<const char*>(in + ahead_rows * din);
        for (int64_t g = 0; g < kHeadGroup; ++g) PrefetchRowAhead(gaps, ahead + g * group_bytes, row_bytes);
        for (int64_t g = 0; g < kHeadGroup; ++g) row(in + g * din1, out + g * dout1, c, s);
      }
      begin += kHeadGroup * e2;
    } else {
      const int64_t run = std::min(end - begin, e2 - i2);
      HWY_ALIGN float widened[2][kWidenCosSin ? kMaxWidth : 1];
      const bool shared = dcos == 0 && dsin == 0;
      auto widen = [&] {
        if constexpr (kWidenCosSin) {
          LoadRowF32(c, 1, width, width, widened[0]);
          LoadRowF32(s, 1, width, width, widened[1]);
        }
      };
      if (shared) widen();
      for (int64_t r = 0; r < run; ++r, in += din, out += dout, c += dcos, s += dsin) {
        // Software prefetch of the row ahead_rows ahead (a hint: it never faults, even past the view's end):
        // partial-row slices leave gaps the hardware stream prefetcher does not follow.
        const char* ahead = reinterpret_cast<const char*>(in + ahead_rows * din);
        PrefetchRowAhead(gaps, ahead, row_bytes);
        if constexpr (kWidenCosSin) {
          if (shared) {
            row(in, out, static_cast<const float*>(widened[0]), static_cast<const float*>(widened[1]));
          } else {
            row(in, out, c, s);
          }
        } else {
          row(in, out, c, s);
        }
      }
      begin += run;
    }
    i2 = 0;
    i1 += heads;
    if (i1 == e1) {
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

// Whether a store streams. The `stream` argument of the stores below is either a bool (stream where the address is
// aligned to the stored vector: a test per store) or a store policy fixed for a whole side or row range,
// std::true_type (every store streams: the caller checked that each address is aligned) or std::false_type
// (ordinary stores). The fixed policies take the test and its branch out of the vector loops, where the extra
// paths made GCC keep copies of the register accumulators in memory (README "Session 33").
HWY_INLINE bool StreamHere(bool stream, const void* p, size_t bytes) {
  return stream && reinterpret_cast<uintptr_t>(p) % bytes == 0;
}
HWY_INLINE constexpr bool StreamHere(std::true_type, const void*, size_t) { return true; }
HWY_INLINE constexpr bool StreamHere(std::false_type, const void*, size_t) { return false; }

// How many vectors of `bytes` make one 64-byte line (1 where a vector fills one). The half rule's row loops write two
// places of a row in turn (j and h + j); where they stream vectors shorter than a line, they compute this many steps
// and store each place's run whole, so that each line's pieces go out one after the other. A non-temporal copy that
// wrote two lines' 32-byte halves in turn ran at 18 GB/s against 23 for whole lines (README.md, "Session 43").
constexpr int LineVectors(size_t bytes) { return bytes >= 64 ? 1 : static_cast<int>(64 / bytes); }

// The half rule's vector steps over channels [j, h) of a row, `width` channels each: step(k, y1, y2) computes the
// outputs at channels k and h + k, store(y, k) writes one at channel k. Streamed, kLine steps at a time with each
// half's run stored whole (LineVectors). Returns where the steps stop (a scalar tail's start).
template <int kLine, class Y, class Step, class Store>
HWY_INLINE int64_t HalfRuleSteps(bool stream, int64_t j, int64_t h, int64_t width, const Step& step,
                                 const Store& store) {
  if (kLine > 1 && stream) {
    for (; j + kLine * width <= h; j += kLine * width) {
      Y y1[kLine], y2[kLine];
      for (int k = 0; k < kLine; ++k) step(j + k * width, y1[k], y2[k]);
      for (int k = 0; k < kLine; ++k) store(y1[k], j + k * width);
      for (int k = 0; k < kLine; ++k) store(y2[k], h + j + k * width);
    }
  }
  for (; j + width <= h; j += width) {
    Y y1, y2;
    step(j, y1, y2);
    store(y1, j);
    store(y2, h + j);
  }
  return j;
}

// The even- and odd-channel vectors of a bf16 pair block, as one value (HalfRuleSteps' Y for pair rows).
struct PairVectors {
  VF v[2];
};

template <class TX, class S>
HWY_INLINE void Put(DF df, VF v, TX* p, S stream) {
  if (StreamHere(stream, p, hn::Lanes(df) * sizeof(TX))) {
    StreamF32(df, v, p);
  } else {
    StoreF32(df, v, p);
  }
}

// ---- bf16 rounding with AVX512_BF16 (AVX-512 target, CPUs that have it) ----
// vcvtne2ps2bf16 / vcvtneps2bf16 round to nearest even and quiet NaNs exactly like the integer rounding
// (core/dtype.h f32_to_bf16), except that they treat fp32 denormal inputs as zero. A vector holding a denormal
// (one FP-class test per input vector) therefore takes the integer rounding instead, so the bits are those of
// f32_to_bf16 for every input: dev/rope/bf16cvt_check.cpp checks these conversions on all 2^32 patterns.
// Normal fp32 inputs never round to a bf16 denormal (same exponent range), so output flushing never applies.
// Emitted with inline asm (core/simd_convert-inl.h: ConvertTwoToBF16, ConvertPairsToBF16): the AVX3 target is not
// compiled with -mavx512bf16; used only where CPUID has it.
#undef TXOPS_ROPE_BF16CVT  // set once per target pass
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define TXOPS_ROPE_BF16CVT 1
static const bool kBf16Cvt = txops::avx512_bf16_usable();
using txops::HWY_NAMESPACE::AnyDenormal;
HWY_INLINE __m256i CvtBF16(VF v) {
  __m256i r;
  asm("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v.raw));
  return r;
}
#else
#define TXOPS_ROPE_BF16CVT 0
#endif

template <class S>
HWY_INLINE void Put(DF df, VF v, hwy::bfloat16_t* p, S stream) {
#if TXOPS_ROPE_BF16CVT
  if (kBf16Cvt && !AnyDenormal(v)) {
    const __m256i r = CvtBF16(v);
    if (StreamHere(stream, p, 32)) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), r);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
    }
    return;
  }
#endif
  if (StreamHere(stream, p, hn::Lanes(df) * sizeof(hwy::bfloat16_t))) {
    StreamF32(df, v, p);
  } else {
    StoreF32(df, v, p);
  }
}

// ---- bf16 activations and bf16 cos/sin: "pair" vectors ----
// (core/simd_convert-inl.h: LoadBF16Pairs, MergeBF16Pairs), so pairs (2k, 2k+1) arrive split with no shuffle at
// all; StorePairs adds streaming and the AVX512_BF16 conversion. Used by every mode; element formulas are
// unchanged, so results are bit-identical to the generic path.
using BF = hwy::bfloat16_t;
using DU = hn::RebindToUnsigned<DF>;
using VU = hn::Vec<DU>;

HWY_INLINE void LoadPairs(const BF* p, VF* even, VF* odd) { txops::HWY_NAMESPACE::LoadBF16Pairs(DF(), p, even, odd); }

// A vector of rounded bf16 bits (u16 lanes, or u32 lanes holding two) to p: streaming when asked and aligned.
template <class D, class S>
HWY_INLINE void StoreBF16Bits(D d, hn::Vec<D> bits, BF* p, S stream) {
  using T = hn::TFromD<D>;
  T* q = reinterpret_cast<T*>(p);
  if (StreamHere(stream, q, hn::Lanes(d) * sizeof(T))) {
    hn::Stream(bits, d, q);
  } else {
    hn::StoreU(bits, d, q);
  }
}

// Merged pairs (lane j = bf16 of channel 2j | bf16 of channel 2j + 1 << 16) to p.
template <class S>
HWY_INLINE void StoreMerged(VU merged, BF* p, S stream) { StoreBF16Bits(DU(), merged, p, stream); }

template <class S>
HWY_INLINE void StorePairs(VF even, VF odd, BF* p, S stream) {
  VU merged;
#if TXOPS_ROPE_BF16CVT
  if (kBf16Cvt && !AnyDenormal(even, odd)) {
    merged = VU{txops::HWY_NAMESPACE::ConvertPairsToBF16(even, odd)};
  } else
#endif
  {
    merged = txops::HWY_NAMESPACE::MergeBF16Pairs(DF(), even, odd);
  }
  StoreMerged(merged, p, stream);
}

// ---- stores of rows whose every operand is bf16 (x and cos / sin) ----
// Every NaN such a row produces is quiet with zero low 16 bits (carried by the arithmetic from a bf16 operand, or
// the default NaN of an invalid operation), so where the CPU has no AVX512_BF16 the integer rounding drops its NaN
// test (core's *OfBF16Operands helpers: the same bits, two operations fewer per vector). With the conversion
// instructions these are Put / StorePairs.
HWY_INLINE bool Bf16Convert() {
#if TXOPS_ROPE_BF16CVT
  return kBf16Cvt;
#else
  return false;
#endif
}

template <class S>
HWY_INLINE void PutOfBF16Operands(DF df, VF v, BF* p, S stream) {
  if (Bf16Convert()) return Put(df, v, p, stream);
  StoreBF16Bits(hn::Rebind<uint16_t, DF>(), txops::HWY_NAMESPACE::RoundToBF16BitsOfBF16Operands(df, v), p, stream);
}

template <class S>
HWY_INLINE void StorePairsOfBF16Operands(VF even, VF odd, BF* p, S stream) {
  if (Bf16Convert()) return StorePairs(even, odd, p, stream);
  StoreMerged(txops::HWY_NAMESPACE::MergeBF16PairsOfBF16Operands(DF(), even, odd), p, stream);
}

#if TXOPS_HAVE_BF16_BLOCKS
// Two block-order vectors (core/simd_convert-inl.h, LoadBF16Blocks) of a row whose every operand is bf16, rounded
// and packed back into element order. With AVX512_BF16: one vcvtne2ps2bf16 (u16 lanes 0..15 = lo, 16..31 = hi)
// and one vpermq putting lo's and hi's 4-element runs back in turn; a pair holding a denormal takes the integer
// rounding (as Put). Otherwise PackBF16BlocksOfBF16Operands. The bits are the same either way.
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> PackBlocksOfBF16Operands(DF df, VF lo, VF hi) {
#if TXOPS_ROPE_BF16CVT
  if (kBf16Cvt && !AnyDenormal(lo, hi)) {
    return hn::Vec<hn::Repartition<uint16_t, DF>>{txops::HWY_NAMESPACE::ConvertBlocksToBF16(lo, hi)};
  }
#endif
  return txops::HWY_NAMESPACE::PackBF16BlocksOfBF16Operands(df, lo, hi);
}
#endif

#endif  // HWY_TARGET != HWY_SCALAR

}  // namespace HWY_NAMESPACE
}  // namespace rope
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
