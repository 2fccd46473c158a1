// args.h — the validated gated-delta-rule problem shared by validate / plan / run: sizes, views, and the
// host-visible integer tensors (sequence lengths, state slots) decoded once in phase one. Prefill and decode
// share it: prefill reads state_in[b] and writes state_out[b]; decode reads the pool slot read_slot[b] and
// writes the pool slot write_slot[t] after each token t.
#ifndef TXOPS_OPS_GATED_DELTA_RULE_ARGS_H_
#define TXOPS_OPS_GATED_DELTA_RULE_ARGS_H_

#include <cstdint>
#include <vector>

#include "txops/txops.h"

namespace txops {

struct GdrProblem {
  bool decode = false;
  int64_t num_tokens = 0;       // T
  int64_t batch = 0;            // B
  int64_t num_key_heads = 0;    // Nk
  int64_t num_value_heads = 0;  // Nv
  int64_t key_dim = 0;          // Dk
  int64_t value_dim = 0;        // Dv
  float scale = 1.0f;

  TensorView query, key, value, beta, out;
  TensorView state_in, state_out;  // decode: both are the pool
  bool has_g = false, has_gk = false;
  TensorView g, gk;

  std::vector<int64_t> seq_start;   // B + 1 offsets into T
  std::vector<int64_t> read_slot;   // decode: B (slot of the last accepted token); prefill: b
  std::vector<int64_t> write_slot;  // decode: T
  // decode: a slot some sequence reads is written by another sequence, or two tokens write one slot. Then the
  // start states are snapshotted first and sequences run in order (per head), as the oracle defines.
  bool slot_conflict = false;

  int64_t heads_per_key_head() const { return num_value_heads / num_key_heads; }
  int64_t seq_length(int64_t b) const { return seq_start[b + 1] - seq_start[b]; }
};

// Phase-one validation (validate.cpp). On success `problem` is filled; messages name parameter, rule, value.
Status validate_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                       const TensorView& beta, const TensorView& initial_state,
                                       const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                       const TensorView& out, const TensorView& final_state, GdrProblem* problem);

Status validate_recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& state,
                                           const TensorView& actual_seq_lengths,
                                           const TensorView& ssm_state_indices, const TensorView* g,
                                           const TensorView* gk, const TensorView* num_accepted_tokens, float scale,
                                           const TensorView& out, GdrProblem* problem);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_ARGS_H_
