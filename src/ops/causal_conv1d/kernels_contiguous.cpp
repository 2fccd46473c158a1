// kernels_contiguous.cpp — the channel-contiguous path of the causal-conv1d forward (x and y with channel stride 1:
// CANN's (B, L, dim) and varlen (T, dim) layouts), Highway AVX3 / AVX2 / SCALAR.
//
// No staging of x: window rows are read straight from it (the rows of the last K tokens are in cache); the weights
// and the bias are converted to fp32 once per call and thread, for all channels. Tokens go outside, the item's
// channels (whole rows) inside. Per group of kTokens tokens and block of kConvAccBlock channels,
// pass (a) computes the accumulators, kTokens per channel group sharing its K weight vectors (11 row loads for 8
// outputs at K = 4), into an fp32 buffer that stays in L1; pass (b) applies the activation and rounds into y.
// Split so, pass (b) is a short loop of independent iterations that the out-of-order core overlaps by the dozen;
// fused, each iteration held four long SiLU chains and the core waited on their latency. Same operations in the same
// order as the other paths (kernels.cpp), so the same bits. Large outputs are written with streaming stores, and a
// sequence's first chunk writes its conv-state line back (problem.h, write_back_in_pass1). x is not prefetched by
// software: the hardware's stream prefetch alone ran ~10 % faster from memory (README.md, "Session 27").
//
// bf16 rows are read and written as "pair" vectors: 2N elements load as N u32 lanes, the even channels are the low
// halves (one shift widens them) and the odd ones the high halves (one mask), and a store merges two rounded vectors
// back with a shift, a mask and an or, so neither direction needs a pack or a permute (on AVX512_BF16 CPUs the store
// rounds with one vcvtne2ps2bf16 and one vpermw instead, the same bits: Codec<bfloat16_t>::Store). The weights and
// bias are kept in the same even / odd order. The rounding (to nearest even) leaves out the NaN quieting of
// RoundToBF16Bits: every NaN here comes from bf16 operands or is the default NaN of an invalid operation, so its low
// 16 bits are zero, the rounding increment cannot carry into the kept bits, and arithmetic has already made it
// quiet: the bits equal f32_to_bf16's for every value.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/causal_conv1d/kernels_contiguous.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/isa_dispatch.h"
#include "core/simd_convert-inl.h"
#include "ops/causal_conv1d/kernels_shared-inl.h"
#include "ops/causal_conv1d/problem.h"

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace {

using namespace conv;  // NOLINT: this target's shared pieces

// The tap and token loops must unroll fully (their trip counts are template constants), so that the accumulators
// live in registers; GCC's heuristics stop short of that for the bf16 pair vectors.
#if defined(__clang__)
#define TXOPS_CONV_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define TXOPS_CONV_UNROLL _Pragma("GCC unroll 16")
#else
#define TXOPS_CONV_UNROLL
#endif

HWY_INLINE bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// How a storage type moves between memory and fp32 vectors. A group is the kVectors * N channels one accumulator
// step covers; Order(i) is where channel i of a group sits in the fp32 rows (weights, bias, accumulators).
// Generic: one vector, natural order (fp32; fp16 by F16C; every type on the SCALAR target).
template <class T>
struct Codec {
  static constexpr int kVectors = 1;
  static HWY_INLINE void Load(DF df, const T* p, VF* v) { v[0] = LoadF32(df, p); }
  static HWY_INLINE void Store(DF df, const VF* v, T* p, bool stream) {
    if (stream && Aligned(p, hn::Lanes(df) * sizeof(T)))
      StreamF32(df, v[0], p);
    else
      StoreF32(df, v[0], p);
  }
  static HWY_INLINE int64_t Order(int64_t i, int64_t) { return i; }
};

#undef TXOPS_CONV_BF16CVT  // set once per target pass
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define TXOPS_CONV_BF16CVT 1
static const bool kBf16Cvt = txops::avx512_bf16_usable();  // CPUID, and TXOPS_NO_AVX512_BF16 unset
#else
#define TXOPS_CONV_BF16CVT 0
#endif

#if HWY_TARGET != HWY_SCALAR
template <>
struct Codec<hwy::bfloat16_t> {
  using BF = hwy::bfloat16_t;
  static constexpr int kVectors = 2;
  static HWY_INLINE void Load(DF df, const BF* p, VF* v) { LoadBF16Pairs(df, p, &v[0], &v[1]); }
  // Rounded to nearest even without the NaN test, which no NaN of this kernel needs (kernels_shared-inl.h); on CPUs
  // with AVX512_BF16 by one vcvtne2ps2bf16 and one vpermw (ConvertPairsToBF16) instead of ten integer operations,
  // except where a vector holds an fp32 denormal (the instruction reads those as zero): the same bits either way.
  static HWY_INLINE void Store(DF df, const VF* v, BF* p, bool stream) {
    const hn::RebindToUnsigned<DF> du;
    uint32_t* q = reinterpret_cast<uint32_t*>(p);
#if TXOPS_CONV_BF16CVT
    if (kBf16Cvt && !AnyDenormal(v[0], v[1])) {
      const hn::Vec<decltype(du)> merged{ConvertPairsToBF16(v[0], v[1])};
      if (stream && Aligned(p, hn::Lanes(du) * sizeof(uint32_t)))
        hn::Stream(merged, du, q);
      else
        hn::StoreU(merged, du, q);
      return;
    }
#endif
    const auto merged = MergeBF16PairsOfBF16Operands(df, v[0], v[1]);
    if (stream && Aligned(p, hn::Lanes(du) * sizeof(uint32_t)))
      hn::Stream(merged, du, q);
    else
      hn::StoreU(merged, du, q);
  }
  static HWY_INLINE int64_t Order(int64_t i, int64_t n) { return (i & 1) * n + (i >> 1); }
};
#endif

// One row of `count` elements `stride` apart as fp32 in the codec's order, zeros up to `padded` (whole groups).
template <class T>
void LoadRowInOrder(const T* src, int64_t stride, int64_t count, int64_t padded, float* dst) {
  using C = Codec<T>;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), G = C::kVectors * N;
  int64_t c = 0;
  if (stride == 1) {
    for (; c + G <= count; c += G) {
      VF v[C::kVectors];
      C::Load(df, src + c, v);
      for (int k = 0; k < C::kVectors; ++k) hn::Store(v[k], df, dst + c + k * N);
    }
  }
  for (int64_t g = c; g < padded; g += G)
    for (int64_t i = 0; i < G; ++i)
      dst[g + C::Order(i, N)] = g + i < count ? LoadScalarF32(src + (g + i) * stride) : 0.0f;
}

