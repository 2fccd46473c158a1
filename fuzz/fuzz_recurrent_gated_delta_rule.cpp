// fuzz_recurrent_gated_delta_rule.cpp — aclnnRecurrentGatedDeltaRule (decode on a state pool): stateRef
// (BlockNum, Nv, Dv, Dk) updated in place, actualSeqLengths (B,), ssmStateIndices (T,) and numAcceptedTokens (B,)
// int32 read on the host (out of range, conflicting slots, reversed), g (T, Nv) and gk (T, Nv, Dk) fp32 or null.
#include <algorithm>

#include "aclnnop/aclnn_recurrent_gated_delta_rule.h"
#include "gdr.h"

TXFUZZ_TARGET(recurrent_gated_delta_rule) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  gdr_environment(s);
  static const int64_t kDims[] = {16, 128, 64, 32, 8, 1, 3, 48, 100, 256, 512, 513, 0};
  GdrShape g = decode_gdr_shape(s, 4, 80, kDims);
  const std::vector<int64_t> lens = mutate_lens(s, g.lens);
  const int64_t T = g.T, B = g.B, Nk = g.Nk, Nv = g.Nv;
  int64_t slots = std::max<int64_t>(T, 1) + s.range(0, 7, "shape", "extra_slots");
  fit_budget({&slots}, kMaxElements / std::max<int64_t>(1, Nv * g.Dv * g.Dk));
  const int64_t Dk = g.Dk, Dv = g.Dv;
  // slots: token t writes slot t (default), or conflicting / random / out-of-range slots
  std::vector<int64_t> idx(static_cast<size_t>(T));
  const int64_t idx_kind = s.range(0, 4, "idxv", "kind");
  for (int64_t t = 0; t < T; ++t) {
    idx[t] = t % slots;
    if (idx_kind == 2) idx[t] = 0;
    if (idx_kind == 3) idx[t] = s.range(0, slots - 1, "idxv", "slot");
    if (idx_kind == 4) idx[t] = (T - 1 - t) % slots;
  }
  if (idx_kind == 1 && T > 0) {
    const int64_t bad[] = {-1, slots, INT32_MAX, INT32_MIN};
    idx[s.range(0, T - 1, "idxv", "at")] = s.pick(bad, "idxv", "value");
  }
  // accepted tokens per sequence: 1..len (default 1), or 0 / len + 1
  std::vector<int64_t> acc(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) acc[b] = 1 + s.range(0, std::max<int64_t>(g.lens[b] - 1, 0), "accv", "n");
  if (s.flag("accv", "break")) acc[s.range(0, B - 1, "accv", "at")] = s.flag("accv", "zero") ? 0 : g.lens[0] + 1;
  const aclDataType adt = float_dtype(s, "dtype", "act");
  const aclDataType sdt = s.flag("dtype", "state_bf16") ? ACL_BF16 : ACL_FLOAT;
  const float scale = s.scale("scale");
  aclTensor* q = s.tensor("q", {T, Nk, Dk}, adt);
  aclTensor* k = s.tensor("k", {T, Nk, Dk}, adt);
  aclTensor* v = s.tensor("v", {T, Nv, Dv}, adt);
  aclTensor* beta = s.tensor("beta", {T, Nv}, adt);
  aclTensor* state = s.tensor("state", {slots, Nv, Dv, Dk}, sdt);
  aclTensor* len = s.tensor("lens", {B}, ACL_INT32, &lens);
  aclTensor* ind = s.tensor("idx", {T}, ACL_INT32, &idx);
  aclTensor* gt = s.flag("g", "absent") ? nullptr : s.tensor("g", {T, Nv}, ACL_FLOAT);
  aclTensor* gk = s.flag("gk", "present") ? s.tensor("gk", {T, Nv, Dk}, ACL_FLOAT) : nullptr;
  aclTensor* na = s.flag("accv", "absent") ? nullptr : s.tensor("acc", {B}, ACL_INT32, &acc);
  const int64_t out_kind = s.range(0, 2, "out", "alias");  // 0 separate, 1 value's tensor, 2 value's memory
  aclTensor* out = out_kind == 0 ? s.tensor("out", {T, Nv, Dv}, adt) : s.alias("out", v, out_kind - 1);
  s.two_phases(
      "aclnnRecurrentGatedDeltaRule",
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnRecurrentGatedDeltaRuleGetWorkspaceSize(q, k, v, beta, state, len, ind, gt, gk, na, scale, out, ws,
                                                           ex);
      },
      [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnRecurrentGatedDeltaRule(w, n, ex, st); });
}
