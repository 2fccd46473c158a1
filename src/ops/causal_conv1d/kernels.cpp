// kernels.cpp — the causal-conv1d kernels (Highway: AVX3, AVX2, SCALAR), in the two passes of problem.h.
// Pass 1 (y) has three code paths chosen by the layout (conv_path): channel-contiguous rows read straight from x
// (kernels_contiguous.cpp); token-contiguous channels streamed in segments; anything else staged row by row into
// a ring of K fp32 rows. All accumulate y_t = act(bias + sum_j w[j] * p[t+j]) in that fixed order with fused
// multiply-adds and round once into y, so they give the same bits. Pass 2 (state write-back): per block of
// channels of a sequence, the history rows are saved as stored, then the rows the operator's rule names are
// copied, element for element, from them or from x. Every element's arithmetic is fixed by its position, not by
// the item or thread computing it, so results do not depend on the partition.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/causal_conv1d/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/prefetch.h"
#include "core/simd_convert-inl.h"
#include "ops/causal_conv1d/kernels_shared-inl.h"
#include "ops/causal_conv1d/problem.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

using namespace conv;  // NOLINT: this target's shared pieces

// y of one item's tokens, the window ring already holding the K-1 rows before its first token.
template <class T, int K, bool kSilu>
void ForwardTokens(const ConvProblem& p, const ConvItem& it, const T* xb, T* yb, int64_t xc, int64_t yc, int64_t nc,
                   int64_t padded, int64_t stride, float* ring, const float* w, const float* bias, float* out) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t t = it.token_begin; t < it.token_end; ++t) {
    const float* rows[K];
    for (int j = 0; j < K; ++j) rows[j] = ring + (t + j) % K * stride;
    LoadRowF32(xb + t * p.x_token_stride, xc, nc, padded, const_cast<float*>(rows[K - 1]));
    for (int64_t c = 0; c < padded; c += N) {
      VF acc = hn::Load(df, bias + c);
      for (int j = 0; j < K; ++j) acc = hn::MulAdd(hn::Load(df, w + j * stride + c), hn::Load(df, rows[j] + c), acc);
      if (kSilu) acc = Silu(df, acc);
      hn::Store(acc, df, out + c);
    }
    StoreRowF32(out, nc, yb + t * p.y_token_stride, yc);
  }
}

// ---- the token-contiguous path: x and y with token stride 1 (transformers' channel-first (B, dim, L)) ----
// Prefetches the lines of `count` contiguous elements from p.
template <class T>
HWY_INLINE void PrefetchTokens(const T* p, int64_t count) {
  PrefetchBytes(p, count * static_cast<int64_t>(sizeof(T)));
}

