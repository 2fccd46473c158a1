// reference.cpp — the fp64 causal-conv1d oracle (reference.h).
#include "ops/causal_conv1d/reference.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"

namespace txops {
namespace reference {
namespace {

double element(const TensorView& v, std::initializer_list<int64_t> index) {
  int64_t offset = 0, d = 0;
  for (int64_t i : index) offset += i * v.strides[d++];
  return load_f64(v.data, v.dtype, offset);
}

int64_t int_at(const TensorView& v, int64_t i) {
  return static_cast<int64_t>(static_cast<const int32_t*>(v.data)[i * v.strides[0]]);
}

}  // namespace

void causal_conv1d(bool update, const TensorView& x, const TensorView& weight, const TensorView& conv_states,
                   const TensorView* bias, const TensorView* query_start_loc, const TensorView* cache_indices,
                   const TensorView* per_sequence, ConvActivation activation, int64_t null_block_id,
                   std::vector<double>* y, std::vector<double>* states) {
  const bool varlen = x.ndim == 2;
  const int64_t dim = x.shape[x.ndim - 1], K = weight.shape[0];
  const int64_t lines = conv_states.shape[0], S = conv_states.shape[1];
  const int64_t batch = varlen ? query_start_loc->shape[0] - 1 : x.shape[0];
  const int64_t tokens = varlen ? x.shape[0] : x.shape[0] * x.shape[1];
  y->assign(static_cast<size_t>(tokens * dim), 0.0);
  states->resize(static_cast<size_t>(lines * S * dim));
  for (int64_t l = 0; l < lines; ++l)
    for (int64_t r = 0; r < S; ++r)
      for (int64_t c = 0; c < dim; ++c) (*states)[(l * S + r) * dim + c] = element(conv_states, {l, r, c});
  auto x_at = [&](int64_t token, int64_t c) {  // token: flat index over all sequences
    return varlen ? element(x, {token, c}) : element(x, {token / x.shape[1], token % x.shape[1], c});
  };
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = varlen ? int_at(*query_start_loc, b) : b * x.shape[1];
    const int64_t L = (varlen ? int_at(*query_start_loc, b + 1) : (b + 1) * x.shape[1]) - start;
    const int64_t line = cache_indices ? int_at(*cache_indices, b) : b;
    if (cache_indices && line == null_block_id) continue;  // y stays zero, the line is not touched
    // History: causal_conv1d_fn rows 0..K-2 when initial_state_mode is 1, else zeros; update rows o..o+K-2.
    bool has_history = true;
    int64_t first_row = 0;
    if (!update) {
      has_history = per_sequence && int_at(*per_sequence, b) == 1;
    } else if (per_sequence) {
      first_row = std::max<int64_t>(int_at(*per_sequence, b) - 1, 0);
    }
    const int64_t P = K - 1 + L;
    std::vector<double> window(static_cast<size_t>(P * dim));  // p, as read before anything is written
    for (int64_t i = 0; i < P; ++i)
      for (int64_t c = 0; c < dim; ++c)
        window[i * dim + c] = i < K - 1 ? (has_history ? element(conv_states, {line, first_row + i, c}) : 0.0)
                                        : x_at(start + i - (K - 1), c);
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t c = 0; c < dim; ++c) {
        double v = bias ? element(*bias, {c}) : 0.0;
        for (int64_t j = 0; j < K; ++j) v += element(weight, {j, c}) * window[(t + j) * dim + c];
        if (activation == ConvActivation::kSilu) v = v / (1.0 + std::exp(-v));
        (*y)[(start + t) * dim + c] = v;
      }
    }
    // Write-back: prefill row r <- p[P - S + r] (when >= 0); update rows r < min(K-2+L, S) <- p[1 + r].
    const int64_t rows = update ? std::min(K - 2 + L, S) : S;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t src = update ? 1 + r : P - S + r;
      if (src < 0) continue;
      for (int64_t c = 0; c < dim; ++c) (*states)[(line * S + r) * dim + c] = window[src * dim + c];
    }
  }
}

}  // namespace reference
}  // namespace txops