// Accumulators of kTokens tokens for the channel group at c (x rows at row_c), into acc_out (rows kConvAccBlock apart).
template <class T, int K, int kTokens>
HWY_INLINE void Accumulate(DF df, const T* const* rows, int64_t row_c, const float* w, int64_t ws, const float* bias,
                           int64_t c, float* acc_out) {
  using C = Codec<T>;
  constexpr int V = C::kVectors;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  VF acc[kTokens][V];
  TXOPS_CONV_UNROLL for (int k = 0; k < V; ++k) {
    const VF b = hn::Load(df, bias + c + k * N);
    TXOPS_CONV_UNROLL for (int u = 0; u < kTokens; ++u) acc[u][k] = b;
  }
  // Window row i (0 .. K-2+kTokens) serves token u at tap j = i - u.
  TXOPS_CONV_UNROLL for (int i = 0; i < K - 1 + kTokens; ++i) {
    VF xi[V];
    C::Load(df, rows[i] + row_c, xi);
    TXOPS_CONV_UNROLL for (int u = 0; u < kTokens; ++u) {
      const int j = i - u;
      if (j < 0 || j >= K) continue;
      TXOPS_CONV_UNROLL for (int k = 0; k < V; ++k) {
        acc[u][k] = hn::MulAdd(hn::Load(df, w + j * ws + c + k * N), xi[k], acc[u][k]);
      }
    }
  }
  TXOPS_CONV_UNROLL for (int u = 0; u < kTokens; ++u)
    TXOPS_CONV_UNROLL for (int k = 0; k < V; ++k) hn::Store(acc[u][k], df, acc_out + u * kConvAccBlock + k * N);
}

