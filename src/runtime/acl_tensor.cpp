// acl_tensor.cpp — aclCreateTensor & co. A tensor is a view (dims, strides, offset in elements) over
// storage (storageDims elements at tensorData). Creation refuses (NULL + aclGetRecentErrMsg) a negative or
// overflowing shape and a view outside its storage; each op checks again when it converts the tensor to a view,
// and checks the storage against the aclrtMalloc block it points into (161002 otherwise). Tensors and int
// arrays are recorded in the live-object registry (acl_objects.h): a destroyed or foreign one given to a destroy,
// introspection or operator call returns 161002 with a message, found by address (freed memory is not read).
#include "runtime/acl_tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/status.h"
#include "core/view_extent.h"
#include "runtime/acl_memory.h"
#include "runtime/acl_objects.h"

namespace {

constexpr uint64_t kTensorMagic = 0x7478546e73724d67ull;  // "txTnsrMg"
constexpr uint64_t kIntArrayMagic = 0x7478496e7441724dull;
constexpr txops::ObjectKind kTensorKind = txops::ObjectKind::kTensor;
constexpr txops::ObjectKind kIntArrayKind = txops::ObjectKind::kIntArray;

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
  auto refuse = [](const std::string& why) -> aclTensor* {
    txops::set_recent_error("aclCreateTensor: " + why);
    return nullptr;
  };
  if (viewDimsNum > static_cast<uint64_t>(txops::kMaxDims)) {
    return refuse("viewDimsNum must be <= 8, got " + std::to_string(viewDimsNum));
  }
  if (storageDimsNum > static_cast<uint64_t>(txops::kMaxDims)) {
    return refuse("storageDimsNum must be <= 8, got " + std::to_string(storageDimsNum));
  }
  if (viewDimsNum > 0 && viewDims == nullptr) return refuse("viewDims must not be null when viewDimsNum > 0");
  if (storageDimsNum > 0 && storageDims == nullptr) {
    return refuse("storageDims must not be null when storageDimsNum > 0");
  }
  if (offset < 0) return refuse("offset must be >= 0, got " + std::to_string(offset));
  const int ndim = static_cast<int>(viewDimsNum);
  for (int i = 0; i < ndim; ++i) {
    if (viewDims[i] < 0) {
      return refuse("viewDims[" + std::to_string(i) + "] must be >= 0, got " + std::to_string(viewDims[i]));
    }
  }
  for (uint64_t i = 0; i < storageDimsNum; ++i) {
    if (storageDims[i] < 0) {
      return refuse("storageDims[" + std::to_string(i) + "] must be >= 0, got " + std::to_string(storageDims[i]));
    }
  }
  // Contiguous strides when none are given, overflow-checked (a huge shape is refused, not wrapped).
  int64_t strides[txops::kMaxDims] = {};
  int64_t running = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    strides[i] = stride ? stride[i] : running;
    if (__builtin_mul_overflow(running, viewDims[i] > 0 ? viewDims[i] : 1, &running)) {
      return refuse("viewDims overflow int64 in their element count (at viewDims[" + std::to_string(i) +
                    "] = " + std::to_string(viewDims[i]) + ")");
    }
  }
  // Unknown dtype codes are kept (an operator names them); their size is bounded by 8 bytes here.
  const size_t elem = known_dtype(dataType) ? txops::dtype_size(static_cast<txops::DType>(dataType)) : 8;
  txops::ViewExtent extent;
  int bad_dim = -1;
  if (txops::compute_extent(ndim, viewDims, strides, elem, &extent, &bad_dim) != txops::ExtentError::kNone) {
    return refuse("view overflows: its element count or byte span must stay below 2^62 bytes (at dim " +
                  std::to_string(bad_dim) + ": size " + std::to_string(viewDims[bad_dim]) + ", stride " +
                  std::to_string(strides[bad_dim]) + ")");
  }
  int64_t storage_numel = 0;
  if (!txops::checked_numel(static_cast<int>(storageDimsNum), storageDims, elem, &storage_numel)) {
    return refuse("storageDims overflow: their element count must stay below 2^62 bytes");
  }
  if (extent.numel > 0) {
    int64_t lo = 0, hi = 0;
    if (__builtin_add_overflow(offset, extent.lo, &lo) || __builtin_add_overflow(offset, extent.hi, &hi) ||
        lo < 0 || hi >= storage_numel) {
      return refuse("view must lie inside its storage of " + std::to_string(storage_numel) +
                    " elements, got elements offset " + std::to_string(offset) + " + [" + std::to_string(extent.lo) +
                    ", " + std::to_string(extent.hi) + "]");
    }
  }
  auto* t = new aclTensor();
  t->view_dims.assign(viewDims, viewDims + viewDimsNum);
  t->strides.assign(strides, strides + ndim);
  t->offset = offset;
  if (storageDims != nullptr) t->storage_dims.assign(storageDims, storageDims + storageDimsNum);
  t->dtype = dataType;
  t->format = format;
  t->storage = tensorData;
  t->magic = kTensorMagic;
  txops::register_object(t, kTensorKind);
  return t;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  return txops::destroy_object("aclDestroyTensor", tensor, kTensorKind);
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  if (!txops::array_size_ok("aclCreateIntArray", size)) return nullptr;
  if (size > 0 && value == nullptr) {
    txops::set_recent_error("aclCreateIntArray: value must not be null when size > 0");
    return nullptr;
  }
  auto* a = new aclIntArray();
  if (size > 0) a->values.assign(value, value + size);
  a->magic = kIntArrayMagic;
  txops::register_object(a, kIntArrayKind);
  return a;
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return txops::destroy_object("aclDestroyIntArray", array, kIntArrayKind);
}

