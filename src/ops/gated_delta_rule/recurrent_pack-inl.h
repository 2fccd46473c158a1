// recurrent_pack-inl.h — per-target (Highway) pieces the recurrent kernels share (kernels_recurrent.cpp and
// kernels_one_token-inl.h): the vector type, the register budget and the token pack (packed fp32 inputs of a
// token block).
//
// Include after <hwy/highway.h> inside a foreach_target translation unit; per-target include guard below.
#if defined(TXOPS_OPS_GATED_DELTA_RULE_RECURRENT_PACK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_OPS_GATED_DELTA_RULE_RECURRENT_PACK_INL_H_
#undef TXOPS_OPS_GATED_DELTA_RULE_RECURRENT_PACK_INL_H_
#else
#define TXOPS_OPS_GATED_DELTA_RULE_RECURRENT_PACK_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace gdr {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Vector registers a row block may hold (the rest: accumulators, broadcasts, loads).
constexpr int kRegisterBudget = (HWY_TARGET == HWY_AVX2) ? 8 : 16;

// Packed fp32 inputs of one token block of one (sequence, value head); rows of key_dim_padded floats.
struct TokenPack {
  int64_t dkp = 0, dv = 0;
  float* key = nullptr;          // k
  float* decayed_key = nullptr;  // a ⊙ k
  float* decayed_query = nullptr;  // a ⊙ q (gk present), else null
  float* key_dot_query = nullptr;  // n: k . (q scale)
  float* decay = nullptr;        // per-column decay (gk present), else null
  float* alpha = nullptr;        // scalar decay per token (gk absent)
  float* query = nullptr;        // q scale
  float* value = nullptr;        // n x dv
  float* beta = nullptr;         // n
  float* out = nullptr;          // n x dv results
};

}  // namespace gdr
}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
