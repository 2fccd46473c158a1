// fuzz_chunk_gated_delta_rule.cpp — aclnnChunkGatedDeltaRule (prefill): query/key (T, Nk, Dk), value (T, Nv, Dv),
// beta (T, Nv), initialState/finalState (B, Nv, Dv, Dk), actualSeqLengths (B,) int32 read on the host (sums,
// negative, huge), gOptional (T, Nv) fp32 or null; the chunked and the recurrent kernel, items and chunk mode
// (TXOPS_GDR_KERNEL / TXOPS_GDR_SPLIT); finalState over initialState's memory, out over value's. With "ex.use":
// aclnnChunkGatedDeltaRuleEx — states in a pool of P rows by stateIndicesOptional (in range, reversed, duplicated,
// out of range), hasInitialStateOptional, snapshots every 0 / 64 / 128 (or an invalid count) into
// checkpointsOptional of about the rows needed, checkpointStartsOptional int64 or null, kernelMode 0..3,
// correctedValuesOptional (T, Nv, Dv) fp32 or bf16 or null. With
// "grad.use": aclnnChunkGatedDeltaRuleGrad on the same forward inputs — gradOut, gradFinalStateOptional (or null),
// the six gradients (gradGOptional with or without gOptional), gradInitialState over gradFinalState's memory;
// with "grad.snapshots", aclnnChunkGatedDeltaRuleGradEx with forwardCheckpointsOptional (rows around those the
// lengths need, fp32 or bf16, absent, or over gradValue's memory) and forwardCorrectedValuesOptional.
#include <algorithm>

