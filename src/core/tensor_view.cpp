// tensor_view.cpp — TensorView constructors and queries, dtype names and sizes.
#include <cstdint>
#include <cstdio>
#include <string>

#include "txops/txops.h"

namespace txops {
namespace {

// Products of caller-given extents saturate instead of overflowing: an unchecked view may hold any
// int64 shape, and validation (view_extent) refuses the overflowing ones with a message later.
int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
  return r;
}

}  // namespace

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    case DType::kI64: case DType::kU64: case DType::kF64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kBF16: return "bf16";
    case DType::kI8: return "int8";
    case DType::kI32: return "int32";
    case DType::kU8: return "uint8";
    case DType::kI16: return "int16";
    case DType::kU16: return "uint16";
    case DType::kU32: return "uint32";
    case DType::kI64: return "int64";
    case DType::kU64: return "uint64";
    case DType::kF64: return "fp64";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

TensorView TensorView::make(void* data, DType dtype, int32_t ndim, const int64_t* shape, const int64_t* strides) {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.ndim = ndim < 0 ? 0 : (ndim > kMaxDims ? kMaxDims : ndim);
  int64_t running = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    v.shape[d] = shape[d];
    v.strides[d] = strides ? strides[d] : running;
    running = saturating_mul(running, shape[d] > 0 ? shape[d] : 1);
  }
  return v;
}

TensorView::TensorView(void* data_, DType dtype_, std::initializer_list<int64_t> shape_) {
  *this = make(data_, dtype_, static_cast<int32_t>(shape_.size()), shape_.begin(), nullptr);
}

TensorView::TensorView(void* data_, DType dtype_, std::initializer_list<int64_t> shape_,
                       std::initializer_list<int64_t> strides_) {
  const bool same = shape_.size() == strides_.size();
  *this = make(data_, dtype_, static_cast<int32_t>(shape_.size()), shape_.begin(), same ? strides_.begin() : nullptr);
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n = saturating_mul(n, shape[d]);
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t running = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] != 1 && strides[d] != running) return false;
    running = saturating_mul(running, shape[d]);
  }
  return true;
}

std::string TensorView::shape_string() const {
  std::string s = "(";
  for (int d = 0; d < ndim; ++d) {
    if (d) s += ", ";
    s += std::to_string(shape[d]);
  }
  return s + (ndim == 1 ? ",)" : ")");
}

}  // namespace txops
