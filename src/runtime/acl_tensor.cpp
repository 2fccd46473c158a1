// acl_tensor.cpp — aclCreateTensor & co. A tensor is a view (dims, strides, offset in elements) over
// storage (storageDims elements at tensorData). Creation keeps what it is given; each op checks, when it
// converts the tensor to a view, that the view stays inside its storage (161002 otherwise).
#include "runtime/acl_tensor.h"

#include <cstdlib>
#include <cstring>

#include "core/status.h"

namespace {

constexpr uint64_t kTensorMagic = 0x7478546e73724d67ull;  // "txTnsrMg"
constexpr uint64_t kIntArrayMagic = 0x7478496e7441724dull;

bool known_dtype(aclDataType d) {
  switch (d) {
    case ACL_FLOAT: case ACL_FLOAT16: case ACL_INT8: case ACL_INT32: case ACL_UINT8: case ACL_INT16:
    case ACL_UINT16: case ACL_UINT32: case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_BOOL:
    case ACL_BF16:
      return true;
    default:
      return false;
  }
}

}  // namespace

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format, const int64_t* storageDims,
                           uint64_t storageDimsNum, void* tensorData) {
  using txops::fail;
  using txops::StatusCode;
  if (viewDimsNum > static_cast<uint64_t>(txops::kMaxDims)) {
    txops::set_recent_error("aclCreateTensor: viewDimsNum must be <= 8, got " + std::to_string(viewDimsNum));
    return nullptr;
  }
  if (viewDimsNum > 0 && viewDims == nullptr) {
    txops::set_recent_error("aclCreateTensor: viewDims must not be null when viewDimsNum > 0");
    return nullptr;
  }
  if (storageDimsNum > 0 && storageDims == nullptr) {
    txops::set_recent_error("aclCreateTensor: storageDims must not be null when storageDimsNum > 0");
    return nullptr;
  }
  if (offset < 0) {
    txops::set_recent_error("aclCreateTensor: offset must be >= 0, got " + std::to_string(offset));
    return nullptr;
  }
  for (uint64_t i = 0; i < viewDimsNum; ++i) {
    if (viewDims[i] < 0) {
      txops::set_recent_error("aclCreateTensor: viewDims[" + std::to_string(i) + "] must be >= 0, got " +
                              std::to_string(viewDims[i]));
      return nullptr;
    }
  }
  auto* t = new aclTensor();
  t->view_dims.assign(viewDims, viewDims + viewDimsNum);
  t->strides.resize(viewDimsNum);
  int64_t running = 1;
  for (int64_t i = static_cast<int64_t>(viewDimsNum) - 1; i >= 0; --i) {
    t->strides[i] = stride ? stride[i] : running;
    running *= viewDims[i] > 0 ? viewDims[i] : 1;
  }
  t->offset = offset;
  if (storageDims != nullptr) t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
  t->dtype = dataType;
  t->format = format;
  t->storage = tensorData;
  t->magic = kTensorMagic;
  return t;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  if (tensor == nullptr) return ACLNN_SUCCESS;
  if (tensor->magic != kTensorMagic) return ACLNN_ERR_PARAM_INVALID;
  const_cast<aclTensor*>(tensor)->magic = 0;
  delete tensor;
  return ACLNN_SUCCESS;
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  if (size > 0 && value == nullptr) {
    txops::set_recent_error("aclCreateIntArray: value must not be null when size > 0");
    return nullptr;
  }
  auto* a = new aclIntArray();
  if (size > 0) a->values.assign(value, value + size);
  a->magic = kIntArrayMagic;
  return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  if (array == nullptr) return ACLNN_SUCCESS;
  if (array->magic != kIntArrayMagic) return ACLNN_ERR_PARAM_INVALID;
  const_cast<aclIntArray*>(array)->magic = 0;
  delete array;
  return ACLNN_SUCCESS;
}

