// simd_convert-inl.h — per-target (Highway) loads and stores of fp32 / bf16 / fp16 storage as fp32 vectors.
// Stores round to nearest even with NaN kept quiet, exactly like the scalar helpers in core/dtype.h, so a
// vector body and a scalar tail give the same bits. (Highway 1.0.3's own bf16 DemoteTo truncates, and its
// SCALAR fp16 path does too; hence our own.) Storage types: float, hwy::bfloat16_t, hwy::float16_t.
//
// Include after <hwy/highway.h> inside a foreach_target translation unit; per-target include guard below.
#if defined(TXOPS_CORE_SIMD_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_CORE_SIMD_CONVERT_INL_H_
#undef TXOPS_CORE_SIMD_CONVERT_INL_H_
#else
#define TXOPS_CORE_SIMD_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include <type_traits>

#include "core/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ---- loads (exact widening) ----
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<uint16_t, DF> du16;
  const auto h = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p));
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, h)));
}

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF32(DF df, const hwy::float16_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
  uint16_t bits;
  hwy::CopyBytes<2>(p, &bits);
  return hn::Set(df, f16_to_f32(bits));
#else
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, p));
#endif
}

// ---- rounding to 16-bit storage ----
// The bf16 of `v` rounded to nearest even in the high 16 bits of each u32 lane (the low half is not cleared), for
// values whose every NaN is quiet with zero low 16 bits: NaNs carried by arithmetic from bf16 operands, and the
// default NaN of an invalid operation. The increment then cannot carry into the kept bits of a NaN, so these are
// RoundToBF16High's bits without its NaN test (two operations fewer per vector).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundToBF16HighOfBF16Operands(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  (void)df;
  return hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), lsb));
}

// The bf16 of `v` (round to nearest even, NaN quieted) in the high 16 bits of each u32 lane.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundToBF16High(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto quiet = hn::Or(hn::BitCast(du, v), hn::Set(du, 0x00400000u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, RoundToBF16HighOfBF16Operands(df, v));
}

// RoundToBF16Bits for values whose NaNs are those RoundToBF16HighOfBF16Operands allows: the same bits.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> RoundToBF16BitsOfBF16Operands(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> du16;
  return hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(RoundToBF16HighOfBF16Operands(df, v))));
}

template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> RoundToBF16Bits(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> du16;
  // Select, then one shift (shifts are the scarce port in this sequence on Zen 3).
  return hn::DemoteTo(du16, hn::BitCast(di, hn::ShiftRight<16>(RoundToBF16High(df, v))));
}

// ---- stores ----
template <class DF>
HWY_INLINE void StoreF32(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::StoreU(v, df, p);
}

template <class DF>
HWY_INLINE void StoreF32(DF df, hn::Vec<DF> v, hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  hn::StoreU(RoundToBF16Bits(df, v), du16, reinterpret_cast<uint16_t*>(p));
}

template <class DF>
HWY_INLINE void StoreF32(DF df, hn::Vec<DF> v, hwy::float16_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
  const uint16_t bits = f32_to_f16(hn::GetLane(v));
  (void)df;
  hwy::CopyBytes<2>(&bits, p);
#else
  const hn::Rebind<hwy::float16_t, DF> dh;
  hn::StoreU(hn::DemoteTo(dh, v), dh, p);  // F16C: round to nearest even
#endif
}

// Non-temporal variants (skip the write-allocate read of out-of-place outputs). `p` must be aligned to the
// stored vector's size in bytes (Lanes(df) * sizeof(T)); callers peel until it is.
template <class DF>
HWY_INLINE void StreamF32(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::Stream(v, df, p);
}

template <class DF>
HWY_INLINE void StreamF32(DF df, hn::Vec<DF> v, hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> du16;
  hn::Stream(RoundToBF16Bits(df, v), du16, reinterpret_cast<uint16_t*>(p));
}

template <class DF>
HWY_INLINE void StreamF32(DF df, hn::Vec<DF> v, hwy::float16_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
  StoreF32(df, v, p);
#else
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  hn::Stream(hn::BitCast(du16, hn::DemoteTo(dh, v)), du16, reinterpret_cast<uint16_t*>(p));
#endif
}

