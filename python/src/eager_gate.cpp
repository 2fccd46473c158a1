// eager_gate.cpp — the gate of the plain-eager fast path (see eager_gate.h), the version-counter bump and the
// entries' argument readers.
#include "eager_gate.h"

#include <string>

namespace txops_python {

namespace {

// Strong references, kept for the life of the process (torch is never unloaded).
struct TorchHooks {
  PyObject* tensor_type = nullptr;
  PyObject* is_grad_enabled = nullptr;
  PyObject* dispatch_stack_len = nullptr;
  PyObject* increment_version = nullptr;
  PyObject* requires_grad_name = nullptr;  // interned "requires_grad"
};
TorchHooks g_hooks;

PyObject* new_reference(py::handle object) {
  Py_INCREF(object.ptr());
  return object.ptr();
}

// 1 when the no-argument callable returns something true, 0 when false, -1 on an error.
int call_truth(PyObject* callable) {
  PyObject* result = PyObject_CallNoArgs(callable);
  if (result == nullptr) return -1;
  const int truth = PyObject_IsTrue(result);
  Py_DECREF(result);
  return truth;
}

}  // namespace

void set_torch_hooks(py::handle tensor_type, py::handle is_grad_enabled, py::handle dispatch_stack_len,
                     py::handle increment_version) {
  if (g_hooks.tensor_type != nullptr) return;  // once: the references stay valid for the process
  if (!PyType_Check(tensor_type.ptr())) throw py::type_error("tensor_type must be a type");
  g_hooks.is_grad_enabled = new_reference(is_grad_enabled);
  g_hooks.dispatch_stack_len = new_reference(dispatch_stack_len);
  g_hooks.increment_version = new_reference(increment_version);
  g_hooks.requires_grad_name = PyUnicode_InternFromString("requires_grad");
  if (g_hooks.requires_grad_name == nullptr) throw py::error_already_set();
  g_hooks.tensor_type = new_reference(tensor_type);  // last: the gate is open only once all hooks are set
}

int eager_gate(PyObject* const* args, Py_ssize_t nargs) {
  if (g_hooks.tensor_type == nullptr) return 0;
  const auto* tensor_type = reinterpret_cast<PyTypeObject*>(g_hooks.tensor_type);
  int tensors = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    PyObject* arg = args[i];
    if (Py_TYPE(arg) == tensor_type) {
      ++tensors;
    } else if (arg != Py_None && !PyLong_CheckExact(arg) && !PyFloat_CheckExact(arg)) {
      return 0;  // numpy, a tensor subclass (FakeTensor, ...), anything else: the general path
    }
  }
  if (tensors == 0) return 0;
  const int dispatching = call_truth(g_hooks.dispatch_stack_len);
  if (dispatching != 0) return dispatching < 0 ? -1 : 0;
  const int grad_mode = call_truth(g_hooks.is_grad_enabled);
  if (grad_mode <= 0) return grad_mode < 0 ? -1 : 1;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (Py_TYPE(args[i]) != tensor_type) continue;
    PyObject* requires_grad = PyObject_GetAttr(args[i], g_hooks.requires_grad_name);
    if (requires_grad == nullptr) return -1;
    const bool recorded = requires_grad == Py_True;
    Py_DECREF(requires_grad);
    if (recorded) return 0;  // autograd must record the call: the registered operator
  }
  return 1;
}

PyObject* eager_wrong_count(const char* name, Py_ssize_t nargs, Py_ssize_t expected) {
  PyErr_SetString(PyExc_TypeError, (std::string(name) + " takes " + std::to_string(expected) +
                                    " positional arguments, got " + std::to_string(nargs)).c_str());
  return nullptr;
}

int eager_mark_written(PyObject* const* args, std::initializer_list<int> written) {
  PyObject* tensors[8];
  Py_ssize_t count = 0;
  for (int index : written) {
    if (args[index] != Py_None && count < 8) tensors[count++] = args[index];
  }
  if (count == 0) return 0;
  PyObject* tuple = PyTuple_New(count);
  if (tuple == nullptr) return -1;
  for (Py_ssize_t i = 0; i < count; ++i) {
    Py_INCREF(tensors[i]);
    PyTuple_SET_ITEM(tuple, i, tensors[i]);
  }
  PyObject* result = PyObject_CallOneArg(g_hooks.increment_version, tuple);
  Py_DECREF(tuple);
  if (result == nullptr) return -1;
  Py_DECREF(result);
  return 0;
}

int int_arg(PyObject* object) {
  const long long value = PyLong_AsLongLong(object);
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (value < INT32_MIN || value > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, ("an operator code must fit int32, got " + std::to_string(value)).c_str());
    throw py::error_already_set();
  }
  return static_cast<int>(value);
}

int64_t int64_arg(PyObject* object) {
  const long long value = PyLong_AsLongLong(object);
  if (value == -1 && PyErr_Occurred()) throw py::error_already_set();
  return value;
}

float float_arg(PyObject* object) {
  const double value = PyFloat_AsDouble(object);
  if (value == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return static_cast<float>(value);
}

}  // namespace txops_python
