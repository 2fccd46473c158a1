// view_extent.h — overflow-checked extent of a strided view: its element count and the lowest / highest
// element it reaches (relative to its data pointer), computed on caller input without undefined behaviour.
// aclCreateTensor uses it to refuse impossible tensors at creation; every operator's phase one uses it (through
// check_view_extent) before any other arithmetic on a view's shape or strides.
#ifndef TXOPS_CORE_VIEW_EXTENT_H_
#define TXOPS_CORE_VIEW_EXTENT_H_

#include <cstddef>
#include <cstdint>

#include "txops/txops.h"

namespace txops {

// The largest byte extent txops accepts for one view or storage (2^62): far beyond any real memory, and small
// enough that pointer arithmetic on it cannot wrap.
constexpr int64_t kMaxViewBytes = int64_t{1} << 62;

struct ViewExtent {
  int64_t numel = 0;  // product of the dims (0 when any dim is 0)
  int64_t lo = 0;     // lowest element index reached, relative to the data pointer (<= 0); 0 when empty
  int64_t hi = 0;     // highest element index reached (>= 0); 0 when empty
};

enum class ExtentError { kNone, kNegativeDim, kOverflow };

// Computes the extent of (shape, strides) for elements of `elem_size` bytes. Returns kNegativeDim when a dim is
// negative (with *bad_dim set), kOverflow when the element count, a stride times a dim, their sum, or the bytes
// of any of them exceed kMaxViewBytes (with *bad_dim set to the dim where it happened).
ExtentError compute_extent(int ndim, const int64_t* shape, const int64_t* strides, size_t elem_size,
                           ViewExtent* extent, int* bad_dim);

// Product of dims (storage shapes) in elements, with the same limits; false on a negative dim or overflow.
bool checked_numel(int ndim, const int64_t* dims, size_t elem_size, int64_t* numel);

// The phase-one check every operator makes on every view it is given, before any other rule: ndim in
// [0, kMaxDims], no negative dim, no overflow, data aligned to the element size when the view has elements
// (161002 with a message naming `name`).
Status check_view_extent(const TensorView& v, const char* name);

}  // namespace txops

#endif  // TXOPS_CORE_VIEW_EXTENT_H_