#include "aclnnop/aclnn_chunk_gated_delta_rule.h"
#include "aclnnop/aclnn_chunk_gated_delta_rule_ex.h"
#include "aclnnop/aclnn_chunk_gated_delta_rule_grad.h"
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
  const bool ex = s.flag("ex", "use");
  int64_t rows = B + (ex ? s.range(0, 4, "ex", "extra_rows") : 0);  // the pool's rows
  aclTensor* q = s.tensor("q", {T, Nk, Dk}, adt);
  aclTensor* k = s.tensor("k", {T, Nk, Dk}, adt);
  aclTensor* v = s.tensor("v", {T, Nv, Dv}, adt);
  aclTensor* beta = s.tensor("beta", {T, Nv}, adt);
  aclTensor* s0 = s.tensor("s0", {rows, Nv, Dv, Dk}, sdt);
  aclTensor* len = s.tensor("lens", {B}, ACL_INT32, &lens);
  aclTensor* gt = s.flag("g", "absent") ? nullptr : s.tensor("g", {T, Nv}, ACL_FLOAT);
  if (s.flag("grad", "use")) {
    aclTensor* dout = s.tensor("dout", {T, Nv, Dv}, adt);
    aclTensor* dfs = s.flag("dfs", "absent") ? nullptr : s.tensor("dfs", {B, Nv, Dv, Dk}, sdt);
    aclTensor* dq = s.tensor("dq", {T, Nk, Dk}, adt);
    aclTensor* dk = s.tensor("dk", {T, Nk, Dk}, adt);
    aclTensor* dv = s.tensor("dv", {T, Nv, Dv}, adt);
    aclTensor* dbeta = s.tensor("dbeta", {T, Nv}, adt);
    // gradGOptional goes with gOptional; the input may give one without the other (refused).
    aclTensor* dg = (gt != nullptr) != s.flag("dg", "mismatch") ? s.tensor("dg", {T, Nv}, ACL_FLOAT) : nullptr;
    const int64_t ds0_kind = dfs == nullptr ? 0 : s.range(0, 2, "ds0", "alias");
    aclTensor* ds0 = ds0_kind == 0 ? s.tensor("ds0", {B, Nv, Dv, Dk}, sdt) : s.alias("ds0", dfs, ds0_kind - 1);
    if (!s.flag("grad", "snapshots")) {
      s.two_phases(
          "aclnnChunkGatedDeltaRuleGrad",
          [&](uint64_t* ws, aclOpExecutor** e) {
            return aclnnChunkGatedDeltaRuleGradGetWorkspaceSize(q, k, v, beta, s0, len, gt, scale, dout, dfs, dq, dk,
                                                                dv, dbeta, dg, ds0, ws, e);
          },
          [&](void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) { return aclnnChunkGatedDeltaRuleGrad(w, n, e, st); });
      return;
    }
    // forwardCheckpointsOptional: about the rows the lengths need (Σ L / 64, one short or spare), fp32 or bf16,
    // or over gradValue's memory.
    int64_t cp_rows = 0;
    for (int64_t b = 0; b < B; ++b) cp_rows += std::max<int64_t>(lens[b], 0) / 64;
    cp_rows = std::max<int64_t>(0, cp_rows + s.range(-1, 1, "gckpt", "spare"));
    fit_budget({&cp_rows}, kMaxElements / std::max<int64_t>(1, Nv * Dv * Dk));
    const aclDataType cdt = s.flag("gckpt", "bf16") ? ACL_BF16 : ACL_FLOAT;
    aclTensor* cps = s.flag("gckpt", "absent")  ? nullptr
                     : s.flag("gckpt", "alias") ? s.alias("gcps", dv, 1)
                                                 : s.tensor("gcps", {cp_rows, Nv, Dv, Dk}, cdt);
    // forwardCorrectedValuesOptional (T, Nv, Dv) fp32 or bf16, or absent.
    aclTensor* gcv = s.flag("gcv", "given") ? s.tensor("gcv", {T, Nv, Dv}, s.flag("gcv", "bf16") ? ACL_BF16 : ACL_FLOAT)
                                            : nullptr;
    s.two_phases(
        "aclnnChunkGatedDeltaRuleGradEx",
        [&](uint64_t* ws, aclOpExecutor** e) {
          return aclnnChunkGatedDeltaRuleGradExGetWorkspaceSize(q, k, v, beta, s0, len, gt, scale, dout, dfs, cps, gcv,
                                                                dq, dk, dv, dbeta, dg, ds0, ws, e);
        },
        [&](void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) { return aclnnChunkGatedDeltaRuleGradEx(w, n, e, st); });
    return;
  }
  const int64_t out_kind = s.range(0, 2, "out", "alias");  // 0 separate, 1 value's tensor, 2 value's memory
  aclTensor* out = out_kind == 0 ? s.tensor("out", {T, Nv, Dv}, adt) : s.alias("out", v, out_kind - 1);
  const int64_t s1_kind = s.range(0, 2, "s1", "alias");
  aclTensor* s1 = s1_kind == 0 ? s.tensor("s1", {rows, Nv, Dv, Dk}, sdt) : s.alias("s1", s0, s1_kind - 1);
  if (!ex) {
    s.two_phases(
        "aclnnChunkGatedDeltaRule",
        [&](uint64_t* ws, aclOpExecutor** e) {
          return aclnnChunkGatedDeltaRuleGetWorkspaceSize(q, k, v, beta, s0, len, gt, scale, out, s1, ws, e);
        },
        [&](void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) { return aclnnChunkGatedDeltaRule(w, n, e, st); });
    return;
  }
  // Pool rows per sequence: b + offset (in range), reversed, one duplicate, or one wild value.
  std::vector<int64_t> idx(static_cast<size_t>(B)), has(static_cast<size_t>(B));
  const int64_t idx_kind = s.range(0, 3, "idxv", "kind"), offset = rows - B;
  for (int64_t b = 0; b < B; ++b) {
    idx[b] = idx_kind == 1 ? rows - 1 - b : b + s.range(0, offset, "idxv", "offset") * (b == 0);
    has[b] = s.flag("hasv", "zero") ? 0 : 1;
  }
  if (idx_kind == 2 && B > 1) idx[1] = idx[0];
  if (idx_kind == 3) {
    const int64_t bad[] = {-1, rows, INT32_MAX, INT32_MIN};
    idx[s.range(0, B - 1, "idxv", "at")] = s.pick(bad, "idxv", "value");
  }
  aclTensor* idx_t = s.flag("idx", "absent") ? nullptr : s.tensor("idx", {B}, ACL_INT32, &idx);
  aclTensor* has_t = s.flag("has", "absent") ? nullptr : s.tensor("has", {B}, ACL_INT32, &has);
  static const int64_t kEvery[] = {0, 64, 128, 32, -64, 192};
  const int64_t every = s.pick(kEvery, "ckpt", "every");
  std::vector<int64_t> starts = {s.range(0, 2, "ckpt", "first")};
  for (int64_t b = 0; b < B; ++b) starts.push_back(starts.back() + (every > 0 ? std::max<int64_t>(lens[b], 0) / every : 0));
  int64_t cp_rows = std::max<int64_t>(1, starts.back() + s.range(-1, 1, "ckpt", "spare"));
  fit_budget({&cp_rows}, kMaxElements / std::max<int64_t>(1, Nv * Dv * Dk));
  const aclDataType cdt = s.flag("ckpt", "bf16") ? ACL_BF16 : ACL_FLOAT;
  aclTensor* cps = every == 0 && !s.flag("ckpt", "given") ? nullptr : s.tensor("cps", {cp_rows, Nv, Dv, Dk}, cdt);
  aclTensor* starts_t = s.flag("starts", "absent") ? nullptr : s.tensor("starts", {B + 1}, ACL_INT64, &starts);
  aclTensor* cvs = s.flag("cv", "given") ? s.tensor("cvs", {T, Nv, Dv}, s.flag("cv", "bf16") ? ACL_BF16 : ACL_FLOAT)
                                         : nullptr;
  const int64_t kernel = s.range(0, 3, "ckpt", "kernel");
  s.two_phases(
      "aclnnChunkGatedDeltaRuleEx",
      [&](uint64_t* ws, aclOpExecutor** e) {
        return aclnnChunkGatedDeltaRuleExGetWorkspaceSize(q, k, v, beta, s0, len, gt, idx_t, has_t, starts_t, scale,
                                                          every, kernel, out, s1, cps, cvs, ws, e);
      },
      [&](void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) { return aclnnChunkGatedDeltaRuleEx(w, n, e, st); });
}