// Tokens [t, t + kTokens), channels [cb, cb + nb) of the item (nb <= kConvAccBlock); rows[i] is window row i at
// channel 0.
template <class T, int K, bool kSilu, int kTokens>
void ContiguousBlock(const T* const* rows, const float* w, int64_t ws, const float* bias,
                     T* const* ys, int64_t cb, int64_t nb, bool stream, float* acc) {
  using C = Codec<T>;
  constexpr int V = C::kVectors;
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df)), G = V * N;
  int64_t i = 0;
  for (; i + G <= nb; i += G) Accumulate<T, K, kTokens>(df, rows, cb + i, w, ws, bias, cb + i, acc + i);
  if (i < nb) {  // part of a group: through zero-padded copies of the rows
    HWY_ALIGN T row_buf[K - 1 + kTokens][2 * kMaxLanes] = {};
    const T* tail_rows[K - 1 + kTokens];
    for (int r = 0; r < K - 1 + kTokens; ++r) {
      std::memcpy(static_cast<void*>(row_buf[r]), rows[r] + cb + i, (nb - i) * sizeof(T));
      tail_rows[r] = row_buf[r];
    }
    Accumulate<T, K, kTokens>(df, tail_rows, 0, w, ws, bias, cb + i, acc + i);
  }
  for (int u = 0; u < kTokens; ++u) {
    const float* a = acc + u * kConvAccBlock;
    T* y = ys[u] + cb;
    for (int64_t g = 0; g < nb; g += G) {
      VF v[V];
      for (int k = 0; k < V; ++k) v[k] = kSilu ? Silu(df, hn::Load(df, a + g + k * N)) : hn::Load(df, a + g + k * N);
      if (g + G <= nb) {
        C::Store(df, v, y + g, stream);
      } else {
        HWY_ALIGN T tail[2 * kMaxLanes];
        C::Store(df, v, tail, false);
        std::memcpy(static_cast<void*>(y + g), tail, (nb - g) * sizeof(T));
      }
    }
  }
}

// Tokens per group: kConvTokenGroup (problem.h) where 32 vector registers hold the 16 bf16 accumulators (AVX-512);
// 4 on AVX2's 16 registers (and on SCALAR), as measured on AVX2 machines before session 27.
constexpr int kGroup = HWY_TARGET == HWY_AVX3 ? kConvTokenGroup : 4;
static_assert(kGroup <= kConvTokenGroup, "the scratch holds kConvTokenGroup accumulator rows");

