// reference.cpp — the fp64 oracle of the five RoPE operators (docs/rope.md), written for reading.
//
// Every op works on "rows": all leading indices of a tensor, the last axis being the head dim D. For one row
// x[0..L) with its cos/sin rows c[0..L), s[0..L) (full width: halves and quarters may differ) the four modes are
//   half            y = cat(x1*c1 - x2*s1, x2*c2 + x1*s2)                    (x1, x2 = halves)
//   interleave      y[2k] = x[2k]*c[2k] - x[2k+1]*s[2k],  y[2k+1] = x[2k+1]*c[2k+1] + x[2k]*s[2k+1]
//   quarter         half mode on [0, L/2) and on [L/2, L) independently
//   interleave-half p = cat(xe, xo) (xe = x[0::2], xo = x[1::2]); y = cat(xe*c1 - xo*s1, xo*c2 + xe*s2)
// and the backward of each is the exact adjoint dx = J^T dy (formulas at rotate_backward).
// cos/sin broadcast: cos has x's rank; along each axis its size is 1 (broadcast) or x's size, so the cos row
// of x row (i0, i1, ...) is (i0 or 0, i1 or 0, ...). gradCos/gradSin sum over the broadcast axes.
// Inputs are read through their strides (any strides, 0 included) and widened exactly to double; nothing
// is rounded; outputs are contiguous row-major vectors in the output's logical shape.
#include "ops/rope/reference.h"

#include <cstdint>

#include "core/dtype.h"

