// validate.cpp — phase-one rules of ChunkGatedDeltaRule (prefill) and RecurrentGatedDeltaRule (decode), one
// check per rule, one code and one message "<param> <rule>, got <value>" each (README.md has the table).
// Codes: null -> 161001; dtype -> 161002; shapes/limits -> 561002 for prefill, 161002 for decode; the
// host-visible integers (lengths, slots, accepted counts) -> 161002 for both. compat_mode() == kCann adds
// CANN's narrower limits. Reads no tensor data except the int32 host-visible tensors.
#include <algorithm>
#include <cinttypes>
#include <string>

#include "core/status.h"
#include "core/view_checks.h"
#include "core/view_extent.h"
#include "core/view_rules.h"
#include "ops/gated_delta_rule/args.h"
#include "ops/gated_delta_rule/backward.h"

namespace txops {
namespace {

constexpr int64_t kMaxHeadDim = 256;            // txops prefill (FLA's limit)
constexpr int64_t kCannPrefillMaxHeadDim = 128;
constexpr int64_t kCannPrefillMaxHeads = 64;
constexpr int64_t kDecodeMaxHeadDim = 512;      // CANN's decode limit; txops accepts it too (never narrower)
constexpr int64_t kCannDecodeMaxHeads = 256;
constexpr int64_t kCannDecodeMaxSeqLength = 8;

bool cann() { return compat_mode() == Compat::kCann; }

Status require_activation_dtype(const TensorView& v, const char* name) {
  if (cann()) {
    if (v.dtype != DType::kBF16)
      return fail(StatusCode::kParamInvalid, "%s dtype must be bf16 (TXOPS_COMPAT=cann), got %s", name,
                  dtype_name(v.dtype));
  } else if (v.dtype != DType::kBF16 && v.dtype != DType::kF16 && v.dtype != DType::kF32) {
    return fail(StatusCode::kParamInvalid, "%s dtype must be bf16, fp16 or fp32, got %s", name, dtype_name(v.dtype));
  }
  return Status();
}

Status require_state_dtype(const TensorView& v, const char* name) {
  if (v.dtype != DType::kBF16 && v.dtype != DType::kF32)
    return fail(StatusCode::kParamInvalid, "%s dtype must be bf16 or fp32, got %s", name, dtype_name(v.dtype));
  return Status();
}

// Sizes common to both ops, from query (T, Nk, Dk), value (T, Nv, Dv), and the per-op limits.
Status check_sizes(StatusCode code, bool decode, const TensorView& query, const TensorView& value, GdrProblem* p) {
  Status st = require_ndim(code, query, "query", 3, "(T, Nk, Dk)");
  if (!st.ok()) return st;
  st = require_ndim(code, value, "value", 3, "(T, Nv, Dv)");
  if (!st.ok()) return st;
  p->num_tokens = query.shape[0];
  p->num_key_heads = query.shape[1];
  p->key_dim = query.shape[2];
  p->num_value_heads = value.shape[1];
  p->value_dim = value.shape[2];
  if (p->num_tokens <= 0) return fail(code, "query dim 0 (T) must be > 0, got %" PRId64, p->num_tokens);
  if (value.shape[0] != p->num_tokens)
    return fail(code, "value dim 0 (T) must equal query dim 0 (%" PRId64 "), got %" PRId64, p->num_tokens,
                value.shape[0]);
  const int64_t max_dim = decode ? kDecodeMaxHeadDim : (cann() ? kCannPrefillMaxHeadDim : kMaxHeadDim);
  const char* dim_why = decode ? "" : (cann() ? " (TXOPS_COMPAT=cann)" : "");
  st = require_range(code, p->key_dim, "query dim 2 (Dk)", 1, max_dim, dim_why);
  if (st.ok()) st = require_range(code, p->value_dim, "value dim 2 (Dv)", 1, max_dim, dim_why);
  if (!st.ok()) return st;
  const int64_t max_heads = !cann() ? INT32_MAX : (decode ? kCannDecodeMaxHeads : kCannPrefillMaxHeads);
  const char* head_why = cann() ? " (TXOPS_COMPAT=cann)" : "";
  st = require_range(code, p->num_key_heads, "query dim 1 (Nk)", 1, max_heads, head_why);
  if (st.ok()) st = require_range(code, p->num_value_heads, "value dim 1 (Nv)", 1, max_heads, head_why);
  if (!st.ok()) return st;
  if (p->num_value_heads % p->num_key_heads != 0)
    return fail(code, "value dim 1 (Nv) must be a multiple of Nk (%" PRId64 "), got %" PRId64, p->num_key_heads,
                p->num_value_heads);
  return Status();
}

// Shapes of key, beta, out and g against query/value (both ops).
Status check_activation_shapes(StatusCode code, const TensorView& key, const TensorView& beta, const TensorView& out,
                               const TensorView* g, const GdrProblem& p) {
  const int64_t T = p.num_tokens, Nk = p.num_key_heads, Nv = p.num_value_heads;
  Status st = require_shape(code, key, "key", "(T, Nk, Dk)", {T, Nk, p.key_dim});
  if (st.ok()) st = require_shape(code, beta, "beta", "(T, Nv)", {T, Nv});
  if (st.ok()) st = require_shape(code, out, "out", "(T, Nv, Dv)", {T, Nv, p.value_dim});
  if (st.ok() && g) st = require_shape(code, *g, p.decode ? "g" : "gOptional", "(T, Nv)", {T, Nv});
  return st;
}

// actualSeqLengths: (B,) int32, B > 0, each >= 0 (decode, compat: 1..8), sum == T. Fills seq_start.
Status check_lengths(StatusCode shape_code, const TensorView& lengths, GdrProblem* p) {
  Status st = require_ndim(shape_code, lengths, "actualSeqLengths", 1, "(B,)");
  if (!st.ok()) return st;
  p->batch = lengths.shape[0];
  if (p->batch <= 0) return fail(shape_code, "actualSeqLengths dim 0 (B) must be > 0, got %" PRId64, p->batch);
  p->seq_start.assign(p->batch + 1, 0);
  const bool short_decode = p->decode && cann();
  for (int64_t b = 0; b < p->batch; ++b) {
    const int64_t len = int32_at(lengths, b);
    if (short_decode && (len < 1 || len > kCannDecodeMaxSeqLength))
      return fail(StatusCode::kParamInvalid,
                  "actualSeqLengths[%" PRId64 "] must be in [1, 8] (TXOPS_COMPAT=cann), got %" PRId64, b, len);
    if (len < 0) return fail(StatusCode::kParamInvalid, "actualSeqLengths[%" PRId64 "] must be >= 0, got %" PRId64, b, len);
    p->seq_start[b + 1] = p->seq_start[b] + len;
  }
  if (p->seq_start[p->batch] != p->num_tokens)
    return fail(StatusCode::kParamInvalid, "actualSeqLengths sum must equal T (%" PRId64 "), got %" PRId64,
                p->num_tokens, p->seq_start[p->batch]);
  return Status();
}

}  // namespace

Status validate_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                       const TensorView& beta, const TensorView& initial_state,
                                       const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                       const TensorView& out, const TensorView& final_state,
                                       const GdrPrefillOptions& options, GdrProblem* p) {
  const StatusCode shape = StatusCode::kTilingError;
  Status st;
  const std::pair<const TensorView*, const char*> required[] = {
      {&query, "query"}, {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {&initial_state, "initialState"},
      {&actual_seq_lengths, "actualSeqLengths"}, {&out, "out"}, {&final_state, "finalState"}};
  for (const auto& r : required)
    if (!(st = require_data(*r.first, r.second)).ok()) return st;
  if (g && !(st = require_data(*g, "gOptional")).ok()) return st;

  if (!(st = require_activation_dtype(query, "query")).ok()) return st;
  const std::pair<const TensorView*, const char*> same_as_query[] = {
      {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {&out, "out"}};
  for (const auto& r : same_as_query)
    if (!(st = require_same_dtype(*r.first, r.second, query, "query")).ok()) return st;
  if (!(st = require_state_dtype(initial_state, "initialState")).ok()) return st;
  if (!(st = require_same_dtype(final_state, "finalState", initial_state, "initialState")).ok()) return st;
  if (!(st = require_dtype(actual_seq_lengths, "actualSeqLengths", DType::kI32)).ok()) return st;
  if (g && !(st = require_dtype(*g, "gOptional", DType::kF32)).ok()) return st;

  p->decode = false;
  p->scale = scale;
  if (!(st = check_sizes(shape, false, query, value, p)).ok()) return st;
  if (!(st = check_activation_shapes(shape, key, beta, out, g, *p)).ok()) return st;
  if (!(st = check_lengths(shape, actual_seq_lengths, p)).ok()) return st;
  const int64_t Nv = p->num_value_heads, Dv = p->value_dim, Dk = p->key_dim;
  // With stateIndicesOptional the states are pools of P rows, else one row per sequence.
  const bool pool = options.state_indices != nullptr;
  const char* layout = pool ? "(P, Nv, Dv, Dk)" : "(B, Nv, Dv, Dk)";
  if (pool && !(st = require_ndim(shape, initial_state, "initialState", 4, layout)).ok()) return st;
  const int64_t slots = pool ? initial_state.shape[0] : p->batch;
  if (pool && slots <= 0) return fail(shape, "initialState dim 0 (P) must be > 0, got %" PRId64, slots);
  if (!(st = require_shape(shape, initial_state, "initialState", layout, {slots, Nv, Dv, Dk})).ok()) return st;
  if (!(st = require_shape(shape, final_state, "finalState", layout, {slots, Nv, Dv, Dk})).ok()) return st;
  if (!(st = validate_prefill_options(options, slots, p)).ok()) return st;

  // out, finalState and the snapshots are written: no broadcast dims, no overlap with each other or the inputs,
  // except that finalState may be initialState itself (each item reads its state before it writes it).
  if (!(st = check_outputs({{&final_state, "finalState"},
                            {&out, "out"},
                            {options.checkpoints, "checkpointsOptional"},
                            {options.corrected_values, "correctedValuesOptional"}},
                           {{&query, "query"}, {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {g, "gOptional"},
                            {&initial_state, "initialState"}, {&actual_seq_lengths, "actualSeqLengths"},
                            {options.state_indices, "stateIndicesOptional"},
                            {options.has_initial_state, "hasInitialStateOptional"},
                            {options.checkpoint_starts, "checkpointStartsOptional"}},
                           &final_state, &initial_state))
           .ok())
    return st;

  p->query = query, p->key = key, p->value = value, p->beta = beta, p->out = out;
  p->state_in = initial_state, p->state_out = final_state;
  p->has_g = g != nullptr;
  if (g) p->g = *g;
  return Status();
}

Status validate_recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& state,
                                           const TensorView& actual_seq_lengths,
                                           const TensorView& ssm_state_indices, const TensorView* g,
                                           const TensorView* gk, const TensorView* num_accepted_tokens, float scale,
                                           const TensorView& out, GdrProblem* p) {
  const StatusCode code = StatusCode::kParamInvalid;  // decode: dtype, format and shape alike
  Status st;
  const std::pair<const TensorView*, const char*> required[] = {
      {&query, "query"}, {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {&state, "stateRef"},
      {&actual_seq_lengths, "actualSeqLengths"}, {&ssm_state_indices, "ssmStateIndices"}, {&out, "out"}};
  for (const auto& r : required)
    if (!(st = require_data(*r.first, r.second)).ok()) return st;
  if (g && !(st = require_data(*g, "g")).ok()) return st;
  if (gk && !(st = require_data(*gk, "gk")).ok()) return st;
  if (num_accepted_tokens && !(st = require_data(*num_accepted_tokens, "numAcceptedTokens")).ok()) return st;

  if (!(st = require_activation_dtype(query, "query")).ok()) return st;
  const std::pair<const TensorView*, const char*> same_as_query[] = {
      {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {&out, "out"}};
  for (const auto& r : same_as_query)
    if (!(st = require_same_dtype(*r.first, r.second, query, "query")).ok()) return st;
  if (!(st = require_state_dtype(state, "stateRef")).ok()) return st;
  if (!(st = require_dtype(actual_seq_lengths, "actualSeqLengths", DType::kI32)).ok()) return st;
  if (!(st = require_dtype(ssm_state_indices, "ssmStateIndices", DType::kI32)).ok()) return st;
  if (g && !(st = require_dtype(*g, "g", DType::kF32)).ok()) return st;
  if (gk && !(st = require_dtype(*gk, "gk", DType::kF32)).ok()) return st;
  if (num_accepted_tokens && !(st = require_dtype(*num_accepted_tokens, "numAcceptedTokens", DType::kI32)).ok())
    return st;

  p->decode = true;
  p->scale = scale;
  if (!(st = check_sizes(code, true, query, value, p)).ok()) return st;
  if (cann() && p->num_key_heads > p->num_value_heads)
    return fail(code, "query dim 1 (Nk) must be <= Nv (%" PRId64 ") (TXOPS_COMPAT=cann), got %" PRId64,
                p->num_value_heads, p->num_key_heads);
  if (!(st = check_activation_shapes(code, key, beta, out, g, *p)).ok()) return st;
  const int64_t T = p->num_tokens, Nv = p->num_value_heads, Dv = p->value_dim, Dk = p->key_dim;
  if (gk && !(st = require_shape(code, *gk, "gk", "(T, Nv, Dk)", {T, Nv, Dk})).ok()) return st;
  if (!(st = require_ndim(code, state, "stateRef", 4, "(BlockNum, Nv, Dv, Dk)")).ok()) return st;
  const int64_t slots = state.shape[0];
  if (!(st = require_shape(code, state, "stateRef", "(BlockNum, Nv, Dv, Dk)", {slots, Nv, Dv, Dk})).ok()) return st;
  if (slots <= 0) return fail(code, "stateRef dim 0 (BlockNum) must be > 0, got %" PRId64, slots);
  if (cann() && T > slots)
    return fail(code, "query dim 0 (T) must be <= BlockNum (%" PRId64 ") (TXOPS_COMPAT=cann), got %" PRId64, slots, T);
  if (!(st = check_lengths(code, actual_seq_lengths, p)).ok()) return st;
  const int64_t B = p->batch;
  if (!(st = require_shape(code, ssm_state_indices, "ssmStateIndices", "(T,)", {T})).ok()) return st;
  if (num_accepted_tokens &&
      !(st = require_shape(code, *num_accepted_tokens, "numAcceptedTokens", "(B,)", {B})).ok())
    return st;

  // Host-visible slots: every index in [0, BlockNum); each sequence resumes from its last accepted token.
  p->write_slot.resize(T);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = int32_at(ssm_state_indices, t);
    if (slot < 0 || slot >= slots)
      return fail(StatusCode::kParamInvalid,
                  "ssmStateIndices[%" PRId64 "] must be in [0, BlockNum = %" PRId64 "), got %" PRId64, t, slots, slot);
    p->write_slot[t] = slot;
  }
  p->read_slot.assign(B, -1);  // -1: an empty sequence reads nothing
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = p->seq_length(b);
    if (len == 0) continue;  // nothing read or written; its numAcceptedTokens entry is not used
    const int64_t accepted = num_accepted_tokens ? int32_at(*num_accepted_tokens, b) : 1;
    if (accepted < 1 || accepted > len)
      return fail(StatusCode::kParamInvalid,
                  "numAcceptedTokens[%" PRId64 "] must be in [1, actualSeqLengths[%" PRId64 "] = %" PRId64
                  "], got %" PRId64,
                  b, b, len, accepted);
    p->read_slot[b] = p->write_slot[p->seq_start[b] + accepted - 1];
  }

  // Slot conflicts: a slot written twice, or a slot one sequence reads and another writes. Judged on the T
  // (slot, writer) pairs sorted by slot, never on an array of BlockNum entries (BlockNum is caller input and
  // may be huge for a broadcast pool).
  std::vector<std::pair<int64_t, int64_t>> writes;  // (slot, sequence writing it)
  writes.reserve(T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = p->seq_start[b]; t < p->seq_start[b + 1]; ++t) writes.emplace_back(p->write_slot[t], b);
  std::sort(writes.begin(), writes.end());
  for (size_t i = 1; i < writes.size() && !p->slot_conflict; ++i)
    if (writes[i].first == writes[i - 1].first) p->slot_conflict = true;
  for (int64_t b = 0; b < B && !p->slot_conflict; ++b) {
    if (p->read_slot[b] < 0) continue;
    auto it = std::lower_bound(writes.begin(), writes.end(), std::make_pair(p->read_slot[b], int64_t{-1}));
    if (it != writes.end() && it->first == p->read_slot[b] && it->second != b) p->slot_conflict = true;
  }

  // The pool and out are written: no broadcast dims, no partial overlap with each other or the inputs.
  if (!(st = check_outputs({{&state, "stateRef"}, {&out, "out"}},
                           {{&query, "query"}, {&key, "key"}, {&value, "value"}, {&beta, "beta"}, {g, "g"},
                            {gk, "gk"}, {&actual_seq_lengths, "actualSeqLengths"},
                            {&ssm_state_indices, "ssmStateIndices"}, {num_accepted_tokens, "numAcceptedTokens"}},
                           nullptr, nullptr))
           .ok())
    return st;

  p->query = query, p->key = key, p->value = value, p->beta = beta, p->out = out;
  p->state_in = state, p->state_out = state;
  p->has_g = g != nullptr;
  if (g) p->g = *g;
  p->has_gk = gk != nullptr;
  if (gk) p->gk = *gk;
  return Status();
}

// The backward of the prefill operator (txops extension): the forward's rules on the forward's inputs, then the
// incoming gradients and the gradients written, with the same codes (null 161001, dtype 161002, shapes 561002,
// lengths 161002, output rules 161002).
Status validate_chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                            const TensorView& beta, const TensorView& initial_state,
                                            const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                            const TensorView& grad_out, const TensorView* grad_final_state,
                                            const TensorView& grad_query, const TensorView& grad_key,
                                            const TensorView& grad_value, const TensorView& grad_beta,
                                            const TensorView* grad_g, const TensorView& grad_initial_state,
                                            const TensorView* forward_checkpoints,
                                            const TensorView* forward_corrected_values, GdrGradProblem* gp) {
  const StatusCode shape = StatusCode::kTilingError;
  GdrProblem* p = &gp->fwd;
  Status st;
  const NamedView required[] = {{&query, "query"},
                                {&key, "key"},
                                {&value, "value"},
                                {&beta, "beta"},
                                {&initial_state, "initialState"},
                                {&actual_seq_lengths, "actualSeqLengths"},
                                {&grad_out, "gradOut"},
                                {&grad_query, "gradQuery"},
                                {&grad_key, "gradKey"},
                                {&grad_value, "gradValue"},
                                {&grad_beta, "gradBeta"},
                                {&grad_initial_state, "gradInitialState"}};
  for (const auto& r : required)
    if (!(st = require_data(*r.first, r.second)).ok()) return st;
  if (g && !(st = require_data(*g, "gOptional")).ok()) return st;
  if (grad_final_state && !(st = require_data(*grad_final_state, "gradFinalStateOptional")).ok()) return st;
  if (grad_g && !(st = require_data(*grad_g, "gradGOptional")).ok()) return st;
  if (forward_checkpoints && !(st = require_data(*forward_checkpoints, "forwardCheckpointsOptional")).ok()) return st;
  if (forward_corrected_values &&
      !(st = require_data(*forward_corrected_values, "forwardCorrectedValuesOptional")).ok())
    return st;

  if (!(st = require_activation_dtype(query, "query")).ok()) return st;
  const NamedView same_as_query[] = {{&key, "key"},           {&value, "value"},         {&beta, "beta"},
                                     {&grad_out, "gradOut"},  {&grad_query, "gradQuery"}, {&grad_key, "gradKey"},
                                     {&grad_value, "gradValue"}, {&grad_beta, "gradBeta"}};
  for (const auto& r : same_as_query)
    if (!(st = require_same_dtype(*r.first, r.second, query, "query")).ok()) return st;
  if (!(st = require_state_dtype(initial_state, "initialState")).ok()) return st;
  if (grad_final_state &&
      !(st = require_same_dtype(*grad_final_state, "gradFinalStateOptional", initial_state, "initialState")).ok())
    return st;
  if (!(st = require_same_dtype(grad_initial_state, "gradInitialState", initial_state, "initialState")).ok())
    return st;
  if (!(st = require_dtype(actual_seq_lengths, "actualSeqLengths", DType::kI32)).ok()) return st;
  if (g && !(st = require_dtype(*g, "gOptional", DType::kF32)).ok()) return st;
  if (grad_g && !g)
    return fail(StatusCode::kParamInvalid,
                "gradGOptional must be null when gOptional is null, got a tensor of dtype %s",
                dtype_name(grad_g->dtype));
  if (grad_g && !(st = require_dtype(*grad_g, "gradGOptional", DType::kF32)).ok()) return st;
  if (forward_checkpoints &&
      !(st = require_dtype(*forward_checkpoints, "forwardCheckpointsOptional", DType::kF32)).ok())
    return st;
  if (forward_corrected_values &&
      !(st = require_dtype(*forward_corrected_values, "forwardCorrectedValuesOptional", DType::kF32)).ok())
    return st;
  if (forward_corrected_values && !forward_checkpoints)
    return fail(StatusCode::kParamInvalid,
                "forwardCorrectedValuesOptional must be null when forwardCheckpointsOptional is null, got a tensor");

  p->decode = false;
  p->scale = scale;
  if (!(st = check_sizes(shape, false, query, value, p)).ok()) return st;
  const int64_t T = p->num_tokens, Nk = p->num_key_heads, Nv = p->num_value_heads, Dk = p->key_dim,
                Dv = p->value_dim;
  st = require_shape(shape, key, "key", "(T, Nk, Dk)", {T, Nk, Dk});
  if (st.ok()) st = require_shape(shape, beta, "beta", "(T, Nv)", {T, Nv});
  if (st.ok() && g) st = require_shape(shape, *g, "gOptional", "(T, Nv)", {T, Nv});
  if (st.ok()) st = require_shape(shape, grad_out, "gradOut", "(T, Nv, Dv)", {T, Nv, Dv});
  if (st.ok()) st = require_shape(shape, grad_query, "gradQuery", "(T, Nk, Dk)", {T, Nk, Dk});
  if (st.ok()) st = require_shape(shape, grad_key, "gradKey", "(T, Nk, Dk)", {T, Nk, Dk});
  if (st.ok()) st = require_shape(shape, grad_value, "gradValue", "(T, Nv, Dv)", {T, Nv, Dv});
  if (st.ok()) st = require_shape(shape, grad_beta, "gradBeta", "(T, Nv)", {T, Nv});
  if (st.ok() && grad_g) st = require_shape(shape, *grad_g, "gradGOptional", "(T, Nv)", {T, Nv});
  if (!st.ok()) return st;
  if (!(st = check_lengths(shape, actual_seq_lengths, p)).ok()) return st;
  const int64_t B = p->batch;
  st = require_shape(shape, initial_state, "initialState", "(B, Nv, Dv, Dk)", {B, Nv, Dv, Dk});
  if (st.ok() && grad_final_state)
    st = require_shape(shape, *grad_final_state, "gradFinalStateOptional", "(B, Nv, Dv, Dk)", {B, Nv, Dv, Dk});
  if (st.ok()) st = require_shape(shape, grad_initial_state, "gradInitialState", "(B, Nv, Dv, Dk)", {B, Nv, Dv, Dk});
  if (!st.ok()) return st;
  // forwardCheckpointsOptional: the forward's snapshots at checkpointEvery = kGdrChunk with the default starts, so
  // sequence b's rows begin at the sum of the earlier sequences' L / kGdrChunk.
  gp->checkpoint_start.assign(static_cast<size_t>(B), 0);
  if (forward_checkpoints) {
    const TensorView& cp = *forward_checkpoints;
    if (!(st = require_ndim(shape, cp, "forwardCheckpointsOptional", 4, "(R, Nv, Dv, Dk)")).ok()) return st;
    st = require_shape(shape, cp, "forwardCheckpointsOptional", "(R, Nv, Dv, Dk)", {cp.shape[0], Nv, Dv, Dk});
    if (!st.ok()) return st;
    int64_t rows = 0;
    for (int64_t b = 0; b < B; ++b) {
      gp->checkpoint_start[b] = rows;
      rows += p->seq_length(b) / kGdrChunk;
    }
    if (cp.shape[0] < rows)
      return fail(shape,
                  "forwardCheckpointsOptional dim 0 (R) must be >= %" PRId64
                  " (the sum over the sequences of L / %" PRId64 "), got %" PRId64,
                  rows, kGdrChunk, cp.shape[0]);
  }
  if (forward_corrected_values &&
      !(st = require_shape(shape, *forward_corrected_values, "forwardCorrectedValuesOptional", "(T, Nv, Dv)",
                           {T, Nv, Dv}))
           .ok())
    return st;

  // The gradients are written: no broadcast dims, no overlap with each other or the inputs, except that
  // gradInitialState may be gradFinalStateOptional itself (each item reads it before it writes it).
  if (!(st = check_outputs({{&grad_initial_state, "gradInitialState"},
                            {&grad_query, "gradQuery"},
                            {&grad_key, "gradKey"},
                            {&grad_value, "gradValue"},
                            {&grad_beta, "gradBeta"},
                            {grad_g, "gradGOptional"}},
                           {{&query, "query"},
                            {&key, "key"},
                            {&value, "value"},
                            {&beta, "beta"},
                            {g, "gOptional"},
                            {&initial_state, "initialState"},
                            {&actual_seq_lengths, "actualSeqLengths"},
                            {&grad_out, "gradOut"},
                            {grad_final_state, "gradFinalStateOptional"},
                            {forward_checkpoints, "forwardCheckpointsOptional"},
                            {forward_corrected_values, "forwardCorrectedValuesOptional"}},
                           &grad_initial_state, grad_final_state))
           .ok())
    return st;

  p->query = query, p->key = key, p->value = value, p->beta = beta;
  p->state_in = initial_state;
  p->has_g = g != nullptr;
  if (g) p->g = *g;
  p->read_slot.resize(B);
  for (int64_t b = 0; b < B; ++b) p->read_slot[b] = b;
  gp->grad_out = grad_out;
  gp->has_grad_final_state = grad_final_state != nullptr;
  if (grad_final_state) gp->grad_final_state = *grad_final_state;
  gp->grad_query = grad_query, gp->grad_key = grad_key, gp->grad_value = grad_value, gp->grad_beta = grad_beta;
  gp->has_grad_g = grad_g != nullptr;
  if (grad_g) gp->grad_g = *grad_g;
  gp->grad_initial_state = grad_initial_state;
  gp->has_checkpoints = forward_checkpoints != nullptr;
  if (forward_checkpoints) gp->checkpoints = *forward_checkpoints;
  gp->has_corrected_values = forward_corrected_values != nullptr;
  if (forward_corrected_values) gp->corrected_values = *forward_corrected_values;
  return Status();
}

}  // namespace txops