// Introspection: null -> 161001 (as CANN); an object that is not live -> 161002 and a message.
static aclnnStatus check_get(const void* object, const void* out1, const void* out2, txops::ObjectKind kind,
                             const char* api) {
  if (object == nullptr || out1 == nullptr || out2 == nullptr) return ACLNN_ERR_PARAM_NULLPTR;
  if (!txops::is_live_object(object, kind)) {
    txops::set_recent_error(std::string(api) + ": " + txops::not_live_message("the argument", kind));
    return ACLNN_ERR_PARAM_INVALID;
  }
  return ACLNN_SUCCESS;
}

// The getters' arrays: CANN documents that the caller releases them with delete[], so they come from new[].
static int64_t* copy_dims(const std::vector<int64_t>& v) {
  auto* out = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
  if (out && !v.empty()) std::memcpy(out, v.data(), sizeof(int64_t) * v.size());
  return out;
}

aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims, uint64_t* viewDimsNum) {
  const aclnnStatus st = check_get(tensor, viewDims, viewDimsNum, kTensorKind, "aclGetViewShape");
  if (st != ACLNN_SUCCESS) return st;
  *viewDims = copy_dims(tensor->view_dims);  // the caller releases it with delete[], as in CANN
  *viewDimsNum = tensor->view_dims.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue, uint64_t* stridesNum) {
  const aclnnStatus st = check_get(tensor, stridesValue, stridesNum, kTensorKind, "aclGetViewStrides");
  if (st != ACLNN_SUCCESS) return st;
  *stridesValue = copy_dims(tensor->strides);
  *stridesNum = tensor->strides.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims, uint64_t* storageDimsNum) {
  const aclnnStatus st = check_get(tensor, storageDims, storageDimsNum, kTensorKind, "aclGetStorageShape");
  if (st != ACLNN_SUCCESS) return st;
  *storageDims = copy_dims(tensor->storage_dims);
  *storageDimsNum = tensor->storage_dims.size();
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType) {
  const aclnnStatus st = check_get(tensor, dataType, dataType, kTensorKind, "aclGetDataType");
  if (st != ACLNN_SUCCESS) return st;
  *dataType = tensor->dtype;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset) {
  const aclnnStatus st = check_get(tensor, offset, offset, kTensorKind, "aclGetViewOffset");
  if (st != ACLNN_SUCCESS) return st;
  *offset = tensor->offset;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format) {
  const aclnnStatus st = check_get(tensor, format, format, kTensorKind, "aclGetFormat");
  if (st != ACLNN_SUCCESS) return st;
  *format = tensor->format;
  return ACLNN_SUCCESS;
}
aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  const aclnnStatus st = check_get(array, size, size, kIntArrayKind, "aclGetIntArraySize");
  if (st != ACLNN_SUCCESS) return st;
  *size = array->values.size();
  return ACLNN_SUCCESS;
}