// Scalar element access with the same rounding (tails, gathers).
HWY_INLINE float LoadScalarF32(const float* p) { return *p; }
HWY_INLINE float LoadScalarF32(const hwy::bfloat16_t* p) {
  uint16_t b;
  hwy::CopyBytes<2>(p, &b);
  return bf16_to_f32(b);
}
HWY_INLINE float LoadScalarF32(const hwy::float16_t* p) {
  uint16_t b;
  hwy::CopyBytes<2>(p, &b);
  return f16_to_f32(b);
}
HWY_INLINE void StoreScalarF32(float v, float* p) { *p = v; }
HWY_INLINE void StoreScalarF32(float v, hwy::bfloat16_t* p) {
  const uint16_t b = f32_to_bf16(v);
  hwy::CopyBytes<2>(&b, p);
}
HWY_INLINE void StoreScalarF32(float v, hwy::float16_t* p) {
  const uint16_t b = f32_to_f16(v);
  hwy::CopyBytes<2>(&b, p);
}

#if HWY_TARGET != HWY_SCALAR
// ---- bf16 "pair" vectors ----
// 2N bf16 elements load as N u32 lanes: the even elements are the low halves, the odd ones the high halves, so
// widening is one shift or one mask and no shuffle. Stores round both parities (the rule above, NaN quieted) and
// merge them back with a shift, a mask and an or (no pack, no lane-crossing permute). Lane-wise arithmetic on the
// two parities gives the same bits as on the plain order; operands must be split the same way (LoadInterleaved2).
template <class DF>
HWY_INLINE void LoadBF16Pairs(DF df, const hwy::bfloat16_t* HWY_RESTRICT p, hn::Vec<DF>* even, hn::Vec<DF>* odd) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
  *even = hn::BitCast(df, hn::ShiftLeft<16>(bits));
  *odd = hn::BitCast(df, hn::And(bits, hn::Set(du, 0xFFFF0000u)));
}

// Lane j: the high half of even_j in the low half, the high half of odd_j in the high half, taken word by word (one
// vpblendw on AVX2: one operation where a mask and an or took two).
template <class DU>
HWY_INLINE hn::Vec<DU> MergeHighHalves(DU du, hn::Vec<DU> even, hn::Vec<DU> odd) {
  const hn::Repartition<uint16_t, DU> dw;
  return hn::BitCast(du, hn::OddEven(hn::BitCast(dw, odd), hn::BitCast(dw, hn::ShiftRight<16>(even))));
}

// even / odd rounded and merged: lane j holds bf16(even_j) | bf16(odd_j) << 16.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> MergeBF16Pairs(DF df, hn::Vec<DF> even, hn::Vec<DF> odd) {
  return MergeHighHalves(hn::RebindToUnsigned<DF>(), RoundToBF16High(df, even), RoundToBF16High(df, odd));
}

// MergeBF16Pairs for values whose NaNs are those RoundToBF16HighOfBF16Operands allows: the same bits, no NaN test.
// AVX2 works on 16-bit words instead: the truncated high halves h and the dropped low halves l of both vectors, one
// merge each, then h + 1 where l + lsb(h) > 0x8000 (a signed saturating add and compare of l ^ 0x8000): nine
// operations where rounding each vector and merging took ten (same bits: the carry of l + 0x7FFF + lsb into h).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> MergeBF16PairsOfBF16Operands(DF df, hn::Vec<DF> even, hn::Vec<DF> odd) {
  const hn::RebindToUnsigned<DF> du;
#if HWY_TARGET == HWY_AVX2
  if constexpr (std::is_same<decltype(hn::BitCast(du, even).raw), __m256i>::value) {
    const __m256i e = hn::BitCast(du, even).raw, o = hn::BitCast(du, odd).raw;
    const __m256i h = _mm256_blend_epi16(_mm256_srli_epi32(e, 16), o, 0xAA);  // odd words from o
    const __m256i l = _mm256_blend_epi16(e, _mm256_slli_epi32(o, 16), 0xAA);
    const __m256i t = _mm256_adds_epi16(_mm256_xor_si256(l, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                                        _mm256_and_si256(h, _mm256_set1_epi16(1)));
    return hn::Vec<decltype(du)>{_mm256_sub_epi16(h, _mm256_cmpgt_epi16(t, _mm256_setzero_si256()))};
  }
#endif
  return MergeHighHalves(du, RoundToBF16HighOfBF16Operands(df, even), RoundToBF16HighOfBF16Operands(df, odd));
}

template <class DF>
HWY_INLINE void StoreBF16Pairs(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du;
  hn::StoreU(MergeBF16Pairs(df, even, odd), du, reinterpret_cast<uint32_t*>(p));
}

// StoreBF16Pairs for values whose NaNs are those RoundToBF16HighOfBF16Operands allows: the same bits, no NaN test.
template <class DF>
HWY_INLINE void StoreBF16PairsOfBF16Operands(DF df, hn::Vec<DF> even, hn::Vec<DF> odd,
                                             hwy::bfloat16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du;
  hn::StoreU(MergeBF16PairsOfBF16Operands(df, even, odd), du, reinterpret_cast<uint32_t*>(p));
}
#endif

