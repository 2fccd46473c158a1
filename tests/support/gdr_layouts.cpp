// gdr_layouts.cpp — see gdr_layouts.h: padded / offset / broadcast views for the gated-delta-rule tests.
#include "support/gdr_layouts.h"

#include <cstring>
#include <functional>

namespace gdrtest {
namespace {

// Calls fn(flat row-major index, element offset) for every element of a view.
void for_each_element(const TensorView& v, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t n = v.numel();
  int64_t coords[txops::kMaxDims] = {};
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t offset = 0;
    for (int d = 0; d < v.ndim; ++d) offset += coords[d] * v.strides[d];
    fn(flat, offset);
    for (int d = v.ndim - 1; d >= 0; --d) {
      if (++coords[d] < v.shape[d]) break;
      coords[d] = 0;
    }
  }
}

}  // namespace

PaddedTensor::PaddedTensor(const HostTensor& src, int64_t pad, int64_t offset_) : offset(offset_) {
  const int ndim = static_cast<int>(src.shape.size());
  std::vector<int64_t> strides(ndim, 1);
  for (int d = ndim - 2; d >= 0; --d)
    strides[d] = (d == ndim - 2 ? src.shape[d + 1] + pad : strides[d + 1] * src.shape[d + 1]);
  const int64_t span = ndim ? src.shape[0] * strides[0] + pad : 1;
  const size_t elem = txops::dtype_size(src.dtype);
  storage.assign(static_cast<size_t>(offset + span) * elem, kSentinelByte);
  view = TensorView::make(storage.data() + offset * elem, src.dtype, ndim, src.shape.data(), strides.data());
  for_each_element(view, [&](int64_t flat, int64_t at) {
    std::memcpy(static_cast<uint8_t*>(view.data) + at * elem, src.bytes.data() + flat * elem, elem);
  });
}

bool PaddedTensor::outside_untouched() const {
  const size_t elem = txops::dtype_size(view.dtype);
  std::vector<bool> inside(storage.size(), false);
  for_each_element(view, [&](int64_t, int64_t at) {
    for (size_t i = 0; i < elem; ++i) inside[(offset + at) * elem + i] = true;
  });
  for (size_t i = 0; i < storage.size(); ++i)
    if (!inside[i] && storage[i] != kSentinelByte) return false;
  return true;
}

HostTensor PaddedTensor::compact() const {
  HostTensor out(view.dtype, std::vector<int64_t>(view.shape, view.shape + view.ndim));
  const size_t elem = txops::dtype_size(view.dtype);
  for_each_element(view, [&](int64_t flat, int64_t at) {
    std::memcpy(out.bytes.data() + flat * elem, static_cast<const uint8_t*>(view.data) + at * elem, elem);
  });
  return out;
}

TensorView broadcast_first(const HostTensor& src, int dim, int64_t size) {
  TensorView v = src.view();
  v.shape[dim] = size;
  v.strides[dim] = 0;
  return v;
}

}  // namespace gdrtest
