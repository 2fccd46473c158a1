// tensor_import.cpp — DLPack consumer (capsule protocol, dtype / device checks) and Status -> exception mapping.
#include "tensor_import.h"

#include <cstring>

namespace txops_python {

namespace {

// Builds `type(message)` with a `code` attribute and raises it.
[[noreturn]] void raise_with_code(PyObject* type, int code, const std::string& message) {
  PyObject* instance = PyObject_CallFunction(type, "s", message.c_str());
  if (instance != nullptr) {
    PyObject* code_object = PyLong_FromLong(code);
    if (code_object != nullptr) {
      PyObject_SetAttrString(instance, "code", code_object);
      Py_DECREF(code_object);
    }
    PyErr_SetObject(type, instance);
    Py_DECREF(instance);
  }
  throw py::error_already_set();
}

constexpr int kParamInvalid = static_cast<int>(txops::StatusCode::kParamInvalid);

// The txops dtype of a DLPack dtype; false when txops has none.
bool dtype_from_dlpack(DLDataType t, txops::DType* out) {
  if (t.lanes != 1) return false;
  using txops::DType;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) { *out = DType::kF32; return true; }
      if (t.bits == 16) { *out = DType::kF16; return true; }
      if (t.bits == 64) { *out = DType::kF64; return true; }
      return false;
    case kDLBfloat:
      if (t.bits == 16) { *out = DType::kBF16; return true; }
      return false;
    case kDLInt:
      if (t.bits == 8) { *out = DType::kI8; return true; }
      if (t.bits == 16) { *out = DType::kI16; return true; }
      if (t.bits == 32) { *out = DType::kI32; return true; }
      if (t.bits == 64) { *out = DType::kI64; return true; }
      return false;
    case kDLUInt:
      if (t.bits == 8) { *out = DType::kU8; return true; }
      if (t.bits == 16) { *out = DType::kU16; return true; }
      if (t.bits == 32) { *out = DType::kU32; return true; }
      if (t.bits == 64) { *out = DType::kU64; return true; }
      return false;
    case kDLBool:
      if (t.bits == 8) { *out = DType::kBool; return true; }
      return false;
    default:
      return false;
  }
}

bool message_is_about_dtype(const std::string& message) {
  return message.find("dtype") != std::string::npos;
}

}  // namespace

void raise_status(const txops::Status& status) {
  const int code = static_cast<int>(status.code());
  const std::string& message = status.message();
  switch (status.code()) {
    case txops::StatusCode::kParamInvalid:
      raise_with_code(message_is_about_dtype(message) ? PyExc_TypeError : PyExc_ValueError, code, message);
    case txops::StatusCode::kNullptr:
    case txops::StatusCode::kTilingError:
      raise_with_code(PyExc_ValueError, code, message);
    default:
      if (message.find("not implemented") != std::string::npos) {
        raise_with_code(PyExc_NotImplementedError, code, message);
      }
      raise_with_code(PyExc_RuntimeError, code, message);
  }
}

ImportedTensors::~ImportedTensors() {
  // Consumed tensors are ours: release them (the producer's deleter may touch Python objects; we hold the GIL).
  for (int i = versioned_count_ - 1; i >= 0; --i) {
    if (versioned_[i]->deleter != nullptr) versioned_[i]->deleter(versioned_[i]);
  }
  for (int i = count_ - 1; i >= 0; --i) {
    if (consumed_[i]->deleter != nullptr) consumed_[i]->deleter(consumed_[i]);
  }
}

namespace {

// The view of a DLTensor (data, device, dtype and rank checked); shape and strides are copied.
txops::TensorView view_of_dltensor(const DLTensor& t, const char* param) {
  if (t.device.device_type != kDLCPU) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " device must be the CPU (DLPack device type 1), got device type " +
                        std::to_string(static_cast<int>(t.device.device_type)));
  }
  txops::DType dtype;
  if (!dtype_from_dlpack(t.dtype, &dtype)) {
    raise_with_code(PyExc_TypeError, kParamInvalid,
                    std::string(param) + " dtype must be a float, bfloat16, integer or bool scalar type, got DLPack code " +
                        std::to_string(t.dtype.code) + " bits " + std::to_string(t.dtype.bits) + " lanes " +
                        std::to_string(t.dtype.lanes));
  }
  if (t.ndim < 0 || t.ndim > txops::kMaxDims) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " rank must be at most 8, got " + std::to_string(t.ndim));
  }
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  return txops::TensorView::make(data, dtype, t.ndim, t.shape, t.strides);
}

// The DLPack C exchange API of a Python type (its `__dlpack_c_exchange_api__`, DLPack major version 1), or
// null. Looked up once per type: a few types are remembered (with a reference, so an address is never reused
// by another type), negative answers included; called with the GIL held.
const DLPackExchangeAPI* exchange_api_of(PyTypeObject* type) {
  struct Entry {
    PyTypeObject* type;
    const DLPackExchangeAPI* api;
  };
  static Entry cache[8];
  static int cached = 0;
  for (int i = 0; i < cached; ++i) {
    if (cache[i].type == type) return cache[i].api;
  }
  const DLPackExchangeAPI* api = nullptr;
  PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
  } else {
    if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
      const auto* table = static_cast<const DLPackExchangeAPI*>(PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
      if (table != nullptr && table->header.version.major == 1 &&
          (table->dltensor_from_py_object_no_sync != nullptr || table->managed_tensor_from_py_object_no_sync != nullptr)) {
        api = table;  // the table lives as long as the process (DLPack specification)
      }
    }
    Py_DECREF(capsule);
    PyErr_Clear();
  }
  if (cached < 8) {
    Py_INCREF(type);
    cache[cached++] = {type, api};
  }
  return api;
}

}  // namespace

