// reference_family.cpp — the fp64 oracle of RotaryPositionEmbedding (and V2's rotate matrix), its Grad, and
// RopeWithSinCosCache(V2), written for reading from CANN's formulas (docs/rope.md), independently of the kernels.
//
// RotaryPositionEmbedding is y = p1(x) * cos + p2(x) * sin, where p1 and p2 are signed selections of x's channels
// per mode (the doc's x / x_part1 and x_rotate / x_part2):
//   half            p1 = x,              p2 = cat(-x2, x1)
//   interleave      p1 = x,              p2[2k] = -x[2k+1], p2[2k+1] = x[2k]
//   quarter         p1 = x,              p2 = cat(-x2, x1, -x4, x3)          (quarters)
//   interleave-half p1 = cat(xe, xo),    p2 = cat(-xo, xe)                   (xe = x[0::2], xo = x[1::2])
//   rotate matrix   p1 = x,              p2 = x @ rotate
// so the backward is the transpose of those selections: dx[src1(j)] += sgn1 dy[j] cos[j], dx[src2(j)] += sgn2
// dy[j] sin[j], and dcos[j] = sum dy[j] p1(x)[j], dsin[j] = sum dy[j] p2(x)[j] over the rows cos broadcasts to.
// cos/sin are right-aligned onto x (a missing or size-1 dim broadcasts).
#include "ops/rope/reference.h"

#include <cstdint>

#include "core/dtype.h"

