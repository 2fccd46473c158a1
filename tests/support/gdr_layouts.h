// gdr_layouts.h — non-contiguous layouts for the gated-delta-rule tests (the API accepts any strides, stride 0
// included): a copy of a tensor with padded rows and a leading offset inside sentinel-filled storage, and a
// check that an op wrote nothing but the view's elements.
#ifndef TXOPS_TESTS_SUPPORT_GDR_LAYOUTS_H_
#define TXOPS_TESTS_SUPPORT_GDR_LAYOUTS_H_

#include <cstdint>
#include <vector>

#include "support/gdr_problem.h"

namespace gdrtest {

constexpr uint8_t kSentinelByte = 0xA5;

// `src`'s elements in storage where every dimension's stride leaves `pad` extra elements per innermost row,
// starting `offset` elements in; the rest of the storage holds kSentinelByte.
struct PaddedTensor {
  PaddedTensor(const HostTensor& src, int64_t pad, int64_t offset);
  TensorView view;                // over storage, offset applied
  std::vector<uint8_t> storage;
  int64_t offset;
  // True when every byte outside the view's elements still holds kSentinelByte.
  bool outside_untouched() const;
  // The view's elements, contiguous (for comparing with the reference).
  HostTensor compact() const;
};

// A view of `src`'s first slice along dimension `dim`, broadcast to `size` with stride 0.
TensorView broadcast_first(const HostTensor& src, int dim, int64_t size);

}  // namespace gdrtest

#endif  // TXOPS_TESTS_SUPPORT_GDR_LAYOUTS_H_