bool has_exchange_api(py::handle type) {
  if (!PyType_Check(type.ptr())) return false;
  return exchange_api_of(reinterpret_cast<PyTypeObject*>(type.ptr())) != nullptr;
}

txops::TensorView ImportedTensors::from_capsule(py::handle capsule, const char* param) {
  PyObject* raw = capsule.ptr();
  if (!PyCapsule_IsValid(raw, "dltensor")) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " must be an unconsumed DLPack capsule (\"dltensor\"), got a capsule named \"" +
                        (PyCapsule_GetName(raw) ? PyCapsule_GetName(raw) : "") + "\"");
  }
  if (count_ == kMaxTensors) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " tensor count per call must be at most " + std::to_string(kMaxTensors) +
                        ", got " + std::to_string(kMaxTensors + 1));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(raw, "dltensor"));
  if (managed == nullptr) throw py::error_already_set();
  // Consume: from here on the capsule's destructor leaves the tensor alone and we must call its deleter.
  PyCapsule_SetName(raw, "used_dltensor");
  consumed_[count_++] = managed;
  return view_of_dltensor(managed->dl_tensor, param);
}

bool ImportedTensors::from_exchange_api(py::handle object, const char* param, txops::TensorView* view) {
  const DLPackExchangeAPI* api = exchange_api_of(Py_TYPE(object.ptr()));
  if (api == nullptr) return false;
  if (api->dltensor_from_py_object_no_sync != nullptr) {
    // Borrowed: the object outlives the call (the caller holds it), and the view copies shape and strides now.
    DLTensor t{};
    if (api->dltensor_from_py_object_no_sync(object.ptr(), &t) != 0) throw py::error_already_set();
    *view = view_of_dltensor(t, param);
    return true;
  }
  if (versioned_count_ == kMaxTensors) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " tensor count per call must be at most " + std::to_string(kMaxTensors) +
                        ", got " + std::to_string(kMaxTensors + 1));
  }
  DLManagedTensorVersioned* managed = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(object.ptr(), &managed) != 0 || managed == nullptr) {
    throw py::error_already_set();
  }
  versioned_[versioned_count_++] = managed;
  *view = view_of_dltensor(managed->dl_tensor, param);
  return true;
}

// (address, dtype code, shape tuple, strides tuple in elements) — built by the Python layer for read-only arrays.
txops::TensorView ImportedTensors::from_raw_tuple(py::handle object, const char* param) {
  auto tuple = py::reinterpret_borrow<py::tuple>(object);
  if (tuple.size() != 4) {
    raise_with_code(PyExc_TypeError, kParamInvalid,
                    std::string(param) + " raw view must be (address, dtype, shape, strides), got a tuple of " +
                        std::to_string(tuple.size()));
  }
  auto shape = tuple[2].cast<py::tuple>();
  auto strides = tuple[3].cast<py::tuple>();
  if (shape.size() > static_cast<size_t>(txops::kMaxDims) || strides.size() != shape.size()) {
    raise_with_code(PyExc_ValueError, kParamInvalid,
                    std::string(param) + " rank must be at most 8 with one stride per dim, got " +
                        std::to_string(shape.size()) + " dims and " + std::to_string(strides.size()) + " strides");
  }
  int64_t shape_values[txops::kMaxDims];
  int64_t stride_values[txops::kMaxDims];
  for (size_t d = 0; d < shape.size(); ++d) {
    shape_values[d] = shape[d].cast<int64_t>();
    stride_values[d] = strides[d].cast<int64_t>();
  }
  const auto dtype = static_cast<txops::DType>(tuple[1].cast<int32_t>());
  if (txops::dtype_size(dtype) == 0) {
    raise_with_code(PyExc_TypeError, kParamInvalid,
                    std::string(param) + " dtype must be a txops dtype code, got " +
                        std::to_string(static_cast<int32_t>(dtype)));
  }
  void* data = reinterpret_cast<void*>(tuple[0].cast<uintptr_t>());
  return txops::TensorView::make(data, dtype, static_cast<int32_t>(shape.size()), shape_values, stride_values);
}

txops::TensorView ImportedTensors::view(py::handle object, const char* param) {
  if (PyCapsule_CheckExact(object.ptr())) return from_capsule(object, param);
  if (PyTuple_Check(object.ptr())) return from_raw_tuple(object, param);
  if (object.is_none()) {
    raise_with_code(PyExc_ValueError, static_cast<int>(txops::StatusCode::kNullptr),
                    std::string(param) + " must be a tensor, got None");
  }
  txops::TensorView fast;
  if (from_exchange_api(object, param, &fast)) return fast;
  PyObject* exporter = PyObject_GetAttrString(object.ptr(), "__dlpack__");
  if (exporter == nullptr) {
    PyErr_Clear();
    raise_with_code(PyExc_TypeError, kParamInvalid,
                    std::string(param) + " must be an array with __dlpack__ (torch.Tensor, numpy.ndarray) or a "
                                         "DLPack capsule, got " + Py_TYPE(object.ptr())->tp_name);
  }
  py::object capsule = py::reinterpret_steal<py::object>(PyObject_CallNoArgs(exporter));
  Py_DECREF(exporter);
  if (!capsule) throw py::error_already_set();
  return from_capsule(capsule, param);
}

txops::TensorView ImportedTensors::optional_view(py::handle object, const char* param, bool* present) {
  *present = !object.is_none();
  return *present ? view(object, param) : txops::TensorView();
}

}  // namespace txops_python
