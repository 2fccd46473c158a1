// fuzz_rotary_position_embedding.cpp — aclnnRotaryPositionEmbedding, its V2 (with or without a rotate matrix) and
// aclnnRotaryPositionEmbeddingGrad (with or without xOptional; dcos / dsin at cos's shape or empty placeholders):
// x rank 3 or 4, every mode code (and invalid ones), cos/sin of any broadcast pattern and of lower rank, out
// separate or over x's memory (the same tensor, the same view, shifted). Every tensor's layout is mutated.
#include "aclnnop/aclnn_rotary_position_embedding.h"
#include "aclnnop/aclnn_rotary_position_embedding_grad.h"
#include "aclnnop/aclnn_rotary_position_embedding_v2.h"
#include "fuzz_util.h"

TXFUZZ_TARGET(rotary_position_embedding) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  const int64_t op = s.range(0, 2, "op", "which");  // 0 V1, 1 V2, 2 Grad
  static const int64_t kD[] = {64, 2, 4, 8, 16, 12, 128, 6, 10, 96, 1024, 3, 0, 1026};
  const bool rank3 = s.flag("shape", "rank3");
  int64_t A = 1 + s.range(0, 3, "shape", "A"), B = 1 + s.range(0, 7, "shape", "B");
  int64_t C = rank3 ? 1 : 1 + s.range(0, 7, "shape", "C"), D = s.pick(kD, "shape", "D");
  fit_budget({&A, &B, &C}, kMaxElements / (D > 0 ? D : 1));
  const std::vector<int64_t> x_dims = rank3 ? std::vector<int64_t>{A, B, D} : std::vector<int64_t>{A, B, C, D};
  // cos: each leading dim 1 or x's, then dropped from the front (lower rank) by the input's choice
  std::vector<int64_t> cos_dims;
  for (size_t d = 0; d + 1 < x_dims.size(); ++d) cos_dims.push_back(s.flag("cosdim", "full") ? x_dims[d] : 1);
  cos_dims.push_back(D);
  const int64_t drop = s.range(0, static_cast<int64_t>(cos_dims.size()) - 1, "cosdim", "drop");
  cos_dims.erase(cos_dims.begin(), cos_dims.begin() + drop);
  static const int64_t kModes[] = {0, 1, 2, 3, -1, 4, INT64_MAX};
  const int64_t mode = s.pick(kModes, "attr", "mode");
  const aclDataType xdt = float_dtype(s, "dtype", "x");
  const aclDataType cdt = s.flag("dtype", "cos_f32") ? ACL_FLOAT : xdt;
  aclTensor* x = s.tensor("x", x_dims, xdt);
  aclTensor* cos = s.tensor("cos", cos_dims, cdt);
  aclTensor* sin = s.tensor("sin", cos_dims, cdt);
  const int64_t out_kind = s.range(0, 3, "out", "alias");  // 0 separate, 1 same tensor, 2 same memory, 3 shifted
  aclTensor* out = out_kind == 0 ? s.tensor("out", x_dims, xdt) : s.alias("out", x, out_kind - 1);
  if (op == 0) {
    s.two_phases(
        "aclnnRotaryPositionEmbedding",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnRotaryPositionEmbeddingGetWorkspaceSize(x, cos, sin, mode, out, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnRotaryPositionEmbedding(w, n, ex, st); });
  } else if (op == 1) {
    aclTensor* rotate = s.flag("rotate", "absent") ? nullptr : s.tensor("rotate", {D, D}, xdt);
    s.two_phases(
        "aclnnRotaryPositionEmbeddingV2",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnRotaryPositionEmbeddingV2GetWorkspaceSize(x, cos, sin, mode, rotate, out, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) {
          return aclnnRotaryPositionEmbeddingV2(w, n, ex, st);
        });
  } else {
    aclTensor* saved = s.flag("xopt", "absent") ? nullptr : s.tensor("xopt", x_dims, xdt);
    const bool placeholder = s.flag("dcs", "empty");
    std::vector<int64_t> empty_dims(cos_dims.size(), 1);
    empty_dims.back() = 0;
    aclTensor* dcos = s.tensor("dcos", placeholder ? empty_dims : cos_dims, cdt);
    aclTensor* dsin = s.tensor("dsin", placeholder ? empty_dims : cos_dims, cdt);
    s.two_phases(
        "aclnnRotaryPositionEmbeddingGrad",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnRotaryPositionEmbeddingGradGetWorkspaceSize(x, cos, sin, saved, mode, out, dcos, dsin, ws, ex);
        },
        [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) {
          return aclnnRotaryPositionEmbeddingGrad(w, n, ex, st);
        });
  }
}