static int64_t* copy_dims(const std::vector<int64_t>& v) {
  auto* out = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * (v.empty() ? 1 : v.size())));
  if (out && !v.empty()) std::memcpy(out, v.data(), sizeof(int64_t) * v.size());
  return out;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  if (!tensor || !viewDims || !viewDimsNum) return ACLNN_ERR_PARAM_NULLPTR;
  *viewDims = copy_dims(tensor->view_dims);  // caller frees with delete[] in CANN; we use malloc-compatible
  *viewDimsNum = tensor->view_dims.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  if (!tensor || !stridesValue || !stridesNum) return ACLNN_ERR_PARAM_NULLPTR;
  *stridesValue = copy_dims(tensor->strides);
  *stridesNum = tensor->strides.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  if (!tensor || !storageDims || !storageDimsNum) return ACLNN_ERR_PARAM_NULLPTR;
  *storageDims = copy_dims(tensor->storage_dims);
  *storageDimsNum = tensor->storage_dims.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  if (!tensor || !dataType) return ACLNN_ERR_PARAM_NULLPTR;
  *dataType = tensor->dtype;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  if (!tensor || !offset) return ACLNN_ERR_PARAM_NULLPTR;
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  if (!tensor || !format) return ACLNN_ERR_PARAM_NULLPTR;
  *format = tensor->format;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  if (!array || !size) return ACLNN_ERR_PARAM_NULLPTR;
  *size = array->values.size();
  return ACLNN_SUCCESS;
}

const char* aclGetRecentErrMsg(void) { return txops::recent_error(); }

}  // extern "C"

namespace txops {

Status tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view) {
  if (tensor == nullptr) return fail(StatusCode::kNullptr, "%s must not be null", param);
  if (tensor->magic != kTensorMagic) {
    return fail(StatusCode::kParamInvalid, "%s is not a live aclTensor (destroyed, or not made by aclCreateTensor)",
                param);
  }
  if (tensor->format != ACL_FORMAT_ND) {
    return fail(StatusCode::kParamInvalid, "%s format must be ND (%d), got %d", param, ACL_FORMAT_ND,
                static_cast<int>(tensor->format));
  }
  if (!known_dtype(tensor->dtype)) {
    return fail(StatusCode::kParamInvalid, "%s dtype code %d is not an aclDataType", param,
                static_cast<int>(tensor->dtype));
  }
  const auto dtype = static_cast<DType>(tensor->dtype);
  const int ndim = static_cast<int>(tensor->view_dims.size());
  // Bounds: the lowest and highest element the view reaches must lie in [0, storage elements).
  int64_t lo = tensor->offset, hi = tensor->offset, numel = 1;
  for (int d = 0; d < ndim; ++d) {
    numel *= tensor->view_dims[d];
    if (tensor->view_dims[d] == 0) continue;
    const int64_t span = (tensor->view_dims[d] - 1) * tensor->strides[d];
    if (span < 0) lo += span; else hi += span;
  }
  if (numel > 0) {
    if (tensor->storage == nullptr) return fail(StatusCode::kNullptr, "%s data must not be null", param);
    {
      int64_t storage = 1;
      for (int64_t s : tensor->storage_dims) storage *= s;
      if (lo < 0 || hi >= storage) {
        return fail(StatusCode::kParamInvalid,
                    "%s view (dims %d, offset %lld) reaches elements [%lld, %lld] outside its storage of %lld "
                    "elements",
                    param, ndim, static_cast<long long>(tensor->offset), static_cast<long long>(lo),
                    static_cast<long long>(hi), static_cast<long long>(storage));
      }
    }
  }
  char* base = static_cast<char*>(tensor->storage);
  void* data = base ? base + tensor->offset * static_cast<int64_t>(dtype_size(dtype)) : nullptr;
  *view = TensorView::make(data, dtype, ndim, tensor->view_dims.data(), tensor->strides.data());
  return Status();
}

Status optional_tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view, bool* present) {
  *present = tensor != nullptr;
  if (tensor == nullptr) return Status();
  return tensor_to_view(tensor, param, view);
}

const int64_t* int_array_values(const aclIntArray* array, uint64_t* count) {
  if (array == nullptr) {
    *count = 0;
    return nullptr;
  }
  *count = array->values.size();
  return array->values.data();
}

}  // namespace txops
