// fuzz_causal_conv1d.cpp — aclnnCausalConv1dFn and aclnnCausalConv1dUpdate (one per input): x (B, L, dim) or
// varlen (cuSeqLen, dim), weight (K, dim), convStatesRef (lines, stateLen, dim) updated in place, and the int32
// host-read tensors — queryStartLoc (B+1,), cacheIndices (B,) with nullBlockId, initialStateMode /
// numAcceptedTokens (B,) — valid or with one rule broken (out of range, repeated lines, decreasing starts); the
// activation string; y separate or aliasing x. Every tensor's layout is mutated by the Session.
#include <algorithm>

#include "aclnnop/aclnn_causal_conv1d_fn.h"
#include "aclnnop/aclnn_causal_conv1d_update.h"
#include "fuzz_util.h"

TXFUZZ_TARGET(causal_conv1d) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  const bool update = s.flag("op", "update");
  static const int64_t kDims[] = {64, 8, 1, 7, 16, 65, 130, 4096, 0, 3, 300, 4139};
  const int64_t B = 1 + s.range(0, 3, "shape", "B"), K = 2 + s.range(0, 2, "shape", "K");
  int64_t dim = s.pick(kDims, "shape", "dim");
  const bool varlen = s.flag("shape", "varlen");
  const bool spec = update && s.flag("shape", "spec");  // several tokens per sequence need numAcceptedTokens
  const int64_t max_len = update && !spec ? 1 : (s.flag("shape", "long") ? 300 : 6);
  std::vector<int64_t> starts(1, 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t raw = s.range(0, max_len, "lens", "len");
    starts.push_back(starts.back() + (varlen ? (raw + 1) % (max_len + 1) : 0));  // varlen: 0 tokens allowed
  }
  int64_t L = varlen ? 0 : 1 + s.range(0, max_len - 1, "shape", "L");
  int64_t lines = B + s.range(0, 4, "shape", "extra_lines");
  int64_t state_len = K - 1 + s.range(0, 3, "shape", "extra_state");
  while (sat_mul(std::max(varlen ? starts.back() : B * L, int64_t{1}), std::max<int64_t>(dim, 1)) > kMaxElements ||
         sat_mul(sat_mul(lines, state_len), std::max<int64_t>(dim, 1)) > kMaxElements) {
    if (dim > 8) dim /= 2;
    else if (L > 1) L /= 2;
    else break;
  }
  const int64_t tokens = varlen ? starts.back() : B * L;
  // queryStartLoc: as built, or with a rule broken
  std::vector<int64_t> qsl = starts;
  if (!varlen)
    for (int64_t b = 0; b <= B; ++b) qsl[b] = b * L;
  switch (s.range(0, 3, "qslv", "mut")) {
    case 1: qsl[s.range(0, B, "qslv", "at")] = s.flag("qslv", "neg") ? -1 : INT32_MAX; break;
    case 2: std::reverse(qsl.begin(), qsl.end()); break;
    case 3: qsl.back() += 1; break;
    default: break;
  }
  // cacheIndices: a permutation, with nullBlockId, repeated, or out of range
  const int64_t null_id = s.flag("attr", "null_is_line") ? 0 : -1;
  std::vector<int64_t> idx(static_cast<size_t>(B));
  const int64_t rotate = s.range(0, lines - 1, "idxv", "rotate");
  for (int64_t b = 0; b < B; ++b) idx[b] = (b + rotate) % lines;  // distinct: B <= lines
  switch (s.range(0, 4, "idxv", "kind")) {
    case 1: idx[s.range(0, B - 1, "idxv", "at")] = null_id; break;
    case 2: idx[B - 1] = idx[0]; break;
    case 3: idx[s.range(0, B - 1, "idxv", "at")] = s.flag("idxv", "neg") ? -7 : lines; break;
    case 4: idx[s.range(0, B - 1, "idxv", "at")] = INT32_MIN; break;
    default: break;
  }
  // initialStateMode in {0, 1} (or 2), numAcceptedTokens in [0, stateLen - (K-1)] (or one past)
  std::vector<int64_t> per(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b)
    per[b] = update ? s.range(0, state_len - (K - 1), "perv", "n") : s.range(0, 1, "perv", "mode");
  if (s.flag("perv", "break")) per[s.range(0, B - 1, "perv", "at")] = update ? state_len - K + 2 : 2;
  static const char* const kActivations[] = {"silu", "none", nullptr, "", "SiLU", "relu"};
  const char* activation = s.pick(kActivations, "attr", "activation");
  const aclDataType dt = s.flag("dtype", "f32") ? ACL_FLOAT : (s.flag("dtype", "f16") ? ACL_FLOAT16 : ACL_BF16);
  std::vector<int64_t> x_dims = varlen ? std::vector<int64_t>{tokens, dim} : std::vector<int64_t>{B, L, dim};
  aclTensor* x = s.tensor("x", x_dims, dt);
  aclTensor* w = s.tensor("w", {K, dim}, dt);
  aclTensor* states = s.tensor("states", {lines, state_len, dim}, dt);
  aclTensor* bias = s.flag("bias", "absent") ? nullptr : s.tensor("bias", {dim}, dt);
  aclTensor* q = (varlen || s.flag("qsl", "given")) ? s.tensor("qsl", {B + 1}, ACL_INT32, &qsl) : nullptr;
  aclTensor* ind = s.flag("idx", "absent") ? nullptr : s.tensor("idx", {B}, ACL_INT32, &idx);
  aclTensor* ps = (spec || s.flag("per", "given")) ? s.tensor("per", {B}, ACL_INT32, &per) : nullptr;
  const int64_t y_kind = s.range(0, 2, "y", "alias");  // 0 separate, 1 x's tensor, 2 x's memory
  aclTensor* y = y_kind == 0 ? s.tensor("y", x_dims, dt) : s.alias("y", x, y_kind - 1);
  if (update) {
    s.two_phases(
        "aclnnCausalConv1dUpdate",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnCausalConv1dUpdateGetWorkspaceSize(x, w, states, bias, q, ind, ps, nullptr, nullptr, activation,
                                                         null_id, -1, y, ws, ex);
        },
        [&](void* m, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnCausalConv1dUpdate(m, n, ex, st); });
  } else {
    s.two_phases(
        "aclnnCausalConv1dFn",
        [&](uint64_t* ws, aclOpExecutor** ex) {
          return aclnnCausalConv1dFnGetWorkspaceSize(x, w, states, bias, q, ind, ps, nullptr, nullptr, nullptr,
                                                     nullptr, activation, null_id, 0, y, ws, ex);
        },
        [&](void* m, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnCausalConv1dFn(m, n, ex, st); });
  }
}
