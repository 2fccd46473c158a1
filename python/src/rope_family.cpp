// rope_family.cpp — bindings of txops::rotary_position_embedding(_grad) and txops::rope_with_sin_cos_cache over
// DLPack tensors (tensor_import.h), used in place; the GIL is released while the operator runs and a failed
// Status becomes a Python exception with txops' message (raise_status). The forward and the cache op also get
// plain-eager entries (eager_gate.h): the cache op is called once per layer and decode step (vLLM).
#include "rope_family.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "eager_gate.h"
#include "tensor_import.h"
#include "txops/txops.h"

namespace py = pybind11;

namespace txops_python {
namespace {

template <typename Call>
void run_released(Call&& call) {
  txops::Status status;
  {
    py::gil_scoped_release release;
    status = call();
  }
  if (!status.ok()) raise_status(status);
}

const txops::TensorView* present_or_null(const txops::TensorView& view, bool present) {
  return present ? &view : nullptr;
}

void rotary_position_embedding(py::handle x, py::handle cos, py::handle sin, int mode, py::handle out,
                               py::handle rotate) {
  ImportedTensors t;
  const auto xv = t.view(x, "x"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin"), ov = t.view(out, "out");
  bool has_rotate;
  const auto rv = t.optional_view(rotate, "rotate", &has_rotate);
  const auto m = static_cast<txops::RotaryMode>(mode);
  run_released([&] { return txops::rotary_position_embedding(xv, cv, sv, m, ov, present_or_null(rv, has_rotate)); });
}

void rotary_position_embedding_grad(py::handle dy, py::handle cos, py::handle sin, py::handle x, int mode,
                                    py::handle dx, py::handle dcos, py::handle dsin) {
  ImportedTensors t;
  const auto dyv = t.view(dy, "grad"), cv = t.view(cos, "cos"), sv = t.view(sin, "sin"), dxv = t.view(dx, "dx");
  bool has_x, has_dcos, has_dsin;
  const auto xv = t.optional_view(x, "x", &has_x);
  const auto dcv = t.optional_view(dcos, "dcos", &has_dcos), dsv = t.optional_view(dsin, "dsin", &has_dsin);
  const auto m = static_cast<txops::RotaryMode>(mode);
  run_released([&] {
    return txops::rotary_position_embedding_grad(dyv, cv, sv, present_or_null(xv, has_x), m, dxv,
                                                 present_or_null(dcv, has_dcos), present_or_null(dsv, has_dsin));
  });
}

void rope_with_sin_cos_cache(py::handle positions, py::handle query, py::handle key, py::handle cache,
                             std::optional<std::vector<int64_t>> mrope_section, int64_t head_size, bool is_neox,
                             int64_t cache_mode, py::handle query_out, py::handle key_out) {
  ImportedTensors t;
  const auto pv = t.view(positions, "positions"), qv = t.view(query, "query"), kv = t.view(key, "key");
  const auto cv = t.view(cache, "cos_sin_cache"), qo = t.view(query_out, "query_out"), ko = t.view(key_out, "key_out");
  const std::vector<int64_t> section = mrope_section.value_or(std::vector<int64_t>());
  run_released([&] {
    return txops::rope_with_sin_cos_cache(pv, qv, kv, cv, section.data(), static_cast<int64_t>(section.size()),
                                          head_size, is_neox, cache_mode, qo, ko);
  });
}

PyObject* eager_rotary_position_embedding(PyObject*, PyObject* const* a, Py_ssize_t n) {
  return eager_call("_eager_rotary_position_embedding", a, n, 6, {4},
                    [&] { rotary_position_embedding(a[0], a[1], a[2], int_arg(a[3]), a[4], a[5]); });
}

// Rope mode only: an mrope section (a list) never passes the gate, and an int in its place is sent back too.
PyObject* eager_rope_with_sin_cos_cache(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n == 10 && a[4] != Py_None) Py_RETURN_FALSE;
  return eager_call("_eager_rope_with_sin_cos_cache", a, n, 10, {8, 9}, [&] {
    rope_with_sin_cos_cache(a[0], a[1], a[2], a[3], std::nullopt, int64_arg(a[5]), int_arg(a[6]) != 0,
                            int64_arg(a[7]), a[8], a[9]);
  });
}

PyMethodDef g_entries[] = {
    {"_eager_rotary_position_embedding",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&eager_rotary_position_embedding)), METH_FASTCALL,
     "Plain-eager fast path of rotary_position_embedding (positional arguments as the binding): True when it ran."},
    {"_eager_rope_with_sin_cos_cache",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&eager_rope_with_sin_cos_cache)), METH_FASTCALL,
     "Plain-eager fast path of rope_with_sin_cos_cache (rope mode; is_neox_style as 0 / 1): True when it ran."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_rope_family(py::module_& m) {
  using py::arg;
  m.def("rotary_position_embedding", &rotary_position_embedding, arg("x"), arg("cos"), arg("sin"), arg("mode"),
        arg("out"), arg("rotate").none(true));
  m.def("rotary_position_embedding_grad", &rotary_position_embedding_grad, arg("grad"), arg("cos"), arg("sin"),
        arg("x").none(true), arg("mode"), arg("dx"), arg("dcos").none(true), arg("dsin").none(true));
  m.def("rope_with_sin_cos_cache", &rope_with_sin_cos_cache, arg("positions"), arg("query"), arg("key"),
        arg("cos_sin_cache"), arg("mrope_section").none(true), arg("head_size"), arg("is_neox_style"),
        arg("cache_mode"), arg("query_out"), arg("key_out"));
  if (PyModule_AddFunctions(m.ptr(), g_entries) != 0) throw py::error_already_set();
}

}  // namespace txops_python
