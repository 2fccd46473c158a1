// acl_tensor.h — the host-side aclTensor / aclIntArray, and their conversion to txops::TensorView for the
// aclnn wrappers (format and storage-bounds checks live here, once, for every op).
#ifndef TXOPS_RUNTIME_ACL_TENSOR_H_
#define TXOPS_RUNTIME_ACL_TENSOR_H_

#include <cstdint>
#include <vector>

#include "aclnn/acl_meta.h"
#include "txops/txops.h"

struct aclTensor {
  std::vector<int64_t> view_dims;
  std::vector<int64_t> strides;  // elements
  int64_t offset = 0;            // elements
  std::vector<int64_t> storage_dims;
  aclDataType dtype = ACL_FLOAT;
  aclFormat format = ACL_FORMAT_ND;
  void* storage = nullptr;
  uint64_t magic = 0;
};

struct aclIntArray {
  std::vector<int64_t> values;
  uint64_t magic = 0;
};

namespace txops {

// Converts `tensor` (the parameter named `param`) to a view: null → 161001; a format other than ND, an
// unsupported dtype code, or a view reaching outside its storage → 161002.
Status tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view);

// As above, but a null tensor gives `present = false` and no error.
Status optional_tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view, bool* present);

// Values of an int array (null → nullptr and count 0).
const int64_t* int_array_values(const aclIntArray* array, uint64_t* count);

// The same for an operator's parameter `param`: null → nullptr, count 0 and ok (the operator decides whether
// it may be absent); an array that is not live (destroyed, foreign) → 161002 naming the parameter.
Status int_array_to_values(const aclIntArray* array, const char* param, const int64_t** values, uint64_t* count);

}  // namespace txops

#endif  // TXOPS_RUNTIME_ACL_TENSOR_H_
