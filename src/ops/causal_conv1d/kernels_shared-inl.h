// kernels_shared-inl.h — per-target (Highway) pieces of both causal-conv1d kernel files (kernels.cpp: the
// staged and token-contiguous paths and the state write-back; kernels_contiguous.cpp: the channel-contiguous
// path): the SiLU every path applies (so that all give the same bits), the typed views, the K / activation
// dispatch, and the entry point of the channel-contiguous path.
//
// Include after <hwy/highway.h> inside a foreach_target translation unit; per-target include guard below.
#if defined(TXOPS_OPS_CAUSAL_CONV1D_KERNELS_SHARED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_CAUSAL_CONV1D_KERNELS_SHARED_INL_H_
#undef TXOPS_OPS_CAUSAL_CONV1D_KERNELS_SHARED_INL_H_
#else
#define TXOPS_OPS_CAUSAL_CONV1D_KERNELS_SHARED_INL_H_
#endif

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

// The channel-contiguous path (kernels_contiguous.cpp): y of items [begin, end) when x and y have channel stride 1.
void ConvContiguousItems(const ConvProblem& p, const ConvItem* items, int64_t begin, int64_t end, float* scratch,
                         bool weights_staged);

namespace conv {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int kMaxLanes = 16;  // fp32 lanes of the widest target (AVX-512)

// SiLU v / (1 + e^-v): 2^z with z = -v log2(e), split z = n + f, 2^f by a degree-5 minimax polynomial (relative
// error 7.5e-8; ~2e-7 evaluated in fp32) and 2^n by the exponent, then one correctly rounded division. The division
// runs on the divider, beside the FMA pipes that the taps and the polynomial keep busy: in L2 the prefill took 10-12 %
// less time than with the reciprocal estimate and its Newton step (three operations on those pipes) it replaced
// (README.md, "Session 34"). Where 2^z overflows, d = 1 + 2^z is +inf and the quotient -0 (finite v) or NaN (v =
// -inf), as the fp64 formula gives; where it underflows, d = 1 and the result v.
// AVX-512: f = z - floor(z) in [0, 1) by one vreduceps (imm 1: round down) and 2^f * 2^floor(z) by one vscalefps
// of the polynomial by z itself, which saturates to 0 and +inf without a clamp (an infinite z gives f = 0).
// AVX2: z clamped to [-126, 128], |f| <= 1/2, and n comes from adding 1.5 * 2^23 + 127: the sum's low mantissa bits
// are then n + 127, already the biased exponent, so one shift makes 2^n; n = 128 makes exponent 255, +inf (z in
// (127.5, 128] thus gives -0 where the exact value is below 4e-37 in magnitude). A NaN v stays NaN (the clamps
// turn z into a number; v carries the NaN into the quotient). Every path of one target calls this, so all give
// the same bits.
// c0 + c1 f + ... + c5 f^5 as ((c5 f + c4) f^2 + c3 f + c2) f^2 + c1 f + c0: two chains of three instead of
// Horner's five deep (the SiLU's polynomials for 2^f).
HWY_INLINE VF Poly5(DF df, VF f, float c0, float c1, float c2, float c3, float c4, float c5) {
  const VF f2 = hn::Mul(f, f);
  const VF p01 = hn::MulAdd(f, hn::Set(df, c1), hn::Set(df, c0));
  const VF p23 = hn::MulAdd(f, hn::Set(df, c3), hn::Set(df, c2));
  const VF p45 = hn::MulAdd(f, hn::Set(df, c5), hn::Set(df, c4));
  return hn::MulAdd(hn::MulAdd(p45, f2, p23), f2, p01);
}

HWY_INLINE VF Silu(DF df, VF v) {
#if HWY_TARGET == HWY_SCALAR  // one lane: the libm functions (exp overflows to +inf as above)
  const float s = hn::GetLane(v);
  return hn::Set(df, s / (1.0f + std::exp(-s)));
#else
  VF z = hn::Mul(v, hn::Set(df, -1.44269504088896341f));
#if HWY_TARGET == HWY_AVX3
  const VF f{_mm512_reduce_ps(z.raw, 1)};
  const VF poly = Poly5(df, f, 0.9999999404f, 0.6931530833f, 0.2401536107f, 0.05582631752f, 0.008989340626f,
                        0.001877576695f);  // 2^f on [0, 1)
  const VF d = hn::Add(VF{_mm512_scalef_ps(poly.raw, z.raw)}, hn::Set(df, 1.0f));  // 1 + 2^f 2^floor(z)
#else
  z = hn::Min(hn::Max(z, hn::Set(df, -126.0f)), hn::Set(df, 128.0f));
  const hn::RebindToUnsigned<DF> du;
  const VF magic = hn::Set(df, 12583039.0f);  // 1.5 * 2^23 + 127: exact, and ulp 1 for |z| <= 128
  const VF shifted = hn::Add(z, magic);        // z rounded to an integer (a tie goes to odd n: magic is odd)
  const VF f = hn::Sub(z, hn::Sub(shifted, magic));
  const VF poly = Poly5(df, f, 1.0000001192092896f, 0.6931469440460205f, 0.24022120237350464f, 0.05550713092088699f,
                        0.009675541892647743f, 0.0013276472454890609f);  // 2^f on [-1/2, 1/2]
  const VF scale = hn::BitCast(df, hn::ShiftLeft<23>(hn::BitCast(du, shifted)));  // 2^n: bits (n + 127) << 23
  const VF d = hn::MulAdd(poly, scale, hn::Set(df, 1.0f));                        // 1 + 2^z
#endif
  return hn::Div(v, d);
#endif
}

// `count` raw elements `stride` apart (in T) from src to dst. memmove, not memcpy: a strided conv-state view that
// shares memory with x is trusted, not judged, by the overlap check (core/view_checks.h); its values are then
// unspecified, but the copy must stay defined behaviour (the RoPE cache op's twin of this copy was a fuzzer find).
template <class T>
HWY_INLINE void CopyElements(const T* src, int64_t src_stride, T* dst, int64_t dst_stride, int64_t count) {
  if (src_stride == 1 && dst_stride == 1) {
    std::memmove(dst, src, static_cast<size_t>(count) * sizeof(T));
    return;
  }
  for (int64_t c = 0; c < count; ++c) std::memmove(dst + c * dst_stride, src + c * src_stride, sizeof(T));
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

// The state write-back (problem.h, pass 2) of sequence b's channels [c0, c1): row r of its line takes p[src(r)],
// prefill the last S entries of p (rows with src < 0 stay as they are), update the window moved by one token
// (rows r < min(K-2+L, S)). src(r) - r is the same for every row. Where every history row read lies at or below the
// row it goes to (the update's shift by one, and a prefill unless a long state keeps old rows below), rows copied
// in increasing order read each history row before it is overwritten, so they go straight from row to row. Else
// (rows move up within the line, or there is no history: zeros) the history rows of each block of
// kConvStateBlock channels are saved as stored first. (The save as `rep movsq` was 87 % of the write-back's time
// in the 64-sequence decode on a Zen 4: conv README, session 32.)
template <class T>
void WriteBackChannels(const ConvProblem& p, const Typed<T>& v, int64_t b, int64_t c0, int64_t c1) {
  if (p.line[b] < 0) return;
  const int64_t K = p.width, S = p.state_len, L = p.length[b];
  const int64_t P = K - 1 + L, rows = p.update ? std::min(K - 2 + L, S) : S;
  const int64_t shift = p.update ? 1 : P - S;  // src(r) - r
  const int64_t history_row = p.history_row[b];
  const bool direct = history_row >= 0 && history_row + shift >= 0;
  T history[3][kConvStateBlock];
  for (int64_t cb = c0; cb < c1; cb += kConvStateBlock) {
    const int64_t nc = std::min(kConvStateBlock, c1 - cb);
    T* line = v.states + p.line[b] * v.sl + cb * v.sc;
    const T* xb = v.x + p.x_offset[b] + cb * v.xc;
    if (!direct) {
      for (int64_t i = 0; i < K - 1; ++i) {
        if (history_row >= 0)
          CopyElements(line + (history_row + i) * v.sr, v.sc, history[i], 1, nc);
        else
          std::memset(static_cast<void*>(history[i]), 0, sizeof(history[i]));  // +0 in every storage type
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = shift + r;
      if (src < 0) continue;
      if (src >= K - 1)
        CopyElements(xb + (src - (K - 1)) * p.x_token_stride, v.xc, line + r * v.sr, v.sc, nc);
      else if (direct)
        CopyElements(line + (history_row + src) * v.sr, v.sc, line + r * v.sr, v.sc, nc);
      else
        CopyElements(history[src], 1, line + r * v.sr, v.sc, nc);
    }
  }
}

}  // namespace conv
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