namespace txops {
namespace reference {
namespace {

struct Source {
  int64_t index;
  double sign;
};

// Where p1(x)[j] (first) and p2(x)[j] (second) come from; not used for the rotate matrix's p2.
void selections(RotaryMode mode, int64_t d, int64_t j, Source* p1, Source* p2) {
  const int64_t h = d / 2, q = d / 4;
  *p1 = {j, 1.0};
  *p2 = {j, 0.0};  // every mode sets it below; this only keeps the compiler's flow analysis quiet
  switch (mode) {
    case RotaryMode::kHalf: *p2 = j < h ? Source{j + h, -1.0} : Source{j - h, 1.0}; break;
    case RotaryMode::kInterleave: *p2 = j % 2 == 0 ? Source{j + 1, -1.0} : Source{j - 1, 1.0}; break;
    case RotaryMode::kQuarter: *p2 = (j / q) % 2 == 0 ? Source{j + q, -1.0} : Source{j - q, 1.0}; break;
    case RotaryMode::kInterleaveHalf:
      *p1 = j < h ? Source{2 * j, 1.0} : Source{2 * (j - h) + 1, 1.0};
      *p2 = j < h ? Source{2 * j + 1, -1.0} : Source{2 * (j - h), 1.0};
      break;
  }
}

// Element offset of x's row `row` (row-major over all dims but the last) in `v`, where v (rank <= x's) is
// right-aligned onto x's leading dims and broadcasts along its size-1 dims.
int64_t aligned_row_offset(const TensorView& v, const TensorView& x, int64_t row) {
  int64_t off = 0;
  const int shift = x.ndim - v.ndim;
  for (int a = x.ndim - 2; a >= 0; --a) {
    const int64_t i = row % x.shape[a];
    row /= x.shape[a];
    const int va = a - shift;
    if (va >= 0 && v.shape[va] != 1) off += i * v.strides[va];
  }
  return off;
}

// Row-major row number of v (its own shape) for x's row `row`.
int64_t aligned_row_number(const TensorView& v, const TensorView& x, int64_t row) {
  int64_t r = 0, scale = 1;
  const int shift = x.ndim - v.ndim;
  for (int a = x.ndim - 2; a >= 0; --a) {
    const int64_t i = row % x.shape[a];
    row /= x.shape[a];
    const int va = a - shift;
    if (va < 0) continue;
    if (v.shape[va] != 1) r += i * scale;
    scale *= v.shape[va];
  }
  return r;
}

int64_t rows_of(const TensorView& v) {
  int64_t n = 1;
  for (int a = 0; a + 1 < v.ndim; ++a) n *= v.shape[a];
  return n;
}

std::vector<double> row_of(const TensorView& v, int64_t offset, int64_t d) {
  std::vector<double> r(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j) r[j] = load_f64(v.data, v.dtype, offset + j * v.strides[v.ndim - 1]);
  return r;
}

// x's row offset in its own view (row-major row number -> element offset).
int64_t own_row_offset(const TensorView& v, int64_t row) { return aligned_row_offset(v, v, row); }

}  // namespace

void rotary_position_embedding(const TensorView& x, const TensorView& cos, const TensorView& sin, RotaryMode mode,
                               const TensorView* rotate, std::vector<double>* out) {
  const int64_t d = x.shape[x.ndim - 1], rows = rows_of(x);
  out->assign(static_cast<size_t>(rows * d), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<double> xr = row_of(x, own_row_offset(x, r), d);
    const std::vector<double> c = row_of(cos, aligned_row_offset(cos, x, r), d);
    const std::vector<double> s = row_of(sin, aligned_row_offset(sin, x, r), d);
    for (int64_t j = 0; j < d; ++j) {
      Source p1, p2;
      selections(mode, d, j, &p1, &p2);
      double rotated = 0.0;
      if (rotate != nullptr) {
        for (int64_t i = 0; i < d; ++i) {
          rotated += xr[i] * load_f64(rotate->data, rotate->dtype, i * rotate->strides[0] + j * rotate->strides[1]);
        }
      } else {
        rotated = p2.sign * xr[p2.index];
      }
      (*out)[r * d + j] = p1.sign * xr[p1.index] * c[j] + rotated * s[j];
    }
  }
}

void rotary_position_embedding_grad(const TensorView& dy, const TensorView& cos, const TensorView& sin,
                                    const TensorView* x, RotaryMode mode, std::vector<double>* dx,
                                    std::vector<double>* dcos, std::vector<double>* dsin) {
  const int64_t d = dy.shape[dy.ndim - 1], rows = rows_of(dy);
  dx->assign(static_cast<size_t>(rows * d), 0.0);
  if (x != nullptr) {
    dcos->assign(static_cast<size_t>(rows_of(cos) * d), 0.0);
    dsin->assign(static_cast<size_t>(rows_of(cos) * d), 0.0);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<double> g = row_of(dy, own_row_offset(dy, r), d);
    const std::vector<double> c = row_of(cos, aligned_row_offset(cos, dy, r), d);
    const std::vector<double> s = row_of(sin, aligned_row_offset(sin, dy, r), d);
    std::vector<double> xr;
    if (x != nullptr) xr = row_of(*x, own_row_offset(*x, r), d);
    const int64_t cs_row = aligned_row_number(cos, dy, r);
    for (int64_t j = 0; j < d; ++j) {
      Source p1, p2;
      selections(mode, d, j, &p1, &p2);
      (*dx)[r * d + p1.index] += p1.sign * g[j] * c[j];
      (*dx)[r * d + p2.index] += p2.sign * g[j] * s[j];
      if (x != nullptr) {
        (*dcos)[cs_row * d + j] += g[j] * p1.sign * xr[p1.index];
        (*dsin)[cs_row * d + j] += g[j] * p2.sign * xr[p2.index];
      }
    }
  }
}

void rope_with_sin_cos_cache(const TensorView& positions, const TensorView& query, const TensorView& key,
                             const TensorView& cache, const int64_t* section, int64_t section_count,
                             int64_t head_size, bool is_neox_style, int64_t cache_mode, std::vector<double>* q_out,
                             std::vector<double>* k_out) {
  const int64_t tokens = query.shape[0], rotary_dim = cache.shape[1], half = rotary_dim / 2;
  const int64_t last = positions.ndim - 1;
  auto position = [&](int64_t row, int64_t t) {
    const int64_t at = (section_count > 0 ? row * positions.strides[0] : 0) + t * positions.strides[last];
    if (positions.dtype == DType::kI32) return static_cast<int64_t>(static_cast<const int32_t*>(positions.data)[at]);
    return static_cast<const int64_t*>(positions.data)[at];
  };
  // The position row of cos channel k: mrope sections (cacheMode 0) or the interleaved assignment (cacheMode 1).
  auto row_of_channel = [&](int64_t k) -> int64_t {
    if (section_count == 0) return 0;
    if (cache_mode == 1) {
      if (k % 3 == 1 && k < 3 * section[1]) return 1;
      if (k % 3 == 2 && k < 3 * section[2]) return 2;
      return 0;
    }
    int64_t end = 0;
    for (int64_t r = 0; r < section_count; ++r) {
      end += section[r];
      if (k < end) return r;
    }
    return section_count - 1;
  };
  const TensorView* inputs[2] = {&query, &key};
  std::vector<double>* outputs[2] = {q_out, k_out};
  for (int side = 0; side < 2; ++side) {
    const TensorView& v = *inputs[side];
    const int64_t heads = v.shape[1] / head_size;
    outputs[side]->assign(static_cast<size_t>(tokens * v.shape[1]), 0.0);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<double> c(static_cast<size_t>(half)), s(static_cast<size_t>(half));
      for (int64_t k = 0; k < half; ++k) {
        const int64_t p = position(row_of_channel(k), t);
        c[k] = load_f64(cache.data, cache.dtype, p * cache.strides[0] + k * cache.strides[1]);
        s[k] = load_f64(cache.data, cache.dtype, p * cache.strides[0] + (half + k) * cache.strides[1]);
      }
      for (int64_t h = 0; h < heads; ++h) {
        auto in = [&](int64_t j) {
          return load_f64(v.data, v.dtype, t * v.strides[0] + (h * head_size + j) * v.strides[1]);
        };
        double* o = outputs[side]->data() + t * v.shape[1] + h * head_size;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = is_neox_style ? i : 2 * i, b = is_neox_style ? half + i : 2 * i + 1;
          o[a] = in(a) * c[i] - in(b) * s[i];
          o[b] = in(b) * c[i] + in(a) * s[i];
        }
        for (int64_t j = rotary_dim; j < head_size; ++j) o[j] = in(j);
      }
    }
  }
}

}  // namespace reference
}  // namespace txops
