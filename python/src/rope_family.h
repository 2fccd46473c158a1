// rope_family.h — the _txops bindings of CANN's general RoPE operators (RotaryPositionEmbedding, its Grad,
// RopeWithSinCosCache), kept apart from module.cpp; registered by module.cpp's PYBIND11_MODULE.
#ifndef TXOPS_PYTHON_ROPE_FAMILY_H_
#define TXOPS_PYTHON_ROPE_FAMILY_H_

#include <pybind11/pybind11.h>

namespace txops_python {

void bind_rope_family(pybind11::module_& m);

}  // namespace txops_python

#endif  // TXOPS_PYTHON_ROPE_FAMILY_H_
