// fuzz_chunk_gated_delta_rule.cpp — aclnnChunkGatedDeltaRule (prefill): query/key (T, Nk, Dk), value (T, Nv, Dv),
// beta (T, Nv), initialState/finalState (B, Nv, Dv, Dk), actualSeqLengths (B,) int32 read on the host (sums,
// negative, huge), gOptional (T, Nv) fp32 or null; the chunked and the recurrent kernel, items and chunk mode
// (TXOPS_GDR_KERNEL / TXOPS_GDR_SPLIT); finalState over initialState's memory, out over value's.
#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "gdr.h"

TXFUZZ_TARGET(chunk_gated_delta_rule) {
  using namespace txfuzz;
  Session s(in);
  s.settings();
  gdr_environment(s);
  static const int64_t kDims[] = {16, 32, 64, 128, 8, 1, 3, 48, 100, 256, 257, 0};
  const GdrShape g = decode_gdr_shape(s, 8, 130, kDims);
  const std::vector<int64_t> lens = mutate_lens(s, g.lens);
  const aclDataType adt = float_dtype(s, "dtype", "act");
  const aclDataType sdt = s.flag("dtype", "state_bf16") ? ACL_BF16 : ACL_FLOAT;
  const float scale = s.scale("scale");
  const int64_t T = g.T, B = g.B, Nk = g.Nk, Nv = g.Nv, Dk = g.Dk, Dv = g.Dv;
  aclTensor* q = s.tensor("q", {T, Nk, Dk}, adt);
  aclTensor* k = s.tensor("k", {T, Nk, Dk}, adt);
  aclTensor* v = s.tensor("v", {T, Nv, Dv}, adt);
  aclTensor* beta = s.tensor("beta", {T, Nv}, adt);
  aclTensor* s0 = s.tensor("s0", {B, Nv, Dv, Dk}, sdt);
  aclTensor* len = s.tensor("lens", {B}, ACL_INT32, &lens);
  aclTensor* gt = s.flag("g", "absent") ? nullptr : s.tensor("g", {T, Nv}, ACL_FLOAT);
  const int64_t out_kind = s.range(0, 2, "out", "alias");  // 0 separate, 1 value's tensor, 2 value's memory
  aclTensor* out = out_kind == 0 ? s.tensor("out", {T, Nv, Dv}, adt) : s.alias("out", v, out_kind - 1);
  const int64_t s1_kind = s.range(0, 2, "s1", "alias");
  aclTensor* s1 = s1_kind == 0 ? s.tensor("s1", {B, Nv, Dv, Dk}, sdt) : s.alias("s1", s0, s1_kind - 1);
  s.two_phases(
      "aclnnChunkGatedDeltaRule",
      [&](uint64_t* ws, aclOpExecutor** ex) {
        return aclnnChunkGatedDeltaRuleGetWorkspaceSize(q, k, v, beta, s0, len, gt, scale, out, s1, ws, ex);
      },
      [&](void* w, uint64_t n, aclOpExecutor* ex, aclrtStream st) { return aclnnChunkGatedDeltaRule(w, n, ex, st); });
}
