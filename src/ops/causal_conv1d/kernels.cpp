// kernels.cpp — the causal-conv1d kernels (Highway: AVX3, AVX2, SCALAR), in the two passes of problem.h.
// Pass 1 (y) has three code paths chosen by the layout (conv_path): channel-contiguous rows read straight from x,
// four tokens per pass; token-contiguous channels streamed in segments; anything else staged row by row into a
// ring of K fp32 rows. All accumulate y_t = act(bias + sum_j w[j] * p[t+j]) in that fixed order with fused
// multiply-adds and round once into y, so they give the same bits. Pass 2 (state write-back): per block of
// channels of a sequence, the history rows are saved as stored, then the rows the operator's rule names are
// copied, element for element, from them or from x. Every element's arithmetic is fixed by its position, not by
// the item or thread computing it, so results do not depend on the partition.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/causal_conv1d/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/simd_convert-inl.h"
#include "ops/causal_conv1d/problem.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// SiLU v / (1 + e^-v). e^-v = 2^z, z = -v log2(e) clamped to [-126, 126] (2^126 < FLT_MAX; beyond, SiLU is v or
// -0 to fp32 precision), split z = n + f with |f| <= 1/2: 2^f by its degree-6 Taylor polynomial (relative error
// < 1.3e-7), 2^n by the exponent bits; 1/(1 + 2^z) by the hardware reciprocal and one Newton step (~1e-7).
// A NaN v stays NaN (the clamps turn z into a number; v carries the NaN into the product). Highway's Exp and a
// division cost three times as much, and the conv is otherwise memory-bound.
HWY_INLINE VF Silu(DF df, VF v) {
#if HWY_TARGET == HWY_SCALAR  // one lane: the libm functions
  const float s = hn::GetLane(v);
  return hn::Set(df, s / (1.0f + std::exp(std::min(-s, 88.0f))));
#else
  const hn::RebindToSigned<DF> di;
  VF z = hn::Mul(v, hn::Set(df, -1.44269504088896341f));
  z = hn::Min(hn::Max(z, hn::Set(df, -126.0f)), hn::Set(df, 126.0f));
  const VF n = hn::Round(z);
  const VF f = hn::Sub(z, n);
  // 2^f on [-1/2, 1/2]: the Taylor coefficients (ln 2)^k / k! of e^(f ln 2), k = 6 .. 0.
  VF poly = hn::Set(df, 1.5403530393381609e-4f);
  poly = hn::MulAdd(poly, f, hn::Set(df, 1.3333558146428443e-3f));
  poly = hn::MulAdd(poly, f, hn::Set(df, 9.6181291076284772e-3f));
  poly = hn::MulAdd(poly, f, hn::Set(df, 5.5504108664821580e-2f));
  poly = hn::MulAdd(poly, f, hn::Set(df, 2.4022650695910071e-1f));
  poly = hn::MulAdd(poly, f, hn::Set(df, 6.9314718055994531e-1f));
  poly = hn::MulAdd(poly, f, hn::Set(df, 1.0f));
  const VF scale = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127))));
  const VF d = hn::MulAdd(poly, scale, hn::Set(df, 1.0f));  // 1 + 2^z
  VF r = hn::ApproximateReciprocal(d);
  r = hn::Mul(r, hn::NegMulAdd(d, r, hn::Set(df, 2.0f)));  // r (2 - d r)
  return hn::Mul(v, r);
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

// The views' element pointers and strides, typed.
template <class T>
struct Typed {
  explicit Typed(const ConvProblem& p)
      : x(static_cast<const T*>(p.x.data)), weight(static_cast<const T*>(p.weight.data)),
        bias(static_cast<const T*>(p.bias.data)), y(static_cast<T*>(p.y.data)), states(static_cast<T*>(p.states.data)),
        xc(p.x.strides[p.x.ndim - 1]), yc(p.y.strides[p.y.ndim - 1]), wk(p.weight.strides[0]),
        wc(p.weight.strides[1]), bc(p.has_bias ? p.bias.strides[0] : 0), sl(p.states.strides[0]),
        sr(p.states.strides[1]), sc(p.states.strides[2]) {}
  const T* x;
  const T* weight;
  const T* bias;
  T* y;
  T* states;
  int64_t xc, yc, wk, wc, bc, sl, sr, sc;
};

