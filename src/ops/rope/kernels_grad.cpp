// kernels_grad.cpp — the RoPE backward kernels that also reduce gradCos/gradSin (ApplyRotaryPosEmbGrad with q/k,
// RotaryPositionEmbeddingGrad with x), compiled once per ISA by Highway (AVX3, AVX2, SCALAR): the group loop and
// the kernel tables. Per cos/sin group, every member row's input gradient is rotated back (the rules of
// kernels_rotate.cpp) while its products with the forward input accumulate into fp32 rows for gradCos and
// gradSin in a fixed row order (no workspace, no partial sums: bits independent of threads). The rows are in
// kernels_grad_rows-inl.h (accumulators in registers where the row fits, else in memory).
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
#include "ops/rope/kernels_grad_rows-inl.h"
#include "ops/rope/kernels_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace rope {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// ------------------------------------------------------------------------------------------------
// Group loop.

template <class TX, class TC>
void GradGroups(const GradJob& job, int64_t begin, int64_t end) {
  if (begin >= end) return;
  const RotationConfig& cfg = job.config;
  const int64_t width = cfg.width;
  HWY_ALIGN float acc_c[2][kMaxWidth];
  HWY_ALIGN float acc_s[2][kMaxWidth];
#if HWY_TARGET != HWY_SCALAR
  // 16-bit cos/sin are widened into fp32 rows once per group instead of once per member row (widening is exact:
  // same bits); for bf16 with bf16 activations (pair vectors) in split layout, for both forms (in the register
  // form that took 16 of a D = 128 row's ~140 vector operations off each member row; README, session 21).
  constexpr bool kBfPairs = std::is_same<TX, BF>::value && std::is_same<TC, BF>::value;
  constexpr bool kWiden = !std::is_same<TC, float>::value && !kBfPairs;
  SideFn<TX, TC>* in_registers = nullptr;
  if constexpr (!kWiden && !kBfPairs) {
    if (job.simd_rows) in_registers = PickSideInRegisters<TX, TC>(cfg.mode, width);
  }
  SideFn<TX, float>* const in_registers_widened =
      job.simd_rows && kWiden ? PickSideInRegisters<TX, float>(cfg.mode, width) : nullptr;
  SideFn<TX, float>* in_registers_split = nullptr;
  if constexpr (kBfPairs) {
    if (job.simd_rows) in_registers_split = PickSideInRegisters<TX, float, /*kSplit=*/true>(cfg.mode, width);
  }
  HWY_ALIGN float cs_widened[2][kMaxWidth];
#endif
  OuterCursor<10> group(job.group_extent, job.group_stride, begin);
  for (int64_t g = begin; g < end; ++g, group.next()) {
    const TC* c = static_cast<const TC*>(job.cos) + group.offset[kGCos];
    const TC* s = static_cast<const TC*>(job.sin) + group.offset[kGSin];
#if HWY_TARGET != HWY_SCALAR
    if (in_registers_widened != nullptr) {
      LoadRowF32(c, 1, width, width, cs_widened[0]);
      LoadRowF32(s, 1, width, width, cs_widened[1]);
    }
    if constexpr (kBfPairs) {
      if (job.simd_rows) {
        SplitBlocks(cfg.mode, width, c, cs_widened[0]);
        SplitBlocks(cfg.mode, width, s, cs_widened[1]);
      }
    }
#endif
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
#if HWY_TARGET != HWY_SCALAR
      if (in_registers != nullptr) {
        in_registers(cfg.stream_out, side, in, out, x, c, s, ac, as);
      } else if (in_registers_widened != nullptr) {
        in_registers_widened(cfg.stream_out, side, in, out, x, cs_widened[0], cs_widened[1], ac, as);
      } else if (in_registers_split != nullptr) {
        in_registers_split(cfg.stream_out, side, in, out, x, cs_widened[0], cs_widened[1], ac, as);
      } else if (job.simd_rows) {
        const int64_t row_bytes = width * static_cast<int64_t>(sizeof(TX));
        const auto one_row = [&](const TX* row_in, TX* row_out, const TX* row_x) __attribute__((always_inline)) {
          if constexpr (kBfPairs) {  // cos / sin split and widened above
            GradRowContiguous(cfg, row_in, row_out, row_x, c, s, cs_widened[0], cs_widened[1], ac, as);
          } else {
            GradRowContiguous(cfg, row_in, row_out, row_x, c, s, ac, as);
          }
        };
        // Member rows two at a time, one pass over the accumulators per pair, where the outputs stay in the cache
        // (with streaming stores, the four output lines open at once cost more than the pairs gain: README,
        // session 33). bf16 pair vectors keep one row at a time.
        if (!kBfPairs && !cfg.stream_out) {
          ForEachMemberPair(
              side, in, out, x, row_bytes,
              [&](const TX* in_a, TX* out_a, const TX* x_a, const TX* in_b, TX* out_b, const TX* x_b) {
                GradRowContiguousPair(cfg, in_a, out_a, x_a, in_b, out_b, x_b, c, s, ac, as);
              },
              one_row);
        } else {
          ForEachMember(side, in, out, x, row_bytes, one_row);
        }
      } else
#endif
      {
        ForEachMember(side, in, out, x, /*row_bytes=*/0, [&](const TX* row_in, TX* row_out, const TX* row_x) {
          GradRowStrided(cfg, side, row_in, row_out, row_x, c, job.cs_step[0], s, job.cs_step[1], ac, as);
        });
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
        Put(df, hn::Add(hn::Load(df, acc_c[0] + j), hn::Load(df, acc_c[1] + j)), dc + j, cfg.stream_out);
        Put(df, hn::Add(hn::Load(df, acc_s[0] + j), hn::Load(df, acc_s[1] + j)), ds + j, cfg.stream_out);
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