// ---- bf16 rows in "block order" (AVX2, AVX-512) ----
// 2N bf16 elements load as two fp32 vectors: `lo` holds the first four of every eight (the low half of each
// 128-bit block of the load), `hi` the last four; each is one unpack with zero (the bf16 bits become the high
// half of a u32 lane, which is the fp32 value). PackBF16Blocks* rounds two such vectors and packs them back in
// the same order with one in-block pack (packus), no lane-crossing permute. Lane-wise arithmetic between
// vectors loaded alike therefore needs no reordering: lane i of lo is element 8*(i/4) + i%4, of hi that plus 4.
#undef TXOPS_HAVE_BF16_BLOCKS  // set once per target pass
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
#define TXOPS_HAVE_BF16_BLOCKS 1
template <class DF>
HWY_INLINE void LoadBF16Blocks(DF df, const hwy::bfloat16_t* HWY_RESTRICT p, hn::Vec<DF>* lo, hn::Vec<DF>* hi) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Repartition<uint16_t, DF> d16;
  const auto v = hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p));
  *lo = hn::BitCast(df, hn::ZipLower(du, hn::Zero(d16), v));
  *hi = hn::BitCast(df, hn::ZipUpper(du, hn::Zero(d16), v));
}

// 2N pairs (4N elements from p) in block order: lane i of the *_lo vectors is pair 8*(i/4) + i%4, of the *_hi
// ones that plus 4, so that output element k of a half-length row lines up with LoadBF16Blocks' lanes.
template <class DF>
HWY_INLINE void LoadBF16PairsInBlocks(DF df, const hwy::bfloat16_t* HWY_RESTRICT p, hn::Vec<DF>* even_lo,
                                      hn::Vec<DF>* odd_lo, hn::Vec<DF>* even_hi, hn::Vec<DF>* odd_hi) {
  const hn::RebindToUnsigned<DF> du;
  const uint32_t* q = reinterpret_cast<const uint32_t*>(p);
  const auto a = hn::LoadU(du, q), b = hn::LoadU(du, q + hn::Lanes(du));
#if HWY_TARGET == HWY_AVX2
  const auto lo = hn::ConcatLowerLower(du, b, a), hi = hn::ConcatUpperUpper(du, b, a);
#else
  const hn::Vec<decltype(du)> lo{_mm512_shuffle_i32x4(a.raw, b.raw, _MM_SHUFFLE(2, 0, 2, 0))};
  const hn::Vec<decltype(du)> hi{_mm512_shuffle_i32x4(a.raw, b.raw, _MM_SHUFFLE(3, 1, 3, 1))};
#endif
  const auto high = hn::Set(du, 0xFFFF0000u);
  *even_lo = hn::BitCast(df, hn::ShiftLeft<16>(lo));
  *odd_lo = hn::BitCast(df, hn::And(lo, high));
  *even_hi = hn::BitCast(df, hn::ShiftLeft<16>(hi));
  *odd_hi = hn::BitCast(df, hn::And(hi, high));
}

// Two vectors of rounded bf16 in the high halves of their u32 lanes, packed in block order (one in-block packus).
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> PackBF16HighsInBlocks(DF, hn::Vec<hn::RebindToUnsigned<DF>> lo,
                                                                        hn::Vec<hn::RebindToUnsigned<DF>> hi) {
  const auto l = hn::ShiftRight<16>(lo), h = hn::ShiftRight<16>(hi);
#if HWY_TARGET == HWY_AVX2
  return hn::Vec<hn::Repartition<uint16_t, DF>>{_mm256_packus_epi32(l.raw, h.raw)};
#else
  return hn::Vec<hn::Repartition<uint16_t, DF>>{_mm512_packus_epi32(l.raw, h.raw)};
#endif
}

// lo and hi (block order) rounded to bf16 as RoundToBF16HighOfBF16Operands allows (no NaN test) and packed.
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> PackBF16BlocksOfBF16Operands(DF df, hn::Vec<DF> lo,
                                                                               hn::Vec<DF> hi) {
  return PackBF16HighsInBlocks(df, RoundToBF16HighOfBF16Operands(df, lo), RoundToBF16HighOfBF16Operands(df, hi));
}

// lo and hi (block order) rounded to bf16 as RoundToBF16High (NaN quieted) and packed: any fp32 values.
template <class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> PackBF16Blocks(DF df, hn::Vec<DF> lo, hn::Vec<DF> hi) {
  return PackBF16HighsInBlocks(df, RoundToBF16High(df, lo), RoundToBF16High(df, hi));
}
#endif

