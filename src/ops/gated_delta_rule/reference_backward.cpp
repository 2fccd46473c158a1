// reference_backward.cpp — the fp64 oracle of the gated delta rule's backward (reference_backward.h): the forward
// recurrence of reference.cpp run token by token in double, keeping every state, then the chain rule applied to
// each step in reverse order. Written for reading, not for speed: the fast backward kernel is judged against it.
//
// One token t of one (sequence, value head), with q̃ = scale · q_t, α = exp(g_t) (1 without g):
//   S' = α S_{t-1}              decay
//   p  = S' k_t                 prediction (Dv)
//   u  = β_t (v_t − p)          correction (Dv)
//   S_t = S' + u k_tᵀ           delta-rule write
//   o_t = S_t q̃                output
// Reverse, with D = ∂L/∂S_t coming from the later tokens (∂L/∂finalState after the last token):
//   D  += dO_t q̃ᵀ,   dq_t += scale · S_tᵀ dO_t                         (o_t = S_t q̃)
//   du = D k_t,      dk_t += Dᵀ u,          dS' = D                    (S_t = S' + u kᵀ)
//   dv_t = β du,     dβ_t = (v_t − p)·du,   dp = −β du                 (u = β (v − p))
//   dS' += dp k_tᵀ,  dk_t += S'ᵀ dp                                     (p = S' k)
//   dg_t = α <S_{t-1}, dS'>  (= <S', dS'>),  D ← α dS'                 (S' = α S_{t-1}, α = exp(g))
// and after the sequence's first token, ∂L/∂initialState = D. q and k belong to the key head h / (Nv/Nk), so their
// gradients are summed over the value heads sharing it.
#include "ops/gated_delta_rule/reference_backward.h"

#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "ops/gated_delta_rule/reference_access.h"

namespace txops {
namespace reference {
namespace {

using Vec = std::vector<double>;  // a vector, or a Dv x Dk matrix row-major

}  // namespace

void chunk_gated_delta_rule_grad(const TensorView& query, const TensorView& key, const TensorView& value,
                                 const TensorView& beta, const TensorView& initial_state,
                                 const TensorView& actual_seq_lengths, const TensorView* g, float scale,
                                 const TensorView& grad_out, const TensorView* grad_final_state,
                                 GdrGradients* grads) {
  const int64_t T = query.shape[0], Nk = query.shape[1], Dk = query.shape[2];
  const int64_t Nv = value.shape[1], Dv = value.shape[2], B = actual_seq_lengths.shape[0];
  const int64_t group = Nv / Nk;
  grads->query.assign(T * Nk * Dk, 0.0);
  grads->key.assign(T * Nk * Dk, 0.0);
  grads->value.assign(T * Nv * Dv, 0.0);
  grads->beta.assign(T * Nv, 0.0);
  grads->g.assign(g ? T * Nv : 0, 0.0);
  grads->initial_state.assign(B * Nv * Dv * Dk, 0.0);

  int64_t first = 0;  // sequence b is tokens [first, first + length)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t length = static_cast<const int32_t*>(actual_seq_lengths.data)[b * actual_seq_lengths.strides[0]];
    for (int64_t h = 0; h < Nv; ++h) {
      const int64_t hk = h / group;
      auto k_at = [&](int64_t t, int64_t j) { return at(key, t, hk, j); };
      auto q_at = [&](int64_t t, int64_t j) { return at(query, t, hk, j) * static_cast<double>(scale); };
      auto alpha_at = [&](int64_t t) { return g ? std::exp(at(*g, t, h)) : 1.0; };

      // Forward: states[n] is the state before token first + n (states[0] = initialState).
      std::vector<Vec> states(1, Vec(Dv * Dk));
      for (int64_t i = 0; i < Dv; ++i)
        for (int64_t j = 0; j < Dk; ++j) states[0][i * Dk + j] = at(initial_state, b, h, i, j);
      for (int64_t t = first; t < first + length; ++t) {
        Vec s = states.back();
        const double alpha = alpha_at(t);
        for (double& e : s) e *= alpha;
        for (int64_t i = 0; i < Dv; ++i) {
          double p = 0;
          for (int64_t j = 0; j < Dk; ++j) p += s[i * Dk + j] * k_at(t, j);
          const double u = at(beta, t, h) * (at(value, t, h, i) - p);
          for (int64_t j = 0; j < Dk; ++j) s[i * Dk + j] += u * k_at(t, j);
        }
        states.push_back(s);
      }

      // Reverse. D = ∂L/∂S_t.
      Vec D(Dv * Dk, 0.0);
      if (grad_final_state)
        for (int64_t i = 0; i < Dv; ++i)
          for (int64_t j = 0; j < Dk; ++j) D[i * Dk + j] = at(*grad_final_state, b, h, i, j);
      for (int64_t t = first + length - 1; t >= first; --t) {
        const Vec& s_prev = states[t - first];
        const Vec& s_t = states[t - first + 1];
        const double alpha = alpha_at(t), bt = at(beta, t, h);
        // Recompute S', p of this token.
        Vec s_dec(Dv * Dk), p(Dv, 0.0);
        for (int64_t e = 0; e < Dv * Dk; ++e) s_dec[e] = alpha * s_prev[e];
        for (int64_t i = 0; i < Dv; ++i)
          for (int64_t j = 0; j < Dk; ++j) p[i] += s_dec[i * Dk + j] * k_at(t, j);

        // o_t = S_t q̃
        for (int64_t i = 0; i < Dv; ++i) {
          const double dout = at(grad_out, t, h, i);
          for (int64_t j = 0; j < Dk; ++j) {
            D[i * Dk + j] += dout * q_at(t, j);
            grads->query[(t * Nk + hk) * Dk + j] += static_cast<double>(scale) * s_t[i * Dk + j] * dout;
          }
        }
        // S_t = S' + u kᵀ, u = β (v − p)
        Vec du(Dv, 0.0);
        for (int64_t i = 0; i < Dv; ++i)
          for (int64_t j = 0; j < Dk; ++j) du[i] += D[i * Dk + j] * k_at(t, j);
        Vec dS = D;  // dS'
        for (int64_t i = 0; i < Dv; ++i) {
          const double u = bt * (at(value, t, h, i) - p[i]);
          for (int64_t j = 0; j < Dk; ++j) grads->key[(t * Nk + hk) * Dk + j] += D[i * Dk + j] * u;
          grads->value[(t * Nv + h) * Dv + i] = bt * du[i];
          grads->beta[t * Nv + h] += (at(value, t, h, i) - p[i]) * du[i];
          // p = S' k
          const double dp = -bt * du[i];
          for (int64_t j = 0; j < Dk; ++j) {
            dS[i * Dk + j] += dp * k_at(t, j);
            grads->key[(t * Nk + hk) * Dk + j] += s_dec[i * Dk + j] * dp;
          }
        }
        // S' = α S_{t-1}
        double dalpha = 0;
        for (int64_t e = 0; e < Dv * Dk; ++e) dalpha += s_prev[e] * dS[e];
        if (g) grads->g[t * Nv + h] = alpha * dalpha;
        for (int64_t e = 0; e < Dv * Dk; ++e) D[e] = alpha * dS[e];
      }
      const int64_t base = (b * Nv + h) * Dv * Dk;
      for (int64_t e = 0; e < Dv * Dk; ++e) grads->initial_state[base + e] = D[e];
    }
    first += length;
  }
}

}  // namespace reference
}  // namespace txops
