// acl_objects.h — the host-side aclScalar, aclFloatArray, aclBoolArray, aclTensorList and aclScalarList, and
// the registry of live acl objects (tensors and int arrays too). Every create call registers its object and
// every destroy call releases it first, so a destroyed, foreign or wrong-kind pointer is detected exactly (by
// address, under a mutex — not by reading memory that may have been freed) and refused with
// ACLNN_ERR_PARAM_INVALID. Lists own their elements (CANN's aclDestroyTensorList destroys the tensors):
// an owned element cannot be destroyed on its own, nor joined to a second list.
#ifndef TXOPS_RUNTIME_ACL_OBJECTS_H_
#define TXOPS_RUNTIME_ACL_OBJECTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"

struct aclScalar {
  aclDataType dtype = ACL_FLOAT;
  alignas(8) unsigned char value[8] = {};  // the dtype's bytes (at most 8 for the dtypes txops knows)
  uint64_t magic = 0;
};

struct aclFloatArray {
  std::vector<float> values;
  uint64_t magic = 0;
};

struct aclBoolArray {
  std::unique_ptr<bool[]> values;
  uint64_t size = 0;
  uint64_t magic = 0;
};

struct aclTensorList {
  std::vector<aclTensor*> tensors;  // owned; entries may be null
  uint64_t magic = 0;
};

struct aclScalarList {
  std::vector<aclScalar*> scalars;  // owned; entries may be null
  uint64_t magic = 0;
};

namespace txops {

enum class ObjectKind : uint8_t { kTensor, kScalar, kIntArray, kFloatArray, kBoolArray, kTensorList, kScalarList };

const char* object_kind_name(ObjectKind kind);  // "aclTensor", ...

// The most elements an array or list may have (2^24: far beyond any operator attribute). A larger count is a
// corrupted size, refused before anything is read or allocated for it.
constexpr uint64_t kMaxArrayElements = uint64_t{1} << 24;
// False (and the recent error "<api>: size must be <= 16777216, got N") when `size` exceeds kMaxArrayElements.
bool array_size_ok(const char* api, uint64_t size);

// Records a newly made object as live.
void register_object(const void* object, ObjectKind kind);

// True when `object` is a live object of that kind.
bool is_live_object(const void* object, ObjectKind kind);

enum class Release { kReleased, kNotLive, kOwned };

// Takes `object` out of the registry (the caller then deletes it) when it is a live object of that kind whose
// owner is `owner` (null: not in a list). kNotLive: not live, or another kind; kOwned: a list owns it.
Release release_object(const void* object, ObjectKind kind, const void* owner = nullptr);

// Makes `list` the owner of each non-null element, all or none: every element must be a live, unowned object
// of `kind` and appear once. On failure: false and the reason in *why (e.g. "value[2] is not a live aclTensor").
bool adopt_elements(const void* const* elements, uint64_t count, ObjectKind kind, const void* list,
                    std::string* why);

// The reason an object was refused, for messages: "<param> is not a live aclTensor (destroyed, or not made by
// aclCreateTensor)".
std::string not_live_message(const char* param, ObjectKind kind);

// For a failed release: records "<api>: <why>" as the recent error and returns ACLNN_ERR_PARAM_INVALID.
aclnnStatus refuse_release(const char* api, Release release, ObjectKind kind);

// The destroy call of every object but the lists: NULL -> success (as in CANN); otherwise the object must be
// live, of this kind and in no list; it is released, its magic cleared, and deleted.
template <class T>
aclnnStatus destroy_object(const char* api, const T* object, ObjectKind kind) {
  if (object == nullptr) return ACLNN_SUCCESS;
  const Release release = release_object(object, kind);
  if (release != Release::kReleased) return refuse_release(api, release, kind);
  const_cast<T*>(object)->magic = 0;
  delete object;
  return ACLNN_SUCCESS;
}

}  // namespace txops

#endif  // TXOPS_RUNTIME_ACL_OBJECTS_H_
