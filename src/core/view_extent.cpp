// view_extent.cpp — overflow-checked view extents (see view_extent.h). All arithmetic goes through the
// compiler's checked builtins, so a hostile shape or stride gives an error, never undefined behaviour.
#include "core/view_extent.h"

#include "core/status.h"

namespace txops {
namespace {

bool mul_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// |elements| * elem_size must stay within kMaxViewBytes.
bool bytes_ok(int64_t elements, size_t elem_size) {
  const int64_t size = elem_size == 0 ? 1 : static_cast<int64_t>(elem_size);
  int64_t bytes = 0;
  if (elements == INT64_MIN || !mul_ok(elements < 0 ? -elements : elements, size, &bytes)) return false;
  return bytes <= kMaxViewBytes;
}

}  // namespace

ExtentError compute_extent(int ndim, const int64_t* shape, const int64_t* strides, size_t elem_size,
                           ViewExtent* extent, int* bad_dim) {
  *extent = ViewExtent();
  *bad_dim = -1;
  bool empty = false;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) {
      *bad_dim = d;
      return ExtentError::kNegativeDim;
    }
    if (shape[d] == 0) empty = true;
    if (!mul_ok(numel, shape[d], &numel) || !bytes_ok(numel, elem_size)) {
      *bad_dim = d;
      return ExtentError::kOverflow;
    }
  }
  extent->numel = empty ? 0 : numel;
  if (empty) return ExtentError::kNone;
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < ndim; ++d) {
    int64_t reach = 0;
    if (!mul_ok(shape[d] - 1, strides[d], &reach) || !bytes_ok(reach, elem_size) ||
        !add_ok(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi) || !bytes_ok(lo, elem_size) ||
        !bytes_ok(hi, elem_size)) {
      *bad_dim = d;
      return ExtentError::kOverflow;
    }
  }
  extent->lo = lo;
  extent->hi = hi;
  return ExtentError::kNone;
}

bool checked_numel(int ndim, const int64_t* dims, size_t elem_size, int64_t* numel) {
  int64_t n = 1;
  for (int d = 0; d < ndim; ++d) {
    if (dims[d] < 0 || !mul_ok(n, dims[d], &n) || !bytes_ok(n, elem_size)) return false;
  }
  *numel = n;
  return true;
}

Status check_view_extent(const TensorView& v, const char* name) {
  if (v.ndim < 0 || v.ndim > kMaxDims) {
    return fail(StatusCode::kParamInvalid, "%s ndim must be in [0, %d], got %d", name, kMaxDims, v.ndim);
  }
  ViewExtent extent;
  int bad_dim = -1;
  const size_t elem = dtype_size(v.dtype);
  switch (compute_extent(v.ndim, v.shape, v.strides, elem, &extent, &bad_dim)) {
    case ExtentError::kNone:
      // The kernels load elements through typed pointers: a misaligned one is undefined behaviour.
      if (extent.numel > 0 && elem > 1 && reinterpret_cast<uintptr_t>(v.data) % elem != 0) {
        return fail(StatusCode::kParamInvalid, "%s data must be aligned to its element size (%zu bytes, %s), got %p",
                    name, elem, dtype_name(v.dtype), v.data);
      }
      return Status();
    case ExtentError::kNegativeDim:
      return fail(StatusCode::kParamInvalid, "%s dim %d must be >= 0, got %lld", name, bad_dim,
                  static_cast<long long>(v.shape[bad_dim]));
    case ExtentError::kOverflow:
      break;
  }
  return fail(StatusCode::kParamInvalid,
              "%s shape %s with strides overflows: its elements or byte span must stay below 2^62 bytes "
              "(at dim %d: size %lld, stride %lld)",
              name, v.shape_string().c_str(), bad_dim, static_cast<long long>(v.shape[bad_dim]),
              static_cast<long long>(v.strides[bad_dim]));
}

}  // namespace txops
