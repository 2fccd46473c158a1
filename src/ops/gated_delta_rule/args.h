// args.h — the validated gated-delta-rule problem shared by validate / plan / run: sizes, views, and the
// host-visible integer tensors (sequence lengths, state slots) decoded once in phase one. Prefill and decode
// share it: prefill reads state_in[read_slot[b]] (read_slot -1: the zero state) and writes state_out[final_slot[b]]
// (b, or the pool index of GdrPrefillOptions), and optionally the snapshots; decode reads the pool slot
// read_slot[b] and writes the pool slot write_slot[t] after each token t.
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
  std::vector<int64_t> read_slot;   // decode: B (slot of the last accepted token); prefill: B (-1: zero state)
  std::vector<int64_t> write_slot;  // decode: T
  std::vector<int64_t> final_slot;  // prefill: B
  // Prefill snapshots: the state after token j * checkpoint_every of sequence b goes to checkpoints row
  // checkpoint_start[b] + j - 1 (checkpoint_every 0: none).
  int64_t checkpoint_every = 0;
  TensorView checkpoints;
  std::vector<int64_t> checkpoint_start;  // B
  bool has_corrected_values = false;      // prefill: V' of every token written (GdrPrefillOptions)
  TensorView corrected_values;            // (T, Nv, Dv) fp32
  GdrKernel kernel = GdrKernel::kAuto;    // prefill: the caller's kernel choice
  // decode: a slot some sequence reads is written by another sequence, or two tokens write one slot. Then the
  // start states are snapshotted first and sequences run in order (per head), as the oracle defines.
  bool slot_conflict = false;

  int64_t heads_per_key_head() const { return num_value_heads / num_key_heads; }
  int64_t seq_length(int64_t b) const { return seq_start[b + 1] - seq_start[b]; }
  // The checkpoints row written after the chunk ending at token offset `end` of sequence b, or -1.
  int64_t checkpoint_row(int64_t b, int64_t end) const {
    if (checkpoint_every == 0 || end % checkpoint_every != 0) return -1;
    return checkpoint_start[b] + end / checkpoint_every - 1;
  }
};

// Phase-one validation (validate.cpp). On success `problem` is filled; messages name parameter, rule, value.
Status validate_chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                       const TensorView& beta, const TensorView& initial_state,
                                       const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                       const TensorView& out, const TensorView& final_state,
                                       const GdrPrefillOptions& options, GdrProblem* problem);

// The serving options of the prefill (validate_serving.cpp): state indices, zero starts, snapshots. Called by
// validate_chunk_gated_delta_rule after the plain rules; `slots` is initial_state's dim 0 (P, or B).
Status validate_prefill_options(const GdrPrefillOptions& options, int64_t slots, GdrProblem* problem);

Status validate_recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                           const TensorView& beta, const TensorView& state,
                                           const TensorView& actual_seq_lengths,
                                           const TensorView& ssm_state_indices, const TensorView* g,
                                           const TensorView* gk, const TensorView* num_accepted_tokens, float scale,
                                           const TensorView& out, GdrProblem* problem);

}  // namespace txops

#endif  // TXOPS_OPS_GATED_DELTA_RULE_ARGS_H_