template <class T, int K, bool kSilu>
void ContiguousItem(const ConvProblem& p, const ConvItem& it, const Typed<T>& v, float* scratch) {
  const int64_t b = it.sequence, c0 = it.channel_begin, nc = it.channel_end - it.channel_begin;
  const int64_t wpad = conv_weight_stride(p);
  const T* xb = v.x + p.x_offset[b] + c0;
  T* yb = v.y + p.y_offset[b] + c0;
  // scratch (conv_scratch_floats): K weight rows and the bias over all channels (fp32, codec order; ItemsT
  // converts them), the accumulators, the staged history rows and a zero row (T).
  float* w = scratch;
  float* bias = w + K * wpad;
  float* acc = bias + wpad;
  T* staged = reinterpret_cast<T*>(acc + kGroup * kConvAccBlock);
  T* zeros = staged + (K - 1) * nc;
  // History rows with a channel stride other than 1 (a channel-first state) are copied, as stored, first.
  const T* history = p.history_row[b] >= 0 ? v.states + p.line[b] * v.sl + p.history_row[b] * v.sr + c0 * v.sc
                                            : nullptr;
  int64_t history_stride = v.sr;
  if (it.token_begin < K - 1) {
    if (history == nullptr) {
      std::memset(static_cast<void*>(zeros), 0, nc * sizeof(T));  // +0 in every storage type
    } else if (v.sc != 1) {
      for (int64_t i = 0; i < K - 1; ++i) CopyElements(history + i * v.sr, v.sc, staged + i * nc, 1, nc);
      history = staged, history_stride = nc;
    }
  }
  // Window row i of token t is p[t + i]: x row t + i - (K-1), or history row t + i (zeros without one).
  auto window_row = [&](int64_t index) -> const T* {
    if (index >= K - 1) return xb + (index - (K - 1)) * p.x_token_stride;
    return history != nullptr ? history + index * history_stride : zeros;
  };
  auto run = [&](auto tokens_tag, int64_t t, int64_t cb, int64_t nb) {
    constexpr int kTokens = decltype(tokens_tag)::value;
    const T* rows[K - 1 + kTokens];
    T* ys[kTokens];
    for (int i = 0; i < K - 1 + kTokens; ++i) rows[i] = window_row(t + i);
    for (int u = 0; u < kTokens; ++u) ys[u] = yb + (t + u) * p.y_token_stride;
    ContiguousBlock<T, K, kSilu, kTokens>(rows, w + c0, wpad, bias + c0, ys, cb, nb, p.stream_y, acc);
  };
  // Tokens outside, channels inside: each x row is read as one run of the item's width (whole rows, plan.cpp), which
  // the memory system streams best; the window rows of a token group (11 rows at K = 4, 176 KB for 8192
  // bf16 channels) and the fp32 weights stay in L2. (Super-blocks of 1024 channels outside the token loop, with x read
  // in 2 KB runs of each row, kept the weights in L1 but ran 15-25 % slower from memory: conv README.)
  auto blocks = [&](auto tokens_tag, int64_t t) {
    for (int64_t cb = 0; cb < nc; cb += kConvAccBlock) run(tokens_tag, t, cb, std::min(kConvAccBlock, nc - cb));
  };
  int64_t t = it.token_begin;
  for (; t + kGroup <= it.token_end; t += kGroup) blocks(std::integral_constant<int, kGroup>(), t);
  for (; t < it.token_end; ++t) blocks(std::integral_constant<int, 1>(), t);
  // The sequence's only reader of these history channels is done with them: write the line back while it is in
  // cache (every sequence has a first item: plan.cpp sets this only when no length is zero).
  if (p.write_back_in_pass1 && it.token_begin == 0) WriteBackChannels(p, v, b, c0, it.channel_end);
}

template <class T>
void ItemsT(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
            bool weights_staged) {
  const Typed<T> v(p);
  // The K weight rows and the bias, once per call and scratch (ContiguousItem's scratch layout).
  const int64_t wpad = conv_weight_stride(p);
  if (!weights_staged) {
    for (int64_t j = 0; j < p.width; ++j) LoadRowInOrder(v.weight + j * v.wk, v.wc, p.dim, wpad, scratch + j * wpad);
    float* bias = scratch + p.width * wpad;
    if (p.has_bias)
      LoadRowInOrder(v.bias, v.bc, p.dim, wpad, bias);
    else
      std::fill(bias, bias + wpad, 0.0f);
  }
  for (int64_t i = begin; i < end; ++i) {
    const ConvItem& it = items[i];
    if (p.line[it.sequence] < 0) {  // null_block_id: y is zero, the state is not touched
      T* yb = v.y + p.y_offset[it.sequence] + it.channel_begin;
      for (int64_t t = it.token_begin; t < it.token_end; ++t)
        std::memset(static_cast<void*>(yb + t * p.y_token_stride), 0, (it.channel_end - it.channel_begin) * sizeof(T));
      continue;
    }
    WithWidthAndActivation(p, [&](auto k, auto silu) {
      ContiguousItem<T, decltype(k)::value, decltype(silu)::value>(p, it, v, scratch);
    });
  }
  if (p.stream_y) hwy::FlushStream();  // order the streaming stores before the caller's barrier
}

}  // namespace

void ConvContiguousItems(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
                         bool weights_staged) {
  switch (p.dtype) {
    case DType::kBF16: return ItemsT<hwy::bfloat16_t>(p, items, begin, end, scratch, weights_staged);
    case DType::kF16: return ItemsT<hwy::float16_t>(p, items, begin, end, scratch, weights_staged);
    default: return ItemsT<float>(p, items, begin, end, scratch, weights_staged);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();
