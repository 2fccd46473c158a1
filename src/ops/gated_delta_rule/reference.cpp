// reference.cpp — the fp64 oracle of the gated delta rule (docs/gated_delta_rule.md): the
// token-by-token recurrence, one state matrix S (Dv x Dk) per (sequence, value head), in double.
// Inputs are read through their strides (load_f64) and never modified; outputs are row-major doubles.
// Written for reading, not for speed: every fast kernel is judged against this file.
#include "ops/gated_delta_rule/reference.h"

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "ops/gated_delta_rule/reference_access.h"

namespace txops {
namespace reference {
namespace {

// An int32 element of a 1-D view (sequence lengths, state indices, accepted-token counts).
int64_t int_at(const TensorView& v, int64_t i) {
  return static_cast<const int32_t*>(v.data)[i * v.strides[0]];
}

// The problem sizes every function below needs.
struct Dims {
  int64_t num_key_heads, num_value_heads, key_dim, value_dim;
  int64_t value_heads_per_key_head() const { return num_value_heads / num_key_heads; }
};

Dims dims_of(const TensorView& query, const TensorView& value) {
  return Dims{query.shape[1], value.shape[1], query.shape[2], value.shape[2]};
}

// S, row-major Dv x Dk.
using State = std::vector<double>;

State load_state(const TensorView& pool, int64_t slot, int64_t head, const Dims& d) {
  State s(d.value_dim * d.key_dim);
  for (int64_t i = 0; i < d.value_dim; ++i)
    for (int64_t j = 0; j < d.key_dim; ++j) s[i * d.key_dim + j] = at(pool, slot, head, i, j);
  return s;
}

void store_state(const State& s, int64_t slot, int64_t head, const Dims& d, std::vector<double>* pool) {
  const int64_t base = (slot * d.num_value_heads + head) * d.value_dim * d.key_dim;
  for (size_t e = 0; e < s.size(); ++e) (*pool)[base + e] = s[e];
}

// Delta-rule update of an already decayed state with token t of value head h:
// S <- S + beta_t (v_t - S k_t) k_t^T.
void delta_update(const TensorView& key, const TensorView& value, const TensorView& beta, int64_t t, int64_t h,
                  const Dims& d, State* s) {
  const int64_t hk = h / d.value_heads_per_key_head();
  const double b = at(beta, t, h);
  for (int64_t i = 0; i < d.value_dim; ++i) {
    double* row = &(*s)[i * d.key_dim];
    double predicted = 0;  // (S k_t)_i
    for (int64_t j = 0; j < d.key_dim; ++j) predicted += row[j] * at(key, t, hk, j);
    const double correction = b * (at(value, t, h, i) - predicted);
    for (int64_t j = 0; j < d.key_dim; ++j) row[j] += correction * at(key, t, hk, j);
  }
}

// o_t = S (q_t * scale), written to out[t, h, :].
void emit_output(const TensorView& query, double scale, int64_t t, int64_t h, const Dims& d, const State& s,
                 std::vector<double>* out) {
  const int64_t hk = h / d.value_heads_per_key_head();
  for (int64_t i = 0; i < d.value_dim; ++i) {
    double acc = 0;
    for (int64_t j = 0; j < d.key_dim; ++j) acc += s[i * d.key_dim + j] * (at(query, t, hk, j) * scale);
    (*out)[(t * d.num_value_heads + h) * d.value_dim + i] = acc;
  }
}

}  // namespace

void chunk_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                            const TensorView& beta, const TensorView& initial_state,
                            const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                            std::vector<double>* out, std::vector<double>* final_state) {
  const Dims d = dims_of(query, value);
  const int64_t num_tokens = query.shape[0];
  const int64_t batch = actual_seq_lengths.shape[0];
  out->assign(num_tokens * d.num_value_heads * d.value_dim, 0.0);
  final_state->assign(batch * d.num_value_heads * d.value_dim * d.key_dim, 0.0);

  int64_t first_token = 0;  // sequence b occupies rows [first_token, first_token + L_b)
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = int_at(actual_seq_lengths, b);
    for (int64_t h = 0; h < d.num_value_heads; ++h) {
      State s = load_state(initial_state, b, h, d);
      for (int64_t t = first_token; t < first_token + length; ++t) {
        const double alpha = g ? std::exp(at(*g, t, h)) : 1.0;
        for (double& e : s) e *= alpha;
        delta_update(key, value, beta, t, h, d, &s);
        emit_output(query, scale, t, h, d, s, out);
      }
      store_state(s, b, h, d, final_state);  // a zero-length sequence stores initialState unchanged
    }
    first_token += length;
  }
}

void recurrent_gated_delta_rule(const TensorView& query, const TensorView& key, const TensorView& value,
                                const TensorView& beta, const TensorView& state,
                                const TensorView& actual_seq_lengths, const TensorView& ssm_state_indices,
                                const TensorView* g, const TensorView* gk, const TensorView* num_accepted_tokens,
                                float scale, std::vector<double>* out, std::vector<double>* state_after) {
  const Dims d = dims_of(query, value);
  const int64_t num_tokens = query.shape[0];
  const int64_t batch = actual_seq_lengths.shape[0];
  const int64_t num_slots = state.shape[0];
  out->assign(num_tokens * d.num_value_heads * d.value_dim, 0.0);

  // The pool as the op leaves it starts as the pool before the call: slots no token writes keep their values.
  state_after->assign(num_slots * d.num_value_heads * d.value_dim * d.key_dim, 0.0);
  for (int64_t slot = 0; slot < num_slots; ++slot)
    for (int64_t h = 0; h < d.num_value_heads; ++h) store_state(load_state(state, slot, h, d), slot, h, d, state_after);

  int64_t first_token = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t length = int_at(actual_seq_lengths, b);
    if (length == 0) continue;  // an empty sequence reads and writes nothing (txops allows it; CANN does not)
    const int64_t accepted = num_accepted_tokens ? int_at(*num_accepted_tokens, b) : 1;
    // Speculative decoding: resume from the state of the last accepted token (read from the pool before the call).
    const int64_t start_slot = int_at(ssm_state_indices, first_token + accepted - 1);
    for (int64_t h = 0; h < d.num_value_heads; ++h) {
      State s = load_state(state, start_slot, h, d);
      for (int64_t t = first_token; t < first_token + length; ++t) {
        // Decay: S <- exp(g_t) * S * diag(exp(gk_t)).
        const double alpha = g ? std::exp(at(*g, t, h)) : 1.0;
        for (int64_t i = 0; i < d.value_dim; ++i)
          for (int64_t j = 0; j < d.key_dim; ++j) {
            const double key_decay = gk ? std::exp(at(*gk, t, h, j)) : 1.0;
            s[i * d.key_dim + j] *= alpha * key_decay;
          }
        delta_update(key, value, beta, t, h, d, &s);
        store_state(s, int_at(ssm_state_indices, t), h, d, state_after);
        emit_output(query, scale, t, h, d, s, out);
      }
    }
    first_token += length;
  }
}

}  // namespace reference
}  // namespace txops
