// view_rules.cpp — the shared per-tensor validation rules (view_rules.h).
#include "core/view_rules.h"

#include <cinttypes>

#include "core/view_checks.h"
#include "core/view_extent.h"

namespace txops {

Status require_data(const TensorView& v, const char* name) {
  Status extent = check_view_extent(v, name);  // first: every later rule does arithmetic on shape and strides
  if (!extent.ok()) return extent;
  if (v.data == nullptr) return fail(StatusCode::kNullptr, "%s must not be null, got a null data pointer", name);
  return Status();
}

Status require_same_dtype(const TensorView& v, const char* name, const TensorView& ref, const char* ref_name) {
  if (v.dtype != ref.dtype)
    return fail(StatusCode::kParamInvalid, "%s dtype must equal %s dtype (%s), got %s", name, ref_name,
                dtype_name(ref.dtype), dtype_name(v.dtype));
  return Status();
}

Status require_dtype(const TensorView& v, const char* name, DType want) {
  if (v.dtype != want)
    return fail(StatusCode::kParamInvalid, "%s dtype must be %s, got %s", name, dtype_name(want), dtype_name(v.dtype));
  return Status();
}

Status require_shape(StatusCode code, const TensorView& v, const char* name, const char* layout,
                     std::initializer_list<int64_t> want) {
  const int ndim = static_cast<int>(want.size());
  const TensorView expected = TensorView::make(nullptr, v.dtype, ndim, want.begin(), nullptr);
  if (v.ndim != ndim)
    return fail(code, "%s must be %d-D %s, got %d-D %s", name, ndim, layout, v.ndim, v.shape_string().c_str());
  for (int i = 0; i < ndim; ++i)
    if (v.shape[i] != want.begin()[i])
      return fail(code, "%s shape must be %s = %s, got %s", name, layout, expected.shape_string().c_str(),
                  v.shape_string().c_str());
  return Status();
}

Status require_ndim(StatusCode code, const TensorView& v, const char* name, int ndim, const char* layout) {
  if (v.ndim != ndim)
    return fail(code, "%s must be %d-D %s, got %d-D %s", name, ndim, layout, v.ndim, v.shape_string().c_str());
  return Status();
}

Status require_range(StatusCode code, int64_t value, const char* what, int64_t lo, int64_t hi, const char* why) {
  if (value < lo || value > hi)
    return fail(code, "%s must be in [%" PRId64 ", %" PRId64 "]%s, got %" PRId64, what, lo, hi, why, value);
  return Status();
}

Status check_outputs(std::initializer_list<NamedView> outputs, std::initializer_list<NamedView> inputs,
                     const TensorView* alias_out, const TensorView* alias_in) {
  Status st;
  for (const NamedView& o : outputs) {
    if (o.first == nullptr) continue;
    if (!(st = check_writable(*o.first, o.second)).ok()) return st;
    for (const NamedView& other : outputs)
      if (other.first != nullptr && other.first != o.first &&
          !(st = check_no_overlap(*o.first, o.second, *other.first, other.second, false)).ok())
        return st;
    for (const NamedView& in : inputs) {
      if (in.first == nullptr) continue;
      const bool alias_ok = o.first == alias_out && in.first == alias_in;
      if (!(st = check_no_overlap(*o.first, o.second, *in.first, in.second, alias_ok)).ok()) return st;
    }
  }
  return Status();
}

}  // namespace txops
