// acl_arrays.cpp — aclCreateScalar, aclCreateFloatArray, aclCreateBoolArray, their destroy calls and sizes.
// Each copies what it is given (as CANN does), carries a magic number and is recorded in the live-object
// registry (acl_objects.h): a destroyed or foreign pointer -> ACLNN_ERR_PARAM_INVALID with a message.
#include <cstring>
#include <string>

#include "core/status.h"
#include "runtime/acl_objects.h"

namespace {

constexpr uint64_t kScalarMagic = 0x74785363616c724dull;  // "txScalrM"
constexpr uint64_t kFloatArrayMagic = 0x7478466c74417252ull;
constexpr uint64_t kBoolArrayMagic = 0x7478426f6c417252ull;

// Bytes of one value of a dtype txops knows; 0 otherwise.
size_t scalar_bytes(aclDataType d) {
  switch (d) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: return 8;
    default: return 0;
  }
}

aclnnStatus refuse(const std::string& message) {
  txops::set_recent_error(message);
  return ACLNN_ERR_PARAM_INVALID;
}

template <class T>
aclnnStatus get_size(const T* object, txops::ObjectKind kind, uint64_t* size, const char* api,
                     uint64_t n_of(const T*)) {
  if (object == nullptr || size == nullptr) return ACLNN_ERR_PARAM_NULLPTR;
  if (!txops::is_live_object(object, kind)) {
    return refuse(std::string(api) + ": " + txops::not_live_message("the argument", kind));
  }
  *size = n_of(object);
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  if (value == nullptr) {
    txops::set_recent_error("aclCreateScalar: value must not be null");
    return nullptr;
  }
  const size_t bytes = scalar_bytes(dataType);
  if (bytes == 0) {
    txops::set_recent_error("aclCreateScalar: dataType " + std::to_string(static_cast<int>(dataType)) +
                            " is not an aclDataType txops supports");
    return nullptr;
  }
  auto* s = new aclScalar();
  s->dtype = dataType;
  std::memcpy(s->value, value, bytes);
  s->magic = kScalarMagic;
  txops::register_object(s, txops::ObjectKind::kScalar);
  return s;
}

aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return txops::destroy_object("aclDestroyScalar", scalar, txops::ObjectKind::kScalar);
}

aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size) {
  if (!txops::array_size_ok("aclCreateFloatArray", size)) return nullptr;
  if (size > 0 && value == nullptr) {
    txops::set_recent_error("aclCreateFloatArray: value must not be null when size > 0");
    return nullptr;
  }
  auto* a = new aclFloatArray();
  if (size > 0) a->values.assign(value, value + size);
  a->magic = kFloatArrayMagic;
  txops::register_object(a, txops::ObjectKind::kFloatArray);
  return a;
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray* array) {
  return txops::destroy_object("aclDestroyFloatArray", array, txops::ObjectKind::kFloatArray);
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  if (!txops::array_size_ok("aclCreateBoolArray", size)) return nullptr;
  if (size > 0 && value == nullptr) {
    txops::set_recent_error("aclCreateBoolArray: value must not be null when size > 0");
    return nullptr;
  }
  auto* a = new aclBoolArray();
  a->values.reset(new bool[size > 0 ? size : 1]);
  if (size > 0) std::memcpy(a->values.get(), value, size * sizeof(bool));
  a->size = size;
  a->magic = kBoolArrayMagic;
  txops::register_object(a, txops::ObjectKind::kBoolArray);
  return a;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  return txops::destroy_object("aclDestroyBoolArray", array, txops::ObjectKind::kBoolArray);
}

aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size) {
  return get_size<aclFloatArray>(array, txops::ObjectKind::kFloatArray, size, "aclGetFloatArraySize",
                                 [](const aclFloatArray* a) -> uint64_t { return a->values.size(); });
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return get_size<aclBoolArray>(array, txops::ObjectKind::kBoolArray, size, "aclGetBoolArraySize",
                                [](const aclBoolArray* a) -> uint64_t { return a->size; });
}

}  // extern "C"
