// rope_acl_util.cpp — TensorView -> aclTensor for the aclnn tests (see the header).
#include "support/rope_acl_util.h"

namespace txops {
namespace testing {

AclTensorPtr to_acl_tensor(const TensorView& view, aclFormat format) {
  int64_t span = 1;
  for (int a = 0; a < view.ndim; ++a) {
    if (view.shape[a] == 0) span = 0;
    if (view.shape[a] > 0 && span > 0) span += (view.shape[a] - 1) * view.strides[a];
  }
  const int64_t storage_dims[1] = {span};
  return AclTensorPtr(aclCreateTensor(view.shape, static_cast<uint64_t>(view.ndim),
                                      static_cast<aclDataType>(view.dtype), view.strides, 0, format, storage_dims, 1,
                                      view.data));
}

OwnedTensor::OwnedTensor(DType dtype, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const size_t esize = dtype_size(dtype) ? dtype_size(dtype) : 8;
  storage_.assign(static_cast<size_t>(n) * esize / 8 + 1, 0);
  view_ = TensorView::make(storage_.data(), dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr);
}

aclTensor* OwnedTensor::acl(aclFormat format) {
  acl_ = to_acl_tensor(view_, format);
  return acl_.get();
}

}  // namespace testing
}  // namespace txops