// Calls fn(integral_constant<int, K>, integral_constant<bool, silu>) for the problem's K and activation: the
// kernels take both as template parameters, so that the tap loops unroll and hold nothing but arithmetic.
template <class Fn>
HWY_INLINE void WithWidthAndActivation(const ConvProblem& p, const Fn& fn) {
  const auto with_activation = [&](auto k) {
    if (p.activation == ConvActivation::kSilu)
      fn(k, std::true_type());
    else
      fn(k, std::false_type());
  };
  switch (p.width) {
    case 2: return with_activation(std::integral_constant<int, 2>());
    case 3: return with_activation(std::integral_constant<int, 3>());
    default: return with_activation(std::integral_constant<int, 4>());
  }
}

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

// ---- the channel-contiguous path: x and y with channel stride 1 (CANN's layouts) ----
// No staging: window rows are read straight from x (the rows of the last K tokens are in cache), weights and bias
// converted on load, and four tokens are computed per pass over a channel vector, sharing the K weight vectors
// (7 row loads for 4 outputs at K = 4). Same operations in the same order as the staged path, so the same bits.
template <class T, int K, bool kSilu, int kTokens>
HWY_INLINE void ContiguousGroup(DF df, const T* const* rows, const T* w, int64_t wk, const T* bias, T* const* ys,
                                int64_t c) {
  VF wj[K];
  for (int j = 0; j < K; ++j) wj[j] = LoadF32(df, w + j * wk + c);
  const VF b = bias != nullptr ? LoadF32(df, bias + c) : hn::Zero(df);
  VF acc[kTokens];
  for (int u = 0; u < kTokens; ++u) acc[u] = b;
  // Window row i (0 .. K-2+kTokens) serves token u at tap j = i - u.
  for (int i = 0; i < K - 1 + kTokens; ++i) {
    const VF xi = rows[i] != nullptr ? LoadF32(df, rows[i] + c) : hn::Zero(df);
    for (int u = 0; u < kTokens; ++u) {
      const int j = i - u;
      if (j >= 0 && j < K) acc[u] = hn::MulAdd(wj[j], xi, acc[u]);
    }
  }
  for (int u = 0; u < kTokens; ++u) StoreF32(df, kSilu ? Silu(df, acc[u]) : acc[u], ys[u] + c);
}

constexpr int kMaxLanes = 16;  // fp32 lanes of the widest target (AVX-512)

// The same for a tail of fewer than N channels, element by element through fp32 buffers.
template <class T, int K, bool kSilu, int kTokens>
void ContiguousTail(DF df, const T* const* rows, const T* w, int64_t wk, const T* bias, T* const* ys, int64_t c,
                    int64_t count) {
  HWY_ALIGN T row_buf[K - 1 + kTokens][kMaxLanes];
  HWY_ALIGN T w_buf[K][kMaxLanes];
  HWY_ALIGN T b_buf[kMaxLanes];
  HWY_ALIGN T y_buf[kTokens][kMaxLanes];
  std::memset(static_cast<void*>(row_buf), 0, sizeof(row_buf));
  std::memset(static_cast<void*>(w_buf), 0, sizeof(w_buf));
  std::memset(static_cast<void*>(b_buf), 0, sizeof(b_buf));
  const T* tail_rows[K - 1 + kTokens];
  T* tail_ys[kTokens];
  for (int i = 0; i < K - 1 + kTokens; ++i) {
    if (rows[i] != nullptr) std::memcpy(static_cast<void*>(row_buf[i]), rows[i] + c, count * sizeof(T));
    tail_rows[i] = rows[i] != nullptr ? row_buf[i] : nullptr;
  }
  for (int j = 0; j < K; ++j) std::memcpy(static_cast<void*>(w_buf[j]), w + j * wk + c, count * sizeof(T));
  if (bias != nullptr) std::memcpy(static_cast<void*>(b_buf), bias + c, count * sizeof(T));
  for (int u = 0; u < kTokens; ++u) tail_ys[u] = y_buf[u];
  ContiguousGroup<T, K, kSilu, kTokens>(df, tail_rows, w_buf[0], kMaxLanes, bias != nullptr ? b_buf : nullptr,
                                        tail_ys, 0);
  for (int u = 0; u < kTokens; ++u) std::memcpy(static_cast<void*>(ys[u] + c), y_buf[u], count * sizeof(T));
}

