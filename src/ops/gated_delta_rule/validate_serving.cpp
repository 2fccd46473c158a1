// validate_serving.cpp — phase-one rules of the prefill's serving options (GdrPrefillOptions, a txops extension):
// state indices into a pool, zero starts, prefix-cache snapshots, the corrected values V'. One check per rule,
// "<param> <rule>, got <value>"; codes as the prefill's: null 161001, dtype 161002, shapes 561002, host-visible
// integers 161002. Reads the host-visible index tensors (as the decode op reads ssmStateIndices); fills the slots
// and snapshot rows of the problem.
#include <algorithm>
#include <cinttypes>
#include <vector>

#include "core/status.h"
#include "core/view_rules.h"
#include "ops/gated_delta_rule/args.h"
#include "ops/gated_delta_rule/kernels.h"

namespace txops {
namespace {

constexpr StatusCode kShape = StatusCode::kTilingError;
constexpr StatusCode kValue = StatusCode::kParamInvalid;

// stateIndicesOptional (B,) int32, each in [0, P), no two alike: the sequence's pool row.
Status check_state_indices(const TensorView& indices, int64_t slots, GdrProblem* p) {
  const int64_t B = p->batch;
  Status st = require_data(indices, "stateIndicesOptional");
  if (st.ok()) st = require_dtype(indices, "stateIndicesOptional", DType::kI32);
  if (st.ok()) st = require_shape(kShape, indices, "stateIndicesOptional", "(B,)", {B});
  if (!st.ok()) return st;
  std::vector<std::pair<int64_t, int64_t>> sorted;  // (slot, sequence)
  sorted.reserve(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t slot = int32_at(indices, b);
    if (slot < 0 || slot >= slots)
      return fail(kValue, "stateIndicesOptional[%" PRId64 "] must be in [0, P = %" PRId64 "), got %" PRId64, b,
                  slots, slot);
    p->read_slot[b] = p->final_slot[b] = slot;
    sorted.emplace_back(slot, b);
  }
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      return fail(kValue,
                  "stateIndicesOptional entries must be distinct, got %" PRId64 " at sequences %" PRId64
                  " and %" PRId64,
                  sorted[i].first, sorted[i - 1].second, sorted[i].second);
  return Status();
}

// hasInitialStateOptional (B,) int32 or bool: 0 = start from the zero state.
Status check_has_initial_state(const TensorView& flags, GdrProblem* p) {
  Status st = require_data(flags, "hasInitialStateOptional");
  if (!st.ok()) return st;
  if (flags.dtype != DType::kI32 && flags.dtype != DType::kBool)
    return fail(kValue, "hasInitialStateOptional dtype must be int32 or bool, got %s", dtype_name(flags.dtype));
  if (!(st = require_shape(kShape, flags, "hasInitialStateOptional", "(B,)", {p->batch})).ok()) return st;
  for (int64_t b = 0; b < p->batch; ++b) {
    const bool has = flags.dtype == DType::kI32 ? int32_at(flags, b) != 0
                                                : static_cast<const uint8_t*>(flags.data)[b * flags.strides[0]] != 0;
    if (!has) p->read_slot[b] = -1;
  }
  return Status();
}

// checkpointEvery > 0 (a multiple of the chunk), checkpointsOptional (R, Nv, Dv, Dk) fp32 / bf16,
// checkpointStartsOptional (B + 1,) int64 with increments L_b / checkpointEvery (or null: the running sum), every
// row it names inside R.
Status check_checkpoints(const GdrPrefillOptions& o, GdrProblem* p) {
  const int64_t B = p->batch, every = o.checkpoint_every;
  if (every < 0 || every % kGdrChunk != 0)
    return fail(kValue, "checkpointEvery must be 0 or a positive multiple of %" PRId64 ", got %" PRId64, kGdrChunk,
                every);
  if (every == 0) {
    if (o.checkpoints != nullptr || o.checkpoint_starts != nullptr)
      return fail(kValue, "checkpointsOptional and checkpointStartsOptional must be null when checkpointEvery is 0, "
                          "got a tensor");
    return Status();
  }
  if (o.kernel == GdrKernel::kRecurrent)
    return fail(kValue, "kernel must be auto or chunked when checkpointEvery > 0, got recurrent");
  if (o.checkpoints == nullptr)
    return fail(StatusCode::kNullptr, "checkpointsOptional must not be null when checkpointEvery > 0, got null");
  const TensorView& cp = *o.checkpoints;
  Status st = require_data(cp, "checkpointsOptional");
  if (!st.ok()) return st;
  if (cp.dtype != DType::kF32 && cp.dtype != DType::kBF16)
    return fail(kValue, "checkpointsOptional dtype must be fp32 or bf16, got %s", dtype_name(cp.dtype));
  if (!(st = require_ndim(kShape, cp, "checkpointsOptional", 4, "(R, Nv, Dv, Dk)")).ok()) return st;
  const int64_t rows = cp.shape[0];
  st = require_shape(kShape, cp, "checkpointsOptional", "(R, Nv, Dv, Dk)",
                     {rows, p->num_value_heads, p->value_dim, p->key_dim});
  if (!st.ok()) return st;
  p->checkpoint_start.assign(static_cast<size_t>(B), 0);
  int64_t next = 0;
  if (o.checkpoint_starts != nullptr) {
    const TensorView& starts = *o.checkpoint_starts;
    if (!(st = require_data(starts, "checkpointStartsOptional")).ok()) return st;
    if (!(st = require_dtype(starts, "checkpointStartsOptional", DType::kI64)).ok()) return st;
    if (!(st = require_shape(kShape, starts, "checkpointStartsOptional", "(B + 1,)", {B + 1})).ok()) return st;
    next = static_cast<const int64_t*>(starts.data)[0];
    if (next < 0) return fail(kValue, "checkpointStartsOptional[0] must be >= 0, got %" PRId64, next);
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t count = p->seq_length(b) / every;
    p->checkpoint_start[b] = next;
    next += count;  // next <= R + T / 64: no overflow
    if (o.checkpoint_starts != nullptr) {
      const int64_t given = static_cast<const int64_t*>(o.checkpoint_starts->data)[(b + 1) * o.checkpoint_starts->strides[0]];
      if (given != next)
        return fail(kValue,
                    "checkpointStartsOptional[%" PRId64 "] must be checkpointStartsOptional[%" PRId64
                    "] + actualSeqLengths[%" PRId64 "] / checkpointEvery = %" PRId64 ", got %" PRId64,
                    b + 1, b, b, next, given);
    }
    if (next > rows)
      return fail(kShape, "checkpointsOptional dim 0 (R) must be >= %" PRId64 " (the snapshot rows named), got %" PRId64,
                  next, rows);
  }
  p->checkpoint_every = every;
  p->checkpoints = cp;
  return Status();
}

// correctedValuesOptional (T, Nv, Dv) fp32, written by the chunked kernel only.
Status check_corrected_values(const GdrPrefillOptions& o, GdrProblem* p) {
  if (o.corrected_values == nullptr) return Status();
  const TensorView& cv = *o.corrected_values;
  Status st = require_data(cv, "correctedValuesOptional");
  if (st.ok()) st = require_dtype(cv, "correctedValuesOptional", DType::kF32);
  if (st.ok())
    st = require_shape(kShape, cv, "correctedValuesOptional", "(T, Nv, Dv)",
                       {p->num_tokens, p->num_value_heads, p->value_dim});
  if (!st.ok()) return st;
  if (o.kernel == GdrKernel::kRecurrent)
    return fail(kValue, "kernel must be auto or chunked when correctedValuesOptional is given, got recurrent");
  p->has_corrected_values = true;
  p->corrected_values = cv;
  return Status();
}

}  // namespace

Status validate_prefill_options(const GdrPrefillOptions& options, int64_t slots, GdrProblem* p) {
  const int64_t B = p->batch;
  p->read_slot.resize(static_cast<size_t>(B));
  p->final_slot.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) p->read_slot[b] = p->final_slot[b] = b;
  const int kernel = static_cast<int>(options.kernel);
  if (kernel < 0 || kernel > 2) return fail(kValue, "kernel must be 0 (auto), 1 (chunked) or 2 (recurrent), got %d", kernel);
  p->kernel = options.kernel;
  Status st;
  if (options.state_indices != nullptr && !(st = check_state_indices(*options.state_indices, slots, p)).ok()) return st;
  if (options.has_initial_state != nullptr && !(st = check_has_initial_state(*options.has_initial_state, p)).ok())
    return st;
  if (!(st = check_checkpoints(options, p)).ok()) return st;
  return check_corrected_values(options, p);
}

}  // namespace txops
