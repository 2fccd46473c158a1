// kernels.cpp — the causal-conv1d kernel (Highway: AVX3, AVX2, SCALAR). One item is one sequence's block of up
// to kConvChannelBlock channels: its K-1 history rows and the K weight rows are staged as fp32, then each token's
// row is staged into a ring of K rows (strided or not), y_t = act(bias + sum_j w[j] * ring[(t+j) % K]) is
// accumulated in that fixed order with fused multiply-adds and rounded once, and finally the state rows the
// operator's rule names are copied, element for element, from the history or from x. Items touch disjoint
// channels of y and of the state lines (validation refuses a line shared by two sequences), so the partition
// does not change any bit.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/causal_conv1d/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/simd_convert-inl.h"
#include "ops/causal_conv1d/problem.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kCB = kConvChannelBlock;

// SiLU v / (1 + exp(-v)); exp's argument is capped at 88 (e^88 < FLT_MAX; below -88 the result is -0 either way).
HWY_INLINE VF Silu(DF df, VF v) {
#if HWY_TARGET == HWY_SCALAR  // Highway's scalar Exp converts its argument to int: a NaN would be UB
  const float s = hn::GetLane(v);
  return hn::Set(df, s / (1.0f + std::exp(std::min(-s, 88.0f))));
#else
  const VF e = hn::Exp(df, hn::Min(hn::Neg(v), hn::Set(df, 88.0f)));  // Min(NaN, 88) is 88: v keeps the NaN
  return hn::Div(v, hn::Add(hn::Set(df, 1.0f), e));
#endif
}

// `count` raw elements `stride` apart (in T) from src to dst.
template <class T>
void CopyElements(const T* src, int64_t src_stride, T* dst, int64_t dst_stride, int64_t count) {
  if (src_stride == 1 && dst_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(T));
    return;
  }
  for (int64_t c = 0; c < count; ++c) std::memcpy(dst + c * dst_stride, src + c * src_stride, sizeof(T));
}

template <class T>
void RunItemsT(const ConvProblem& p, int64_t begin, int64_t end) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t K = p.width, S = p.state_len, blocks = (p.dim + kCB - 1) / kCB;
  const T* x = static_cast<const T*>(p.x.data);
  T* y = static_cast<T*>(p.y.data);
  T* states = static_cast<T*>(p.states.data);
  const T* weight = static_cast<const T*>(p.weight.data);
  const int64_t xc = p.x.strides[p.x.ndim - 1], yc = p.y.strides[p.y.ndim - 1];
  const int64_t sl = p.states.strides[0], sr = p.states.strides[1], sc = p.states.strides[2];
  const int64_t wk = p.weight.strides[0], wc = p.weight.strides[1];
  HWY_ALIGN float w[4][kCB], bias[kCB], ring[4][kCB], out[kCB];
  T history[3][kCB];  // the history rows as stored: the write-back copies them unchanged

  for (int64_t item = begin; item < end; ++item) {
    const int64_t b = item / blocks, c0 = (item % blocks) * kCB, nc = std::min(kCB, p.dim - c0);
    const int64_t padded = (nc + N - 1) / N * N, L = p.length[b];
    const T* xb = x + p.x_offset[b] + c0 * xc;
    T* yb = y + p.y_offset[b] + c0 * yc;
    if (p.line[b] < 0) {  // null_block_id: y is zero, the state is not touched
      std::fill(out, out + kCB, 0.0f);
      for (int64_t t = 0; t < L; ++t) StoreRowF32(out, nc, yb + t * p.y_token_stride, yc);
      continue;
    }
    T* line = states + p.line[b] * sl + c0 * sc;
    for (int64_t j = 0; j < K; ++j) LoadRowF32(weight + j * wk + c0 * wc, wc, nc, padded, w[j]);
    if (p.has_bias) {
      const T* bias_src = static_cast<const T*>(p.bias.data) + c0 * p.bias.strides[0];
      LoadRowF32(bias_src, p.bias.strides[0], nc, padded, bias);
    } else {
      std::fill(bias, bias + padded, 0.0f);
    }
    for (int64_t i = 0; i < K - 1; ++i) {
      if (p.history_row[b] >= 0) {
        CopyElements(line + (p.history_row[b] + i) * sr, sc, history[i], 1, nc);
        LoadRowF32(history[i], 1, nc, padded, ring[i]);
      } else {
        std::memset(static_cast<void*>(history[i]), 0, sizeof(history[i]));  // +0 in every storage type
        std::fill(ring[i], ring[i] + padded, 0.0f);
      }
    }
    // Token t's window is p[t .. t+K-1], p[i] kept in ring[i % K]; x_t is p[t+K-1].
    for (int64_t t = 0; t < L; ++t) {
      LoadRowF32(xb + t * p.x_token_stride, xc, nc, padded, ring[(t + K - 1) % K]);
      for (int64_t c = 0; c < padded; c += N) {
        VF acc = hn::Load(df, bias + c);
        for (int64_t j = 0; j < K; ++j) acc = hn::MulAdd(hn::Load(df, w[j] + c), hn::Load(df, ring[(t + j) % K] + c), acc);
        if (p.activation == ConvActivation::kSilu) acc = Silu(df, acc);
        hn::Store(acc, df, out + c);
      }
      StoreRowF32(out, nc, yb + t * p.y_token_stride, yc);
    }
    // Write-back: row r of the line takes p[src(r)]: prefill the last S entries of p (r with src < 0 stay as they
    // are), update the window moved by one token (rows r < min(K-2+L, S)).
    const int64_t P = K - 1 + L;
    const int64_t rows = p.update ? std::min(K - 2 + L, S) : S;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = p.update ? 1 + r : P - S + r;
      if (src < 0) continue;
      if (src < K - 1)
        CopyElements(history[src], 1, line + r * sr, sc, nc);
      else
        CopyElements(xb + (src - (K - 1)) * p.x_token_stride, xc, line + r * sr, sc, nc);
    }
  }
}

void ConvRunItems(const ConvProblem& p, int64_t begin, int64_t end) {
  switch (p.dtype) {
    case DType::kBF16: return RunItemsT<hwy::bfloat16_t>(p, begin, end);
    case DType::kF16: return RunItemsT<hwy::float16_t>(p, begin, end);
    default: return RunItemsT<float>(p, begin, end);
  }
}

}  // namespace
// Exported for the dispatch table below (the anonymous namespace keeps the helpers private per target).
void ConvRunItemsExported(const ConvProblem& p, int64_t begin, int64_t end) { ConvRunItems(p, begin, end); }

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
ConvRunItemsFn* select_conv_run_items(Isa isa) { return TXOPS_SELECT_KERNEL(isa, ConvRunItemsExported); }
}  // namespace txops
#endif
