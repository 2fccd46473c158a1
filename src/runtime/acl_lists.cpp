// acl_lists.cpp — aclTensorList and aclScalarList. As in CANN, a list keeps the element pointers it is given
// and owns them: aclDestroyTensorList / aclDestroyScalarList destroy the elements too. Because of that an
// element may be in one list only, once, and cannot be destroyed on its own while its list lives (CANN would
// free it twice; here those calls return NULL / ACLNN_ERR_PARAM_INVALID with a message). Null entries are kept.
#include <string>

#include "core/status.h"
#include "runtime/acl_objects.h"
#include "runtime/acl_tensor.h"

namespace {

constexpr uint64_t kTensorListMagic = 0x7478544c6973744dull;  // "txTListM"
constexpr uint64_t kScalarListMagic = 0x7478534c6973744dull;

template <class List, class Element>
List* create_list(const char* api, const Element* const* value, uint64_t size, txops::ObjectKind list_kind,
                  txops::ObjectKind element_kind, std::vector<Element*> List::*elements, uint64_t magic) {
  if (!txops::array_size_ok(api, size)) return nullptr;
  if (size > 0 && value == nullptr) {
    txops::set_recent_error(std::string(api) + ": value must not be null when size > 0");
    return nullptr;
  }
  auto* list = new List();
  std::string why;
  if (!txops::adopt_elements(reinterpret_cast<const void* const*>(value), size, element_kind, list, &why)) {
    delete list;
    txops::set_recent_error(std::string(api) + ": " + why);
    return nullptr;
  }
  (list->*elements).reserve(size);
  for (uint64_t i = 0; i < size; ++i) (list->*elements).push_back(const_cast<Element*>(value[i]));
  list->magic = magic;
  txops::register_object(list, list_kind);
  return list;
}

template <class List, class Element>
aclnnStatus destroy_list(const char* api, const List* list, txops::ObjectKind list_kind,
                         txops::ObjectKind element_kind, std::vector<Element*> List::*elements) {
  if (list == nullptr) return ACLNN_SUCCESS;
  const txops::Release release = txops::release_object(list, list_kind);
  if (release != txops::Release::kReleased) return txops::refuse_release(api, release, list_kind);
  for (Element* e : list->*elements) {
    if (e == nullptr) continue;
    // Owned by this list, so released here; never kNotLive (an owned element cannot be destroyed elsewhere).
    if (txops::release_object(e, element_kind, list) == txops::Release::kReleased) {
      e->magic = 0;
      delete e;
    }
  }
  const_cast<List*>(list)->magic = 0;
  delete list;
  return ACLNN_SUCCESS;
}

template <class List, class Element>
aclnnStatus list_size(const char* api, const List* list, txops::ObjectKind kind, uint64_t* size,
                      std::vector<Element*> List::*elements) {
  if (list == nullptr || size == nullptr) return ACLNN_ERR_PARAM_NULLPTR;
  if (!txops::is_live_object(list, kind)) {
    txops::set_recent_error(std::string(api) + ": " + txops::not_live_message("the argument", kind));
    return ACLNN_ERR_PARAM_INVALID;
  }
  *size = (list->*elements).size();
  return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  return create_list<aclTensorList, aclTensor>("aclCreateTensorList", value, size, txops::ObjectKind::kTensorList,
                                               txops::ObjectKind::kTensor, &aclTensorList::tensors,
                                               kTensorListMagic);
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  return destroy_list<aclTensorList, aclTensor>("aclDestroyTensorList", array, txops::ObjectKind::kTensorList,
                                                txops::ObjectKind::kTensor, &aclTensorList::tensors);
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return list_size<aclTensorList, aclTensor>("aclGetTensorListSize", tensorList, txops::ObjectKind::kTensorList,
                                             size, &aclTensorList::tensors);
}

aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size) {
  return create_list<aclScalarList, aclScalar>("aclCreateScalarList", value, size, txops::ObjectKind::kScalarList,
                                               txops::ObjectKind::kScalar, &aclScalarList::scalars,
                                               kScalarListMagic);
}

aclnnStatus aclDestroyScalarList(const aclScalarList* array) {
  return destroy_list<aclScalarList, aclScalar>("aclDestroyScalarList", array, txops::ObjectKind::kScalarList,
                                                txops::ObjectKind::kScalar, &aclScalarList::scalars);
}

aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size) {
  return list_size<aclScalarList, aclScalar>("aclGetScalarListSize", scalarList, txops::ObjectKind::kScalarList,
                                             size, &aclScalarList::scalars);
}

}  // extern "C"
