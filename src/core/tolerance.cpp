// tolerance.cpp — the tolerance rows and the fast-vs-reference comparison.
//
// Why these numbers: every RoPE output is one fp32 evaluation (a few fused products, error ~1e-7 relative to
// the terms) followed by one round-to-nearest-even to the output dtype (half an ulp: 2^-9 bf16, 2^-11 fp16).
// rtol is one full ulp of the output dtype; atol covers cancellation when the exact result is near zero.
// gradCos/gradSin sum up to B*N products in fp32, so their atol grows with the terms' magnitude; the
// bounds below hold for inputs of magnitude <= ~4 and reductions of up to ~1e4 terms.
// Gated delta rule: the targets — bf16 max|y-ref|/max(|ref|,RMS(ref)) <= 2^-7, fp32 rel-RMS <= 1e-5.
#include "core/tolerance.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/dtype.h"

namespace txops {

Tolerance tolerance_for(const std::string& row, DType dtype) {
  const bool bf16 = dtype == DType::kBF16, f16 = dtype == DType::kF16;
  if (row == "rope") {
    if (bf16) return {1e-6, 0x1p-8, 0, 0x1p-8};
    if (f16) return {1e-6, 0x1p-10, 0, 0x1p-10};
    return {1e-6, 2e-6, 0, 1e-6};
  }
  if (row == "rope_grad_cos_sin") {
    if (bf16) return {1e-4, 0x1p-8, 1, 0x1p-8};
    if (f16) return {1e-4, 0x1p-10, 1, 0x1p-10};
    return {1e-5, 1e-5, 1, 1e-5};
  }
  // The backward's gradients (dq, dk, dv, dβ, dg, dInitialState): fp32 intermediates, rounded once to the output's
  // dtype, as the forward's outputs; the same bounds.
  if (row == "gdr_out" || row == "gdr_state" || row == "gdr_backward") {
    if (bf16) return {0, 0x1p-7, 1, 0x1p-8};
    if (f16) return {0, 0x1p-9, 1, 0x1p-10};
    return {0, 1e-4, 1, 1e-5};
  }
  // The causal conv: K products and the bias summed in fp32, SiLU in fp32, rounded once to the output's dtype;
  // judged against max(|ref|, RMS(ref)) so that a sum cancelling to ~0 does not demand an impossible relative error.
  if (row == "causal_conv1d") {
    if (bf16) return {0, 0x1p-8, 1, 0x1p-8};
    if (f16) return {0, 0x1p-10, 1, 0x1p-10};
    return {0, 1e-5, 1, 1e-6};
  }
  std::fprintf(stderr, "tolerance_for: unknown row '%s'\n", row.c_str());
  std::abort();
}

std::string coords_string(const TensorView& shape_of, int64_t flat_index) {
  int64_t coords[kMaxDims] = {};
  for (int d = shape_of.ndim - 1; d >= 0; --d) {
    const int64_t n = shape_of.shape[d] > 0 ? shape_of.shape[d] : 1;
    coords[d] = flat_index % n;
    flat_index /= n;
  }
  std::string s = "(";
  for (int d = 0; d < shape_of.ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(coords[d]);
  }
  return s + ")";
}

std::string CompareReport::describe(const TensorView& shape_of) const {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "max_rel=%.3g rel_rms=%.3g max_abs=%.3g", max_rel_err, rel_rms_err, max_abs_err);
  std::string s = buf;
  if (worst_index >= 0) {
    std::snprintf(buf, sizeof(buf), " worst at %s: y=%.9g ref=%.9g", coords_string(shape_of, worst_index).c_str(),
                  worst_value, worst_ref);
    s += buf;
  }
  return s;
}

CompareReport compare_with_reference(const TensorView& y, const std::vector<double>& ref, const Tolerance& tol) {
  CompareReport r;
  const int64_t n = y.numel();
  r.count = n;
  if (static_cast<int64_t>(ref.size()) != n) {
    r.passed = false;
    return r;
  }
  double sum_ref2 = 0;
  for (double v : ref) sum_ref2 += v * v;
  const double rms_ref = n > 0 ? std::sqrt(sum_ref2 / n) : 0;
  double sum_err2 = 0;
  int64_t coords[kMaxDims] = {};
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < y.ndim; ++d) offset += coords[d] * y.strides[d];
    const double v = load_f64(y.data, y.dtype, offset);
    double e = std::fabs(v - ref[i]);
    if (std::isnan(e)) e = (std::isnan(v) && std::isnan(ref[i])) ? 0.0 : INFINITY;  // NaN only matches NaN
    const double mag = std::fabs(ref[i]);
    const double bound = tol.atol + tol.rtol * std::fmax(mag, tol.rms_floor * rms_ref);
    const double norm = bound > 0 ? e / bound : (e > 0 ? INFINITY : 0.0);
    const double rel = e / std::fmax(std::fmax(mag, rms_ref), 1e-300);
    if (norm > r.max_norm_err || r.worst_index < 0) {
      r.max_norm_err = norm;
      r.worst_index = i;
      r.worst_value = v;
      r.worst_ref = ref[i];
    }
    r.max_abs_err = std::fmax(r.max_abs_err, e);
    r.max_rel_err = std::fmax(r.max_rel_err, rel);
    sum_err2 += e * e;
    for (int d = y.ndim - 1; d >= 0; --d) {
      if (++coords[d] < y.shape[d]) break;
      coords[d] = 0;
    }
  }
  r.rel_rms_err = sum_ref2 > 0 ? std::sqrt(sum_err2 / sum_ref2) : std::sqrt(sum_err2);
  r.passed = r.max_norm_err <= 1.0 && r.rel_rms_err <= tol.max_rel_rms;
  if (sum_ref2 == 0) r.passed = r.max_norm_err <= 1.0 && sum_err2 == 0;
  return r;
}

}  // namespace txops