const char* aclGetRecentErrMsg(void) { return txops::recent_error(); }

}  // extern "C"

namespace txops {

Status tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view) {
  if (tensor == nullptr) return fail(StatusCode::kNullptr, "%s must not be null", param);
  if (!is_live_object(tensor, kTensorKind) || tensor->magic != kTensorMagic) {
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
  const size_t elem = dtype_size(dtype);
  // aclCreateTensor refused overflowing shapes and views outside their storage; computed again here with
  // this dtype's size (a tensor created with an unknown code cannot reach this point).
  ViewExtent extent;
  int bad_dim = -1;
  int64_t storage_numel = 0;
  if (compute_extent(ndim, tensor->view_dims.data(), tensor->strides.data(), elem, &extent, &bad_dim) !=
          ExtentError::kNone ||
      !checked_numel(static_cast<int>(tensor->storage_dims.size()), tensor->storage_dims.data(), elem,
                     &storage_numel)) {
    return fail(StatusCode::kParamInvalid, "%s shape overflows (element count or byte span beyond 2^62 bytes)",
                param);
  }
  if (extent.numel > 0) {
    if (tensor->storage == nullptr) return fail(StatusCode::kNullptr, "%s data must not be null", param);
    const int64_t lo = tensor->offset + extent.lo, hi = tensor->offset + extent.hi;
    if (lo < 0 || hi >= storage_numel) {
      return fail(StatusCode::kParamInvalid,
                  "%s view (dims %d, offset %lld) reaches elements [%lld, %lld] outside its storage of %lld "
                  "elements",
                  param, ndim, static_cast<long long>(tensor->offset), static_cast<long long>(lo),
                  static_cast<long long>(hi), static_cast<long long>(storage_numel));
    }
    // Memory the runtime handed out is checked against its block: the storage must fit in what is left of
    // the block from the data pointer on. (Pointers the runtime never allocated are the caller's word.)
    RuntimeBlock block;
    if (find_runtime_block(tensor->storage, &block)) {
      note_used_block(param, block);  // phase two checks the block is still there
      const uint64_t needed = static_cast<uint64_t>(storage_numel) * elem;
      const uint64_t from = reinterpret_cast<uintptr_t>(tensor->storage) - block.base;
      const uint64_t available = block.bytes_from(tensor->storage);
      if (needed > available) {
        return fail(StatusCode::kParamInvalid,
                    "%s storage needs %llu bytes (%lld elements of %s) but its %s block has %llu bytes from the "
                    "data pointer on (block of %llu bytes, data at byte %llu)",
                    param, static_cast<unsigned long long>(needed), static_cast<long long>(storage_numel),
                    dtype_name(dtype), block.kind, static_cast<unsigned long long>(available),
                    static_cast<unsigned long long>(block.size), static_cast<unsigned long long>(from));
      }
    }
  }
  // An empty view reaches nothing, so any offset was accepted for it: its data pointer is the storage's (the
  // offset in bytes could overflow). A non-empty one lies inside its storage (checked above).
  char* base = static_cast<char*>(tensor->storage);
  void* data = base && extent.numel > 0 ? base + tensor->offset * static_cast<int64_t>(elem) : base;
  *view = TensorView::make(data, dtype, ndim, tensor->view_dims.data(), tensor->strides.data());
  return Status();
}

Status optional_tensor_to_view(const aclTensor* tensor, const char* param, TensorView* view, bool* present) {
  *present = tensor != nullptr;
  if (tensor == nullptr) return Status();
  return tensor_to_view(tensor, param, view);
}

Status int_array_to_values(const aclIntArray* array, const char* param, const int64_t** values, uint64_t* count) {
  *values = nullptr;
  *count = 0;
  if (array == nullptr) return Status();
  if (!is_live_object(array, kIntArrayKind)) {
    return fail(StatusCode::kParamInvalid, "%s", not_live_message(param, kIntArrayKind).c_str());
  }
  *values = int_array_values(array, count);
  return Status();
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
