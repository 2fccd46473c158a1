// view_checks.h — rules on how views sit in memory, shared by every operator family: an output must not write
// an element twice (no broadcast or self-overlapping dims) and must not partially overlap an input. Callers run
// check_view_extent (view_extent.h) on every view first, so the arithmetic here cannot overflow.
#ifndef TXOPS_CORE_VIEW_CHECKS_H_
#define TXOPS_CORE_VIEW_CHECKS_H_

#include <cstdint>

#include "txops/txops.h"

namespace txops {

// An output must not write one element twice: no stride-0 (broadcast) or self-overlapping dims -> 161002.
Status check_writable(const TensorView& out, const char* name);
// The bytes a view touches, computed once per tensor for the overlap checks (empty views touch nothing).
struct ViewSpan {
  uintptr_t first = 0, last = 0;
  bool empty = true;
};
ViewSpan span_of(const TensorView& v);

// `out` and `in` are either the exact same view (allowed when `alias_ok`), or disjoint. Partial overlap is
// detected for dense (contiguous) views, where it is exactly an address-range intersection; strided views
// sharing memory are trusted (slices of a fused qkv buffer interleave legally) and not checked.
Status check_no_overlap(const TensorView& out, const ViewSpan& out_span, const char* out_name, const TensorView& in,
                        const ViewSpan& in_span, const char* in_name, bool alias_ok);
inline Status check_no_overlap(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                               bool alias_ok) {
  return check_no_overlap(out, span_of(out), out_name, in, span_of(in), in_name, alias_ok);
}

bool same_view(const TensorView& a, const TensorView& b);
bool has_zero_extent(const TensorView& v);

}  // namespace txops

#endif  // TXOPS_CORE_VIEW_CHECKS_H_