// Per channel, a segment of up to kConvSegment tokens is staged after the K-1 values before it (the carry), and
// the K taps are unaligned loads of that staged row; same operations in the same order as the other paths.
template <class T, int K, bool kSilu>
void TokenContiguousItem(const ConvProblem& p, const ConvItem& it, const Typed<T>& v, float* scratch) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t b = it.sequence;
  float* buf = scratch;                            // K-1 carried values, then the segment (padded)
  float* out = scratch + kConvSegment + 2 * kMaxLanes;
  const T* history = p.history_row[b] >= 0 ? v.states + p.line[b] * v.sl + p.history_row[b] * v.sr : nullptr;
  for (int64_t c = it.channel_begin; c < it.channel_end; ++c) {
    const T* xc = v.x + p.x_offset[b] + c * v.xc;
    T* yc = v.y + p.y_offset[b] + c * v.yc;
    VF w[K];
    for (int j = 0; j < K; ++j) w[j] = hn::Set(df, LoadScalarF32(v.weight + j * v.wk + c * v.wc));
    const VF bias = hn::Set(df, p.has_bias ? LoadScalarF32(v.bias + c * v.bc) : 0.0f);
    for (int64_t i = 0; i < K - 1; ++i) {
      const int64_t t = it.token_begin - (K - 1) + i;
      buf[i] = t >= 0 ? LoadScalarF32(xc + t)
                      : (history != nullptr ? LoadScalarF32(history + (t + K - 1) * v.sr + c * v.sc) : 0.0f);
    }
    for (int64_t t0 = it.token_begin; t0 < it.token_end; t0 += kConvSegment) {
      const int64_t n = std::min(kConvSegment, it.token_end - t0), padded = (n + N - 1) / N * N;
      // The next segment (of this channel, or else the next channel's first) is fetched while this one computes: the
      // hardware's stream prefetch alone left the loads waiting (README.md, "Session 27": ~15 % from memory).
      if (t0 + n < it.token_end)
        PrefetchTokens(xc + t0 + n, std::min(kConvSegment, it.token_end - t0 - n));
      else if (c + 1 < it.channel_end)
        PrefetchTokens(xc + v.xc + it.token_begin, std::min(kConvSegment, it.token_end - it.token_begin));
      LoadRowF32(xc + t0, 1, n, padded + N, buf + K - 1);
      for (int64_t i = 0; i < padded; i += N) {
        VF acc = bias;
        for (int j = 0; j < K; ++j) acc = hn::MulAdd(w[j], hn::LoadU(df, buf + i + j), acc);
        if (kSilu) acc = Silu(df, acc);
        hn::Store(acc, df, out + i);
      }
      // y is large: streamed where this run of it is vector-aligned (no read before the write)
      PutRowF32(p.stream_y, out, n, yc + t0, 1);
      std::memmove(buf, buf + n, (K - 1) * sizeof(float));  // the last K-1 values carry into the next segment
    }
  }
  // The item holds every token of its channels, so it is their history's only reader: their line is written back
  // now, while the rows' last tokens are in cache (plan.cpp sets this only when no length is zero).
  if (p.write_back_in_pass1) WriteBackChannels(p, v, b, it.channel_begin, it.channel_end);
}

template <class T>
void ForwardT(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
              bool weights_staged) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t K = p.width, stride = (p.channel_chunk + N - 1) / N * N;
  const Typed<T> v(p);
  float* ring = scratch;               // K rows
  float* w = ring + K * stride;        // K rows
  float* bias = w + K * stride;        // 1 row
  float* out = bias + stride;          // 1 row
  const ConvPath path = conv_path(p);
  if (path == ConvPath::kChannelContiguous) return ConvContiguousItems(p, items, begin, end, scratch, weights_staged);
  for (int64_t i = begin; i < end; ++i) {
    const ConvItem& it = items[i];
    const int64_t b = it.sequence, c0 = it.channel_begin, nc = it.channel_end - it.channel_begin;
    const int64_t padded = (nc + N - 1) / N * N;
    if (path == ConvPath::kTokenContiguous && p.line[b] >= 0) {
      WithWidthAndActivation(p, [&](auto k, auto silu) {
        TokenContiguousItem<T, decltype(k)::value, decltype(silu)::value>(p, it, v, scratch);
      });
      continue;
    }
    const T* xb = v.x + p.x_offset[b] + c0 * v.xc;
    T* yb = v.y + p.y_offset[b] + c0 * v.yc;
    if (p.line[b] < 0) {  // null_block_id: y is zero, the state is not touched
      std::fill(out, out + padded, 0.0f);
      for (int64_t t = it.token_begin; t < it.token_end; ++t) StoreRowF32(out, nc, yb + t * p.y_token_stride, v.yc);
      continue;
    }
    for (int64_t j = 0; j < K; ++j) LoadRowF32(v.weight + j * v.wk + c0 * v.wc, v.wc, nc, padded, w + j * stride);
    if (p.has_bias)
      LoadRowF32(v.bias + c0 * v.bc, v.bc, nc, padded, bias);
    else
      std::fill(bias, bias + padded, 0.0f);
    // The window rows before the first token: earlier tokens, or (first chunk) the history rows / zeros.
    const T* history = p.history_row[b] >= 0 ? v.states + p.line[b] * v.sl + p.history_row[b] * v.sr + c0 * v.sc
                                              : nullptr;
    for (int64_t i0 = 0; i0 < K - 1; ++i0) {
      const int64_t t = it.token_begin - (K - 1) + i0;  // p index t + K - 1 lands in slot (t + K - 1) mod K
      float* slot = ring + ((t + K - 1) % K + K) % K * stride;
      if (t >= 0)
        LoadRowF32(xb + t * p.x_token_stride, v.xc, nc, padded, slot);
      else if (history != nullptr)
        LoadRowF32(history + (t + K - 1) * v.sr, v.sc, nc, padded, slot);
      else
        std::fill(slot, slot + padded, 0.0f);
    }
    WithWidthAndActivation(p, [&](auto k, auto silu) {
      ForwardTokens<T, decltype(k)::value, decltype(silu)::value>(p, it, xb, yb, v.xc, v.yc, nc, padded, stride, ring,
                                                                   w, bias, out);
    });
  }
  if (p.stream_y) hwy::FlushStream();  // order the token-contiguous path's streaming stores before the barrier
}

