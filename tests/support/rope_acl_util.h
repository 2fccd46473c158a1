// rope_acl_util.h — aclTensor handles for tests that drive the aclnn C API: a TensorView (or a zero-filled
// contiguous tensor the helper owns) turned into an aclTensor with aclCreateTensor (strides, storage dims),
// destroyed automatically.
#ifndef TXOPS_TESTS_SUPPORT_ROPE_ACL_UTIL_H_
#define TXOPS_TESTS_SUPPORT_ROPE_ACL_UTIL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "aclnn/acl_meta.h"
#include "txops/txops.h"

namespace txops {
namespace testing {

struct AclTensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
using AclTensorPtr = std::unique_ptr<aclTensor, AclTensorDeleter>;

struct AclIntArrayDeleter {
  void operator()(aclIntArray* a) const { aclDestroyIntArray(a); }
};
using AclIntArrayPtr = std::unique_ptr<aclIntArray, AclIntArrayDeleter>;

// The view as an aclTensor: storage starts at the view's first element (offset 0) and spans exactly the
// elements the view reaches; strides are passed through. Null when aclCreateTensor refuses.
AclTensorPtr to_acl_tensor(const TensorView& view, aclFormat format = ACL_FORMAT_ND);

// A zero-filled contiguous tensor (fp values 0) with its own storage, usable as a view and as an aclTensor.
class OwnedTensor {
 public:
  OwnedTensor() = default;
  OwnedTensor(DType dtype, const std::vector<int64_t>& shape);
  const TensorView& view() const { return view_; }
  const TensorView* ptr() const { return &view_; }
  aclTensor* acl(aclFormat format = ACL_FORMAT_ND);  // created on first use (per format: last one kept)

 private:
  std::vector<uint64_t> storage_;  // 8-byte aligned
  TensorView view_;
  AclTensorPtr acl_;
};

}  // namespace testing
}  // namespace txops

#endif  // TXOPS_TESTS_SUPPORT_ROPE_ACL_UTIL_H_
