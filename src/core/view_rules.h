// view_rules.h — the per-tensor rules every operator's validation states the same way: present and addressable,
// dtype, rank and exact shape, an integer in a range, and the output rules (writable, no overlap) over a list of
// named views. Each returns the failing Status with the one-line message "<param> <rule>, got <value>"; the code
// is the caller's where CANN's tables differ per operator (shapes: 561002 or 161002).
#ifndef TXOPS_CORE_VIEW_RULES_H_
#define TXOPS_CORE_VIEW_RULES_H_

#include <cstdint>
#include <initializer_list>
#include <utility>

#include "core/status.h"
#include "txops/txops.h"

namespace txops {

// check_view_extent first (every later rule does arithmetic on shape and strides), then a non-null pointer
// (161001).
Status require_data(const TensorView& v, const char* name);

// dtype rules -> 161002.
Status require_dtype(const TensorView& v, const char* name, DType want);
Status require_same_dtype(const TensorView& v, const char* name, const TensorView& ref, const char* ref_name);

// `v` must have exactly the dims in `want` (named by `layout`, e.g. "(T, Nv, Dv)") / exactly `ndim` dims.
Status require_shape(StatusCode code, const TensorView& v, const char* name, const char* layout,
                     std::initializer_list<int64_t> want);
Status require_ndim(StatusCode code, const TensorView& v, const char* name, int ndim, const char* layout);

// lo <= value <= hi; `why` is appended to the rule (e.g. " (TXOPS_COMPAT=cann)", or "").
Status require_range(StatusCode code, int64_t value, const char* what, int64_t lo, int64_t hi, const char* why);

// Element i of a 1-D int32 view (host-visible integers: lengths, indices).
inline int64_t int32_at(const TensorView& v, int64_t i) {
  return static_cast<const int32_t*>(v.data)[i * v.strides[0]];
}

using NamedView = std::pair<const TensorView*, const char*>;  // a null view: an optional tensor not given

// Each output writable (no element written twice), disjoint from the other outputs and from every input; the one
// exception is `alias_out` being exactly `alias_in` (an in-place state). A null output is an optional one not given.
Status check_outputs(std::initializer_list<NamedView> outputs, std::initializer_list<NamedView> inputs,
                     const TensorView* alias_out, const TensorView* alias_in);

}  // namespace txops

#endif  // TXOPS_CORE_VIEW_RULES_H_
