// eager_gate.h — the plain-eager fast path of the _txops module: deciding in C, from a call's arguments, that
// it can go straight to the C++ API (plain torch tensors, no autograd to record, no torch dispatch mode), then
// running it and bumping the version counters of the tensors it wrote. This is the hot path of eager decode
// calls: it replaces the Python wrapper's checks (torch_ops, written) and pybind11's argument
// dispatch, ~1 us per call. Nothing here is built against PyTorch: the Python layer hands the module torch's
// tensor type and three of its functions once (set_torch_hooks), and they are called through the C API.
// A call the gate refuses returns False and the Python wrapper takes its general path, which is always correct;
// under torch.compile the wrappers never reach the gate (dynamo cannot trace into C).
#ifndef TXOPS_PYTHON_EAGER_GATE_H_
#define TXOPS_PYTHON_EAGER_GATE_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <initializer_list>

namespace txops_python {

namespace py = pybind11;

// Remembers torch.Tensor (the exact type the gate accepts), torch.is_grad_enabled,
// torch._C._len_torch_dispatch_stack and torch._C._increment_version (called with a tuple of tensors).
// Called once by the Python layer, and only when torch.Tensor has the DLPack C exchange API.
void set_torch_hooks(py::handle tensor_type, py::handle is_grad_enabled, py::handle dispatch_stack_len,
                     py::handle increment_version);

// 1 when a call with these positional arguments may skip the Python wrapper's general path: every argument
// is None, an int, a float or a plain torch.Tensor (exact type), no torch dispatch mode is active, and, with
// grad mode on, no tensor requires grad. 0 when it may not, -1 with a Python exception set on an error.
int eager_gate(PyObject* const* args, Py_ssize_t nargs);

// The body of a METH_FASTCALL entry: checks the argument count, the gate, runs `call` (a binding of
// module.cpp: it imports the views, releases the GIL and raises on a failed status), then bumps the version
// counters of the arguments at the `written` positions. Returns a new reference to True (done), False (the
// gate refused: nothing ran), or null with the Python exception set.
template <typename Call>
PyObject* eager_call(const char* name, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected,
                     std::initializer_list<int> written, Call&& call);

// Argument readers of the entries' bodies: a Python int (within int32 for int_arg: an operator code; the
// operator checks the value itself) or float; a Python exception is thrown (py::error_already_set) otherwise.
int int_arg(PyObject* object);
int64_t int64_arg(PyObject* object);
float float_arg(PyObject* object);

// Implementation details of eager_call.
PyObject* eager_wrong_count(const char* name, Py_ssize_t nargs, Py_ssize_t expected);
int eager_mark_written(PyObject* const* args, std::initializer_list<int> written);

template <typename Call>
PyObject* eager_call(const char* name, PyObject* const* args, Py_ssize_t nargs, Py_ssize_t expected,
                     std::initializer_list<int> written, Call&& call) {
  if (nargs != expected) return eager_wrong_count(name, nargs, expected);
  const int gate = eager_gate(args, nargs);
  if (gate < 0) return nullptr;
  if (gate == 0) Py_RETURN_FALSE;
  try {
    call();
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
    return nullptr;
  }
  if (eager_mark_written(args, written) < 0) return nullptr;
  Py_RETURN_TRUE;
}

}  // namespace txops_python

#endif  // TXOPS_PYTHON_EAGER_GATE_H_
