// args.h — the planned work of the RoPE operators, shared by phase one (plan.cpp, prepare_*.cpp) and the
// kernels (kernels_rotate.cpp, kernels_grad.cpp). Every RoPE op is a loop over "rows": one vector of `width`
// channels of an input, rotated into an output row (possibly the same memory), with the cos/sin row resolved by
// broadcasting (stride 0 on the broadcast axes). The fused ApplyRotaryPosEmbGrad with gradCos/gradSin is a loop over
// "groups": one distinct cos row and all the q/k rows broadcast onto it, reduced in a fixed order.
#ifndef TXOPS_OPS_ROPE_ARGS_H_
#define TXOPS_OPS_ROPE_ARGS_H_

#include <cstdint>

#include "txops/txops.h"

namespace txops {
namespace rope {

constexpr int kOuterDims = 3;      // rows are addressed by up to three outer coordinates
constexpr int64_t kMaxWidth = 1024;  // D limit of every RoPE op (buffers on the stack are sized by it)

// What every row of an op does: the element types, the rotation, and how the output is stored.
struct RotationConfig {
  DType x_dtype = DType::kF32;   // input and output rows
  DType cs_dtype = DType::kF32;  // cos, sin (and gradCos, gradSin)
  RotaryMode mode = RotaryMode::kHalf;
  bool backward = false;
  int64_t width = 0;        // channels rotated per row (L)
  bool stream_out = false;  // non-temporal stores (large out-of-place outputs)
};

// One stream of rows. Pointers are already advanced to the first rotated channel; strides in elements.
struct RowStream {
  const void* in = nullptr;
  void* out = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t extent[kOuterDims] = {1, 1, 1};
  // stride[d][t]: outer-dim d stride of tensor t (kIn, kOut, kCos, kSin); 0 on broadcast axes.
  int64_t stride[kOuterDims][4] = {};
  int64_t step[4] = {1, 1, 1, 1};  // last-dim strides
  int64_t rows() const { return extent[0] * extent[1] * extent[2]; }
};
enum RowTensor { kIn = 0, kOut = 1, kCos = 2, kSin = 3 };

// Up to two row streams (query and key) run as one index space [0, rows0 + rows1).
struct RowJob {
  RotationConfig config;
  RowStream streams[2];
  int stream_count = 1;
  bool simd_rows = false;  // every last-dim stride is 1: the contiguous SIMD row kernels apply
};

// The fused backward with gradCos/gradSin. Group dims: axes where cos is not broadcast (shared by q and k);
// member dims: axes cos broadcasts over (N, and B when cos B is 1), per side since Nq != Nk.
enum GroupTensor { kGCos = 0, kGSin = 1, kGDcos = 2, kGDsin = 3, kGSide0 = 4 };  // side s: kGSide0 + 3*s + {in,out,x}
struct GradSide {
  const void* in = nullptr;  // grad embed
  void* out = nullptr;       // grad query / key
  const void* x = nullptr;   // query / key (saved forward input)
  int64_t member_extent[kOuterDims] = {1, 1, 1};
  int64_t member_stride[kOuterDims][3] = {};  // in, out, x
  int64_t step[3] = {1, 1, 1};
};
struct GradJob {
  RotationConfig config;
  const void* cos = nullptr;
  const void* sin = nullptr;
  void* dcos = nullptr;
  void* dsin = nullptr;
  int64_t cs_step[4] = {1, 1, 1, 1};  // cos, sin, dcos, dsin last-dim strides
  int64_t group_extent[kOuterDims] = {1, 1, 1};
  int64_t group_stride[kOuterDims][10] = {};  // by GroupTensor index
  GradSide sides[2];
  bool simd_rows = false;
  int64_t groups() const { return group_extent[0] * group_extent[1] * group_extent[2]; }
};

// Walks flat indices over up to three outer dims, keeping K element offsets (one per tensor) current.
template <int K>
struct OuterCursor {
  const int64_t* extent;
  const int64_t (*stride)[K];
  int64_t index[kOuterDims] = {0, 0, 0};
  int64_t offset[K] = {};

  OuterCursor(const int64_t* extents, const int64_t (*strides)[K], int64_t flat) : extent(extents), stride(strides) {
    index[2] = flat % extent[2];
    flat /= extent[2];
    index[1] = flat % extent[1];
    index[0] = flat / extent[1];
    for (int t = 0; t < K; ++t) {
      offset[t] = index[0] * stride[0][t] + index[1] * stride[1][t] + index[2] * stride[2][t];
    }
  }
  void next() {
    for (int d = kOuterDims - 1; d >= 0; --d) {
      ++index[d];
      for (int t = 0; t < K; ++t) offset[t] += stride[d][t];
      if (index[d] < extent[d] || d == 0) return;
      index[d] = 0;
      for (int t = 0; t < K; ++t) offset[t] -= extent[d] * stride[d][t];
    }
  }
};

// Kernels, compiled per ISA (kernels_rotate.cpp: RowKernel, kernels_grad.cpp: GradKernel); a run covers rows
// (groups) [begin, end).
using RowKernel = void(const RowJob& job, int64_t begin, int64_t end);
using GradKernel = void(const GradJob& job, int64_t begin, int64_t end);

// The kernel for the active ISA (at most `isa`) and the dtypes of `config`; `chosen` gets the ISA it really is.
RowKernel* select_row_kernel(Isa isa, const RotationConfig& config, Isa* chosen);
GradKernel* select_grad_kernel(Isa isa, const RotationConfig& config, Isa* chosen);

}  // namespace rope
}  // namespace txops

#endif  // TXOPS_OPS_ROPE_ARGS_H_