template <class T, int K, bool kSilu>
void ContiguousItem(const ConvProblem& p, const ConvItem& it, const Typed<T>& v, T* stage) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t b = it.sequence, c0 = it.channel_begin, nc = it.channel_end - it.channel_begin;
  const T* xb = v.x + p.x_offset[b] + c0;
  T* yb = v.y + p.y_offset[b] + c0;
  // Weights, bias and history rows with a channel stride other than 1 (transformers' (dim, K) weight, a
  // channel-first state) are copied, as stored, into `stage` (K + 1 + K-1 rows of nc) first.
  const T* w = v.weight + c0 * v.wc;
  int64_t wk = v.wk;
  if (v.wc != 1) {
    for (int64_t j = 0; j < K; ++j) CopyElements(w + j * v.wk, v.wc, stage + j * nc, 1, nc);
    w = stage, wk = nc;
  }
  const T* bias = p.has_bias ? v.bias + c0 * v.bc : nullptr;
  if (bias != nullptr && v.bc != 1) {
    CopyElements(bias, v.bc, stage + K * nc, 1, nc);
    bias = stage + K * nc;
  }
  const T* history = p.history_row[b] >= 0 ? v.states + p.line[b] * v.sl + p.history_row[b] * v.sr + c0 * v.sc
                                            : nullptr;
  int64_t history_stride = v.sr;
  if (history != nullptr && v.sc != 1 && it.token_begin < K - 1) {
    T* rows = stage + (K + 1) * nc;
    for (int64_t i = 0; i < K - 1; ++i) CopyElements(history + i * v.sr, v.sc, rows + i * nc, 1, nc);
    history = rows, history_stride = nc;
  }
  // Window row i of token t is p[t + i]: x row t + i - (K-1), or history row t + i (null: zeros).
  auto window_row = [&](int64_t index) -> const T* {
    if (index >= K - 1) return xb + (index - (K - 1)) * p.x_token_stride;
    return history != nullptr ? history + index * history_stride : nullptr;
  };
  auto run = [&](auto tokens_tag, int64_t t) {
    constexpr int kTokens = decltype(tokens_tag)::value;
    const T* rows[K - 1 + kTokens];
    T* ys[kTokens];
    for (int i = 0; i < K - 1 + kTokens; ++i) rows[i] = window_row(t + i);
    for (int u = 0; u < kTokens; ++u) ys[u] = yb + (t + u) * p.y_token_stride;
    int64_t c = 0;
    for (; c + N <= nc; c += N) ContiguousGroup<T, K, kSilu, kTokens>(df, rows, w, wk, bias, ys, c);
    if (c < nc) ContiguousTail<T, K, kSilu, kTokens>(df, rows, w, wk, bias, ys, c, nc - c);
  };
  int64_t t = it.token_begin;
  for (; t + 4 <= it.token_end; t += 4) run(std::integral_constant<int, 4>(), t);
  for (; t < it.token_end; ++t) run(std::integral_constant<int, 1>(), t);
}

// ---- the token-contiguous path: x and y with token stride 1 (transformers' channel-first (B, dim, L)) ----
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
      LoadRowF32(xc + t0, 1, n, padded + N, buf + K - 1);
      for (int64_t i = 0; i < padded; i += N) {
        VF acc = bias;
        for (int j = 0; j < K; ++j) acc = hn::MulAdd(w[j], hn::LoadU(df, buf + i + j), acc);
        if (kSilu) acc = Silu(df, acc);
        hn::Store(acc, df, out + i);
      }
      StoreRowF32(out, n, yc + t0, 1);
      std::memmove(buf, buf + n, (K - 1) * sizeof(float));  // the last K-1 values carry into the next segment
    }
  }
}

