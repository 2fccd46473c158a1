// rope_family_cases.h — RotaryPositionEmbedding(V2 / Grad) and RopeWithSinCosCache(V2) problems, and runners like
// rope_cases.h's: guarded random tensors, the fp64 reference (reference_family.cpp), the fast op (txops:: C++ API)
// under the current ISA / thread settings; checks status, the planned kernels' ISA, every output against the
// tolerance table, and that no byte outside the outputs changed (guards, padding, inputs, untouched dcos/dsin).
// "" on success, else a one-line description; optionally the outputs' bit patterns.
#ifndef TXOPS_TESTS_SUPPORT_ROPE_FAMILY_CASES_H_
#define TXOPS_TESTS_SUPPORT_ROPE_FAMILY_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "support/rope_cases.h"
#include "support/rope_test_util.h"
#include "txops/txops.h"

namespace txops {
namespace testing {

// aclnnRotaryPositionEmbedding / V2 (rotate) / Grad: x (rank 3 or 4), cos/sin of `cos_shape` (right-aligned
// broadcast; empty = x's shape).
struct RotaryEmbeddingCase {
  DType x_dtype = DType::kF32, cs_dtype = DType::kF32;
  RotaryMode mode = RotaryMode::kHalf;
  std::vector<int64_t> x_shape = {2, 3, 5, 64};
  std::vector<int64_t> cos_shape;
  bool cs_stride0 = false;   // cos/sin at x's shape with stride 0 on the broadcast dims (same rank only)
  bool backward = false;
  bool with_x = true;        // backward: pass x, check dcos / dsin
  bool with_rotate = false;  // forward: a (D, D) signed-permutation-plus rotate matrix (V2)
  bool in_place = false;     // out is x (forward) / dx is dy (backward)
  ViewStyle x_style = ViewStyle::kContiguous, cs_style = ViewStyle::kContiguous, out_style = ViewStyle::kContiguous;
  uint32_t seed = 1;
  std::string describe() const;
};

// aclnnRopeWithSinCosCache(V2): query (T, Nq * head_size), key (T, Nk * head_size), cache (max_pos, rotary_dim),
// positions (T,) or (sections, T) random in [0, max_pos) — out of order, repeats included.
struct SinCosCacheCase {
  DType x_dtype = DType::kF32, cache_dtype = DType::kF32, positions_dtype = DType::kI64;
  int64_t tokens = 5, nq = 4, nk = 2, head_size = 64, rotary_dim = 64, max_pos = 37;
  bool neox = true;
  std::vector<int64_t> section;  // empty: rope mode
  int64_t cache_mode = 0;
  bool in_place = false;
  bool positions_strided = false;  // positions with a padded row / token stride 2
  ViewStyle x_style = ViewStyle::kContiguous, cache_style = ViewStyle::kContiguous,
            out_style = ViewStyle::kContiguous;
  uint32_t seed = 1;
  std::string describe() const;
};

std::string run_case(const RotaryEmbeddingCase& c, std::vector<uint64_t>* bits = nullptr);
std::string run_case(const SinCosCacheCase& c, std::vector<uint64_t>* bits = nullptr);

// `count` bf16 bit patterns, one in four a special value (NaNs quiet and signalling of both signs and payloads up to
// 0x7FFF, infinities, zeros, denormals, values next to a power of two, the largest finite), the rest ordinary values
// in [2^-7, 2); deterministic in `seed`. For the stores' rounding on every path: inf * 0 and NaN operands.
std::vector<uint16_t> bf16_with_special_values(size_t count, uint32_t seed);
// Two bf16 outputs agree: the same bits, or both NaN (docs/rope.md: NaN payloads aside).
inline bool same_bf16_or_both_nan(uint16_t a, uint16_t b) {
  return a == b || ((a & 0x7FFF) > 0x7F80 && (b & 0x7FFF) > 0x7F80);
}

}  // namespace testing
}  // namespace txops

#endif  // TXOPS_TESTS_SUPPORT_ROPE_FAMILY_CASES_H_
