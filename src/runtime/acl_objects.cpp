// acl_objects.cpp — the registry of live acl objects: address -> (kind, owning list) under one mutex. See
// acl_objects.h. Lookups are by address only, so a freed pointer is never dereferenced to find out.
#include "runtime/acl_objects.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/status.h"

namespace txops {
namespace {

struct Entry {
  ObjectKind kind;
  const void* owner;  // the list holding it, or null
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, Entry> live;
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: objects may be destroyed from static destructors
  return *r;
}

const char* creator_name(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kTensor: return "aclCreateTensor";
    case ObjectKind::kScalar: return "aclCreateScalar";
    case ObjectKind::kIntArray: return "aclCreateIntArray";
    case ObjectKind::kFloatArray: return "aclCreateFloatArray";
    case ObjectKind::kBoolArray: return "aclCreateBoolArray";
    case ObjectKind::kTensorList: return "aclCreateTensorList";
    case ObjectKind::kScalarList: return "aclCreateScalarList";
  }
  return "?";
}

}  // namespace

bool array_size_ok(const char* api, uint64_t size) {
  if (size <= kMaxArrayElements) return true;
  set_recent_error(std::string(api) + ": size must be <= " + std::to_string(kMaxArrayElements) + ", got " +
                   std::to_string(size));
  return false;
}

const char* object_kind_name(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kTensor: return "aclTensor";
    case ObjectKind::kScalar: return "aclScalar";
    case ObjectKind::kIntArray: return "aclIntArray";
    case ObjectKind::kFloatArray: return "aclFloatArray";
    case ObjectKind::kBoolArray: return "aclBoolArray";
    case ObjectKind::kTensorList: return "aclTensorList";
    case ObjectKind::kScalarList: return "aclScalarList";
  }
  return "?";
}

std::string not_live_message(const char* param, ObjectKind kind) {
  return std::string(param) + " is not a live " + object_kind_name(kind) + " (destroyed, or not made by " +
         creator_name(kind) + ")";
}

aclnnStatus refuse_release(const char* api, Release release, ObjectKind kind) {
  std::string why = release == Release::kOwned
                        ? std::string("the ") + object_kind_name(kind) +
                              " belongs to a list, which destroys it (destroy the list instead)"
                        : not_live_message("the argument", kind);
  set_recent_error(std::string(api) + ": " + why);
  return ACLNN_ERR_PARAM_INVALID;
}

void register_object(const void* object, ObjectKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[object] = Entry{kind, nullptr};
}

bool is_live_object(const void* object, ObjectKind kind) {
  if (object == nullptr) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(object);
  return it != r.live.end() && it->second.kind == kind;
}

Release release_object(const void* object, ObjectKind kind, const void* owner) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.live.find(object);
  if (it == r.live.end() || it->second.kind != kind) return Release::kNotLive;
  if (it->second.owner != owner) return Release::kOwned;
  r.live.erase(it);
  return Release::kReleased;
}

bool adopt_elements(const void* const* elements, uint64_t count, ObjectKind kind, const void* list,
                    std::string* why) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::unordered_set<const void*> seen;
  for (uint64_t i = 0; i < count; ++i) {
    const void* e = elements[i];
    if (e == nullptr) continue;
    const std::string at = "value[" + std::to_string(i) + "]";
    auto it = r.live.find(e);
    if (it == r.live.end() || it->second.kind != kind) {
      *why = not_live_message(at.c_str(), kind);
      return false;
    }
    if (it->second.owner != nullptr) {
      *why = at + " already belongs to another list (a list destroys its elements, so one element cannot be in two)";
      return false;
    }
    if (!seen.insert(e).second) {
      *why = at + " appears twice (a list destroys its elements, so each may appear once)";
      return false;
    }
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (elements[i] != nullptr) r.live[elements[i]].owner = list;
  }
  return true;
}

}  // namespace txops