// ---- the AVX512_BF16 conversion (AVX-512 target; only on CPUs that have it: callers check) ----
// vcvtne2ps2bf16 rounds to nearest even and quiets NaNs like RoundToBF16High, but reads fp32 denormal inputs as
// zero. Emitted with inline asm: the AVX-512 target is not compiled with -mavx512bf16.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
// u16 lanes 0..15 = bf16(lo), 16..31 = bf16(hi).
HWY_INLINE __m512i ConvertTwoToBF16(hn::Vec<hn::ScalableTag<float>> hi, hn::Vec<hn::ScalableTag<float>> lo) {
  __m512i r;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(hi.raw), "v"(lo.raw));
  return r;
}
// Two block-order vectors (LoadBF16Blocks: lanes [8b, 8b + 4) of 32 elements in lo, [8b + 4, 8b + 8) in hi)
// converted and put back in element order: one vpermq interleaves lo's and hi's 4-element runs.
HWY_INLINE __m512i ConvertBlocksToBF16(hn::Vec<hn::ScalableTag<float>> lo, hn::Vec<hn::ScalableTag<float>> hi) {
  return _mm512_permutexvar_epi64(_mm512_set_epi64(7, 3, 6, 2, 5, 1, 4, 0), ConvertTwoToBF16(hi, lo));
}
// even / odd channels (pair vectors, above) converted and merged: u16 lane 2j = bf16(even_j), 2j + 1 = bf16(odd_j).
HWY_INLINE __m512i ConvertPairsToBF16(hn::Vec<hn::ScalableTag<float>> even, hn::Vec<hn::ScalableTag<float>> odd) {
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, ConvertTwoToBF16(odd, even));
}
// Whether a (or a or b) holds an fp32 denormal, which the conversions above would read as zero: a caller that
// must give f32_to_bf16's bits rounds such vectors with the integer code instead (one FP-class test per vector).
HWY_INLINE bool AnyDenormal(hn::Vec<hn::ScalableTag<float>> a) { return _mm512_fpclass_ps_mask(a.raw, 0x20) != 0; }
HWY_INLINE bool AnyDenormal(hn::Vec<hn::ScalableTag<float>> a, hn::Vec<hn::ScalableTag<float>> b) {
  return (_mm512_fpclass_ps_mask(a.raw, 0x20) | _mm512_fpclass_ps_mask(b.raw, 0x20)) != 0;
}
#endif

// A row of `count` elements `stride` apart as fp32 into dst (vector loads when stride is 1), then zeros up to
// `padded`; and back, rounding as above. The vector body and the scalar tail give the same bits.
template <class T>
HWY_INLINE void LoadRowF32(const T* src, int64_t stride, int64_t count, int64_t padded, float* dst) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  if (stride == 1)
    for (; j + N <= count; j += N) hn::StoreU(LoadF32(df, src + j), df, dst + j);
  for (; j < count; ++j) dst[j] = LoadScalarF32(src + j * stride);
  for (; j < padded; ++j) dst[j] = 0.0f;
}

template <class T>
HWY_INLINE void StoreRowF32(const float* src, int64_t count, T* dst, int64_t stride) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  if (stride == 1)
    for (; j + N <= count; j += N) StoreF32(df, hn::LoadU(df, src + j), dst + j);
  T* d = dst + j * stride;  // a pointer walk: with j * stride in the loop GCC warned of an overflow it cannot rule out
  for (; j < count; ++j, d += stride) StoreScalarF32(src[j], d);
}

// StoreRowF32 for a row that nothing reads soon: non-temporal stores where dst is contiguous and vector-aligned
// (the caller fences, hwy::FlushStream, before another thread reads it), StoreRowF32 elsewhere. The same values.
template <class T>
HWY_INLINE void StreamRowF32(const float* src, int64_t count, T* dst, int64_t stride) {
  const hn::ScalableTag<float> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t j = 0;
  if (stride == 1 && reinterpret_cast<uintptr_t>(dst) % (N * sizeof(T)) == 0)
    for (; j + N <= count; j += N) StreamF32(df, hn::LoadU(df, src + j), dst + j);
  StoreRowF32(src + j, count - j, dst + j * stride, stride);
}

// StreamRowF32 where `stream` (an output the plan found too large to stay in the caches), else StoreRowF32.
template <class T>
HWY_INLINE void PutRowF32(bool stream, const float* src, int64_t count, T* dst, int64_t stride) {
  if (stream) {
    StreamRowF32(src, count, dst, stride);
  } else {
    StoreRowF32(src, count, dst, stride);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