namespace txops {
namespace reference {
namespace {

// ---- strided access ------------------------------------------------------------------------------

// Number of rows (product of all axes but the last) of a view.
int64_t row_count(const TensorView& v) {
  int64_t n = 1;
  for (int a = 0; a + 1 < v.ndim; ++a) n *= v.shape[a];
  return n;
}

// Row-major flat row number -> leading indices idx[0 .. ndim-1).
void row_indices(const TensorView& v, int64_t row, int64_t* idx) {
  for (int a = v.ndim - 2; a >= 0; --a) {
    idx[a] = row % v.shape[a];
    row /= v.shape[a];
  }
}

// Element offset of the row at leading indices idx, where each axis of size 1 in `v` is broadcast (index 0).
int64_t row_offset(const TensorView& v, const int64_t* idx) {
  int64_t off = 0;
  for (int a = 0; a + 1 < v.ndim; ++a) off += (v.shape[a] == 1 ? 0 : idx[a]) * v.strides[a];
  return off;
}

// Flat row-major number of v's row at (broadcast) leading indices idx.
int64_t row_number(const TensorView& v, const int64_t* idx) {
  int64_t r = 0;
  for (int a = 0; a + 1 < v.ndim; ++a) r = r * v.shape[a] + (v.shape[a] == 1 ? 0 : idx[a]);
  return r;
}

// Reads `len` elements of a row starting at channel `first`, widened to double.
std::vector<double> load_row(const TensorView& v, int64_t row_off, int64_t first, int64_t len) {
  std::vector<double> r(static_cast<size_t>(len));
  const int64_t step = v.strides[v.ndim - 1];
  for (int64_t j = 0; j < len; ++j) r[j] = load_f64(v.data, v.dtype, row_off + (first + j) * step);
  return r;
}

// ---- one row, one mode ------------------------------------------------------------------------------

// The forward y = f(x) of one row of length L = x.size().
std::vector<double> rotate_forward(RotaryMode mode, const std::vector<double>& x, const std::vector<double>& c,
                                   const std::vector<double>& s) {
  const size_t L = x.size();
  std::vector<double> y(L);
  switch (mode) {
    case RotaryMode::kHalf: {
      const size_t h = L / 2;
      for (size_t i = 0; i < h; ++i) {
        y[i] = x[i] * c[i] - x[h + i] * s[i];
        y[h + i] = x[h + i] * c[h + i] + x[i] * s[h + i];
      }
      break;
    }
    case RotaryMode::kInterleave:
      for (size_t k = 0; 2 * k + 1 < L; ++k) {
        y[2 * k] = x[2 * k] * c[2 * k] - x[2 * k + 1] * s[2 * k];
        y[2 * k + 1] = x[2 * k + 1] * c[2 * k + 1] + x[2 * k] * s[2 * k + 1];
      }
      break;
    case RotaryMode::kQuarter: {
      const size_t q = L / 4;  // quarters x1 | x2 | x3 | x4; half mode on (x1, x2) and on (x3, x4)
      for (size_t base = 0; base < L; base += 2 * q) {
        for (size_t i = 0; i < q; ++i) {
          const size_t a = base + i, b = base + q + i;
          y[a] = x[a] * c[a] - x[b] * s[a];
          y[b] = x[b] * c[b] + x[a] * s[b];
        }
      }
      break;
    }
    case RotaryMode::kInterleaveHalf: {
      const size_t h = L / 2;  // y[i] uses (xe[i], xo[i]) = (x[2i], x[2i+1]); output in half layout
      for (size_t i = 0; i < h; ++i) {
        const double xe = x[2 * i], xo = x[2 * i + 1];
        y[i] = xe * c[i] - xo * s[i];
        y[h + i] = xo * c[h + i] + xe * s[h + i];
      }
      break;
    }
  }
  return y;
}

// The backward dx = J^T dy of one row (spec's backward table).
std::vector<double> rotate_backward(RotaryMode mode, const std::vector<double>& dy, const std::vector<double>& c,
                                    const std::vector<double>& s) {
  const size_t L = dy.size();
  std::vector<double> dx(L);
  switch (mode) {
    case RotaryMode::kHalf: {  // dx = cat(c1*dy1 + s2*dy2, c2*dy2 - s1*dy1)
      const size_t h = L / 2;
      for (size_t i = 0; i < h; ++i) {
        dx[i] = c[i] * dy[i] + s[h + i] * dy[h + i];
        dx[h + i] = c[h + i] * dy[h + i] - s[i] * dy[i];
      }
      break;
    }
    case RotaryMode::kInterleave:  // dx[2k] = c[2k]dy[2k] + s[2k+1]dy[2k+1], dx[2k+1] = c[2k+1]dy[2k+1] - s[2k]dy[2k]
      for (size_t k = 0; 2 * k + 1 < L; ++k) {
        dx[2 * k] = c[2 * k] * dy[2 * k] + s[2 * k + 1] * dy[2 * k + 1];
        dx[2 * k + 1] = c[2 * k + 1] * dy[2 * k + 1] - s[2 * k] * dy[2 * k];
      }
      break;
    case RotaryMode::kQuarter: {  // the half rule on each half
      const size_t q = L / 4;
      for (size_t base = 0; base < L; base += 2 * q) {
        for (size_t i = 0; i < q; ++i) {
          const size_t a = base + i, b = base + q + i;
          dx[a] = c[a] * dy[a] + s[b] * dy[b];
          dx[b] = c[b] * dy[b] - s[a] * dy[a];
        }
      }
      break;
    }
    case RotaryMode::kInterleaveHalf: {  // dx[2k] = c1[k]dy1[k] + s2[k]dy2[k], dx[2k+1] = c2[k]dy2[k] - s1[k]dy1[k]
      const size_t h = L / 2;
      for (size_t k = 0; k < h; ++k) {
        dx[2 * k] = c[k] * dy[k] + s[h + k] * dy[h + k];
        dx[2 * k + 1] = c[h + k] * dy[h + k] - s[k] * dy[k];
      }
      break;
    }
  }
  return dx;
}

// What cos multiplies in the forward (x, or cat(xe, xo) for interleave-half) and what sin multiplies
// (rot(x), in the forward's input order): y = cos_factor*c + sin_factor*s, so dcos = dy*cos_factor and
// dsin = dy*sin_factor, element by element.
void cos_sin_factors(RotaryMode mode, const std::vector<double>& x, std::vector<double>* cos_factor,
                     std::vector<double>* sin_factor) {
  const size_t L = x.size();
  cos_factor->assign(L, 0.0);
  sin_factor->assign(L, 0.0);
  switch (mode) {
    case RotaryMode::kHalf: {  // rot = cat(-x2, x1)
      const size_t h = L / 2;
      for (size_t i = 0; i < h; ++i) {
        (*sin_factor)[i] = -x[h + i];
        (*sin_factor)[h + i] = x[i];
      }
      *cos_factor = x;
      break;
    }
    case RotaryMode::kInterleave:  // rot[2k] = -x[2k+1], rot[2k+1] = x[2k]
      for (size_t k = 0; 2 * k + 1 < L; ++k) {
        (*sin_factor)[2 * k] = -x[2 * k + 1];
        (*sin_factor)[2 * k + 1] = x[2 * k];
      }
      *cos_factor = x;
      break;
    case RotaryMode::kQuarter: {  // rot = cat(-x2, x1, -x4, x3)
      const size_t q = L / 4;
      for (size_t base = 0; base < L; base += 2 * q) {
        for (size_t i = 0; i < q; ++i) {
          (*sin_factor)[base + i] = -x[base + q + i];
          (*sin_factor)[base + q + i] = x[base + i];
        }
      }
      *cos_factor = x;
      break;
    }
    case RotaryMode::kInterleaveHalf: {  // cos factor cat(xe, xo), sin factor cat(-xo, xe)
      const size_t h = L / 2;
      for (size_t i = 0; i < h; ++i) {
        (*cos_factor)[i] = x[2 * i];
        (*cos_factor)[h + i] = x[2 * i + 1];
        (*sin_factor)[i] = -x[2 * i + 1];
        (*sin_factor)[h + i] = x[2 * i];
      }
      break;
    }
  }
}

// ---- whole tensors ----------------------------------------------------------------------------------

// For every row of x (any rank, D = last axis): channels [first, first + L) are rotated (forward or
// backward) with channels [0, L) of the broadcast cos/sin row, the others copied. Output row-major in x's shape.
void rotate_tensor(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                   int64_t first, int64_t L, bool backward, std::vector<double>* out) {
  const int64_t D = x.shape[x.ndim - 1], rows = row_count(x);
  out->assign(static_cast<size_t>(rows * D), 0.0);
  int64_t idx[kMaxDims] = {};
  for (int64_t r = 0; r < rows; ++r) {
    row_indices(x, r, idx);
    const std::vector<double> whole = load_row(x, row_offset(x, idx), 0, D);
    double* dst = out->data() + r * D;
    for (int64_t d = 0; d < D; ++d) dst[d] = whole[d];
    if (L == 0) continue;
    const std::vector<double> part(whole.begin() + first, whole.begin() + first + L);
    const std::vector<double> c = load_row(cos, row_offset(cos, idx), 0, L);
    const std::vector<double> s = load_row(sin, row_offset(sin, idx), 0, L);
    const std::vector<double> y = backward ? rotate_backward(mode, part, c, s) : rotate_forward(mode, part, c, s);
    for (int64_t j = 0; j < L; ++j) dst[first + j] = y[j];
  }
}

// Adds sum over x's rows of dy*cos_factor (into dcos) and dy*sin_factor (into dsin) at the broadcast cos row;
// dcos/dsin are row-major in cos's shape. Channels beyond cos D do not touch cos.
void accumulate_cos_sin_grads(const TensorView& dy, const TensorView& x, const TensorView& cos, RotaryMode mode,
                              std::vector<double>* dcos, std::vector<double>* dsin) {
  const int64_t L = cos.shape[cos.ndim - 1], rows = row_count(x);
  int64_t idx[kMaxDims] = {};
  std::vector<double> cos_factor, sin_factor;
  for (int64_t r = 0; r < rows; ++r) {
    row_indices(x, r, idx);
    const std::vector<double> xr = load_row(x, row_offset(x, idx), 0, L);
    const std::vector<double> g = load_row(dy, row_offset(dy, idx), 0, L);
    cos_sin_factors(mode, xr, &cos_factor, &sin_factor);
    const int64_t base = row_number(cos, idx) * L;
    for (int64_t j = 0; j < L; ++j) {
      (*dcos)[base + j] += g[j] * cos_factor[j];
      (*dsin)[base + j] += g[j] * sin_factor[j];
    }
  }
}

}  // namespace

void interleave_rope(const TensorView& x, const TensorView& cos, const TensorView& sin, std::vector<double>* out) {
  // x (B, N, S, D), cos/sin (Bc, 1, Sc, D): interleave-half over the whole of D.
  rotate_tensor(x, cos, sin, RotaryMode::kInterleaveHalf, 0, x.shape[x.ndim - 1], false, out);
}

void inplace_partial_rotary_mul(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                                int64_t start, int64_t end, bool backward, std::vector<double>* out) {
  // x (B, S, N, D); cos/sin (b, s, n, L = end - start) rotate x[..., start:end]; the rest is x unchanged.
  rotate_tensor(x, cos, sin, mode, start, end - start, backward, out);
}

void apply_rotary_pos_emb(const TensorView& query, const TensorView& key, const TensorView& cos,
                          const TensorView& sin, Layout layout, RotaryMode mode, std::vector<double>* q_out,
                          std::vector<double>* k_out) {
  // Every layout puts N (or the broadcast axis) where cos has size 1, so the broadcast rule is the same for
  // BSND (Bc,S,1,D), SBND (S,Bc,1,D), BNSD (Bc,1,S,D) and TND (T,1,D). The first cos-D channels rotate.
  (void)layout;
  const int64_t rotated = cos.shape[cos.ndim - 1];
  rotate_tensor(query, cos, sin, mode, 0, rotated, false, q_out);
  rotate_tensor(key, cos, sin, mode, 0, rotated, false, k_out);
}

void apply_rotary_pos_emb_grad(const TensorView& grad_query_embed, const TensorView& grad_key_embed,
                               const TensorView& cos, const TensorView& sin, const TensorView* query,
                               const TensorView* key, RotaryMode mode, Layout layout,
                               std::vector<double>* grad_query, std::vector<double>* grad_key,
                               std::vector<double>* grad_cos, std::vector<double>* grad_sin) {
  // gradQuery = J^T gradQueryEmbed, gradKey = J^T gradKeyEmbed.
  (void)layout;
  const int64_t rotated = cos.shape[cos.ndim - 1];
  rotate_tensor(grad_query_embed, cos, sin, mode, 0, rotated, true, grad_query);
  rotate_tensor(grad_key_embed, cos, sin, mode, 0, rotated, true, grad_key);
  grad_cos->clear();
  grad_sin->clear();
  if (query == nullptr || key == nullptr) return;
  // gradCos = sum(Gq*q) + sum(Gk*k), gradSin = sum(Gq*rot(q)) + sum(Gk*rot(k)) over the broadcast axes;
  // q and k reduced separately, then added.
  const size_t n = static_cast<size_t>(row_count(cos) * cos.shape[cos.ndim - 1]);
  std::vector<double> q_dcos(n, 0.0), q_dsin(n, 0.0), k_dcos(n, 0.0), k_dsin(n, 0.0);
  accumulate_cos_sin_grads(grad_query_embed, *query, cos, mode, &q_dcos, &q_dsin);
  accumulate_cos_sin_grads(grad_key_embed, *key, cos, mode, &k_dcos, &k_dsin);
  grad_cos->resize(n);
  grad_sin->resize(n);
  for (size_t i = 0; i < n; ++i) {
    (*grad_cos)[i] = q_dcos[i] + k_dcos[i];
    (*grad_sin)[i] = q_dsin[i] + k_dsin[i];
  }
}

}  // namespace reference
}  // namespace txops
