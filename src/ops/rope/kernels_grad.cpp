// kernels_grad.cpp — the RoPE backward kernels that also reduce gradCos/gradSin (ApplyRotaryPosEmbGrad with q/k),
// compiled once per ISA by Highway (AVX3, AVX2, SCALAR). Per cos/sin group, every member row's input gradient is
// rotated back (the rules of kernels_rotate.cpp) while its products with the forward input accumulate into fp32
// rows for gradCos and gradSin in a fixed row order (no workspace, no partial sums: bits independent of threads).
// One member row per pass for every dtype (two rows per pass, sharing the accumulator loads, measured slower:
// README.md "Measured on AVX-512").
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rope/kernels_grad.cpp"
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
// Group loop.

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

GradKernel* select_grad_kernel(Isa isa, const RotationConfig& config, Isa* chosen) {
  *chosen = selected_isa(isa, TXOPS_AVX3_FN(PickGradKernel), TXOPS_AVX2_FN(PickGradKernel));
  return TXOPS_SELECT_KERNEL(isa, PickGradKernel)(config.x_dtype, config.cs_dtype);
}

}  // namespace rope
}  // namespace txops
#endif  // HWY_ONCE
