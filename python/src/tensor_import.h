// tensor_import.h — turning the Python objects handed to the _txops module into txops::TensorViews, without
// copying: objects whose type publishes the DLPack C exchange API (torch.Tensor from torch 2.10: read in C,
// no capsule, no allocation — the fast path), DLPack capsules (consumed per the protocol), any other object
// with __dlpack__() (numpy arrays), or a raw (address, dtype code, shape, strides) tuple for memory DLPack
// cannot export (read-only numpy arrays). Also the mapping of a failed txops::Status (or a bad argument) to a Python exception.
#ifndef TXOPS_PYTHON_TENSOR_IMPORT_H_
#define TXOPS_PYTHON_TENSOR_IMPORT_H_

#include <pybind11/pybind11.h>

#include <string>

#include "dlpack_abi.h"
#include "txops/txops.h"

namespace txops_python {

namespace py = pybind11;

// Raises the Python exception for `status` (code attribute set to the txops status code):
// 161001 / 561002 -> ValueError, 161002 -> TypeError when the message is about a dtype, else ValueError,
// 361001 -> RuntimeError (NotImplementedError for "not implemented"). Must be called with the GIL held.
[[noreturn]] void raise_status(const txops::Status& status);

// True when objects of `type` are read through the DLPack C exchange API (type.__dlpack_c_exchange_api__,
// DLPack major version 1): the Python layer can then pass such tensors as they are, with no capsule.
bool has_exchange_api(py::handle type);

// Keeps every DLPack tensor consumed during one call and releases them (calls their deleters) when the call
// is over. Lives on the stack of a binding, destroyed with the GIL held.
class ImportedTensors {
 public:
  ImportedTensors() = default;
  ImportedTensors(const ImportedTensors&) = delete;
  ImportedTensors& operator=(const ImportedTensors&) = delete;
  ~ImportedTensors();

  // The view of `object` (the parameter named `param`); raises TypeError / ValueError on what txops cannot use.
  txops::TensorView view(py::handle object, const char* param);

  // As view(), but None gives `present = false`.
  txops::TensorView optional_view(py::handle object, const char* param, bool* present);

 private:
  static constexpr int kMaxTensors = 24;  // the most a call takes: the GDR backward's 17
  txops::TensorView from_capsule(py::handle capsule, const char* param);
  txops::TensorView from_raw_tuple(py::handle tuple, const char* param);
  // The view through type(object).__dlpack_c_exchange_api__; false when the type has none.
  bool from_exchange_api(py::handle object, const char* param, txops::TensorView* view);

  DLManagedTensor* consumed_[kMaxTensors] = {};
  int count_ = 0;
  DLManagedTensorVersioned* versioned_[kMaxTensors] = {};  // exported through the exchange API, released at the end
  int versioned_count_ = 0;
};

}  // namespace txops_python

#endif  // TXOPS_PYTHON_TENSOR_IMPORT_H_