template <class T>
void ForwardT(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  const int64_t K = p.width, width = std::min(p.dim, kConvChannelChunk), stride = (width + N - 1) / N * N;
  const Typed<T> v(p);
  float* ring = scratch;               // K rows
  float* w = ring + K * stride;        // K rows
  float* bias = w + K * stride;        // 1 row
  float* out = bias + stride;          // 1 row
  const ConvPath path = conv_path(p);
  for (int64_t i = begin; i < end; ++i) {
    const ConvItem& it = items[i];
    const int64_t b = it.sequence, c0 = it.channel_begin, nc = it.channel_end - it.channel_begin;
    const int64_t padded = (nc + N - 1) / N * N;
    if (path == ConvPath::kChannelContiguous && p.line[b] >= 0) {
      T* stage = reinterpret_cast<T*>(scratch);  // this path does not use the fp32 scratch otherwise
      WithWidthAndActivation(p, [&](auto k, auto silu) {
        ContiguousItem<T, decltype(k)::value, decltype(silu)::value>(p, it, v, stage);
      });
      continue;
    }
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
}

// Row r of the line takes p[src(r)]: prefill the last S entries of p (rows with src < 0 stay as they are), update
// the window moved by one token (rows r < min(K-2+L, S)).
template <class T>
void WriteBackT(const ConvProblem& p, int64_t begin, int64_t end) {
  const int64_t K = p.width, S = p.state_len, blocks = (p.dim + kConvStateBlock - 1) / kConvStateBlock;
  const Typed<T> v(p);
  T history[3][kConvStateBlock];  // the history rows as stored, saved before any row is written
  for (int64_t item = begin; item < end; ++item) {
    const int64_t b = item / blocks, c0 = (item % blocks) * kConvStateBlock;
    const int64_t nc = std::min(kConvStateBlock, p.dim - c0), L = p.length[b];
    if (p.line[b] < 0) continue;
    T* line = v.states + p.line[b] * v.sl + c0 * v.sc;
    const T* xb = v.x + p.x_offset[b] + c0 * v.xc;
    for (int64_t i = 0; i < K - 1; ++i) {
      if (p.history_row[b] >= 0)
        CopyElements(line + (p.history_row[b] + i) * v.sr, v.sc, history[i], 1, nc);
      else
        std::memset(static_cast<void*>(history[i]), 0, sizeof(history[i]));  // +0 in every storage type
    }
    const int64_t P = K - 1 + L, rows = p.update ? std::min(K - 2 + L, S) : S;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = p.update ? 1 + r : P - S + r;
      if (src < 0) continue;
      if (src < K - 1)
        CopyElements(history[src], 1, line + r * v.sr, v.sc, nc);
      else
        CopyElements(xb + (src - (K - 1)) * p.x_token_stride, v.xc, line + r * v.sr, v.sc, nc);
    }
  }
}

}  // namespace

// Exported for the dispatch tables below (the anonymous namespace keeps the helpers private per target).
void ConvForward(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch) {
  switch (p.dtype) {
    case DType::kBF16: return ForwardT<hwy::bfloat16_t>(p, items, begin, end, scratch);
    case DType::kF16: return ForwardT<hwy::float16_t>(p, items, begin, end, scratch);
    default: return ForwardT<float>(p, items, begin, end, scratch);
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
  const int64_t width = std::min(p.dim, kConvChannelChunk), stride = (width + 15) / 16 * 16;  // whole vectors
  const int64_t staged = (2 * p.width + 2) * stride;  // the staged path; also holds the contiguous path's
                                                       // 2K rows of T (weights, bias, history)
  const int64_t segment = 2 * (kConvSegment + 2 * 16);    // the token-contiguous path: carry + segment, out
  return std::max(staged, segment);
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