template <class T>
void WriteBackT(const ConvProblem& p, int64_t begin, int64_t end) {
  const int64_t blocks = (p.dim + kConvStateBlock - 1) / kConvStateBlock;
  const Typed<T> v(p);
  for (int64_t item = begin; item < end; ++item) {
    const int64_t b = item / blocks, c0 = (item % blocks) * kConvStateBlock;
    WriteBackChannels(p, v, b, c0, std::min(p.dim, c0 + kConvStateBlock));
  }
}

}  // namespace

// Exported for the dispatch tables below (the anonymous namespace keeps the helpers private per target).
void ConvForward(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
                 bool weights_staged) {
  switch (p.dtype) {
    case DType::kBF16: return ForwardT<hwy::bfloat16_t>(p, items, begin, end, scratch, weights_staged);
    case DType::kF16: return ForwardT<hwy::float16_t>(p, items, begin, end, scratch, weights_staged);
    default: return ForwardT<float>(p, items, begin, end, scratch, weights_staged);
  }
}

void ConvWriteBack(const ConvProblem& p, int64_t begin, int64_t end) {
  switch (p.dtype) {
    case DType::kBF16: return WriteBackT<hwy::bfloat16_t>(p, begin, end);
    case DType::kF16: return WriteBackT<hwy::float16_t>(p, begin, end);
    default: return WriteBackT<float>(p, begin, end);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/isa_dispatch.h"

namespace txops {
int64_t conv_scratch_floats(const ConvProblem& p) {
  const int64_t stride = (p.channel_chunk + 15) / 16 * 16;  // whole vectors
  const int64_t staged = (2 * p.width + 2) * stride;       // the staged path: 2K + 2 fp32 rows
  const int64_t segment = 2 * (kConvSegment + 2 * 16);    // the token-contiguous path: carry + segment, out
  // The contiguous path: K + 1 fp32 rows over all channels (weights, bias), the accumulators, and K rows of T
  // (history, zeros) of one item.
  const int64_t contiguous = (p.width + 1) * conv_weight_stride(p) + kConvTokenGroup * kConvAccBlock + p.width * stride;
  return std::max({staged, segment, contiguous});
}

ConvPath conv_path(const ConvProblem& p) {
  const int64_t xc = p.x.strides[p.x.ndim - 1], yc = p.y.strides[p.y.ndim - 1];
  if (xc == 1 && yc == 1) return ConvPath::kChannelContiguous;
  if (p.x_token_stride == 1 && p.y_token_stride == 1) return ConvPath::kTokenContiguous;
  return ConvPath::kStaged;
}
ConvForwardFn* select_conv_forward(Isa isa) { return TXOPS_SELECT_KERNEL(isa, ConvForward); }
ConvWriteBackFn* select_conv_write_back(Isa isa) { return TXOPS_SELECT_KERNEL(isa, ConvWriteBack); }
}  // namespace txops
#endif
