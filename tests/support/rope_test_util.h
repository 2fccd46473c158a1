// rope_test_util.h — helpers the RoPE tests share: random tensors in guarded storage (offset, padded and
// strided views, stride-0 broadcast) and byte-level "nothing outside the allowed elements changed" checks. The
// scoped global settings, the per-ISA fixture and the plan checks are support/isa_threads.h (shared with gdr).
#ifndef TXOPS_TESTS_SUPPORT_ROPE_TEST_UTIL_H_
#define TXOPS_TESTS_SUPPORT_ROPE_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/isa_threads.h"
#include "txops/txops.h"

namespace txops {
namespace testing {

// How a tensor's view sits in its storage.
enum class ViewStyle {
  kContiguous,  // row-major, no offset: the first element on a 64-byte boundary
  kOffset,      // row-major, starting 3 elements into the storage
  kPadded,      // offset, every row (last axis) padded by 5 elements, outer axes padded too
  kLastStride2, // offset, last-axis stride 2 (non-unit), rows padded
};
const char* view_style_name(ViewStyle style);
std::vector<ViewStyle> all_view_styles();

// Storage with random "canary" bytes everywhere, 64 guard bytes after it and 64 to 127 before (the view's first
// element on a 64-byte boundary plus its style's offset), and a view with random values
// in [lo, hi] (rounded to the dtype) at its logical elements. `broadcast_axes[a]` true gives axis a stride 0
// (the view still has the full logical size along it; its elements alias).
class GuardedTensor {
 public:
  GuardedTensor(std::mt19937* rng, DType dtype, const std::vector<int64_t>& shape, ViewStyle style,
                double lo = -2.0, double hi = 2.0, const std::vector<bool>& broadcast_axes = {});

  const TensorView& view() const { return view_; }
  const TensorView* ptr() const { return &view_; }
  DType dtype() const { return view_.dtype; }
  std::vector<int64_t> shape() const { return std::vector<int64_t>(view_.shape, view_.shape + view_.ndim); }

  // A copy of every storage byte, guards included.
  std::vector<uint8_t> snapshot() const { return storage_; }
  // True when the guard bytes before and after the storage span are unchanged.
  bool guards_intact() const;
  // Empty when every byte equals `before` except bytes of logical elements for which may_change(coords) is
  // true; otherwise a description of the first changed byte that was not allowed.
  std::string unexpected_changes(const std::vector<uint8_t>& before,
                                 const std::function<bool(const int64_t* coords)>& may_change) const;
  // Logical element values as doubles, row-major.
  std::vector<double> values() const;

 private:
  std::vector<uint8_t> storage_;
  size_t guard_bytes_ = 64;        // after the span
  size_t front_guard_bytes_ = 64;  // before it: guard_bytes_ plus what aligns the view
  std::vector<uint8_t> guard_pattern_;
  TensorView view_;
};

// Bit patterns of a view's logical elements, row-major (for bit-identity across thread counts).
std::vector<uint64_t> element_bits(const TensorView& v);  // fp32 -> 32-bit patterns, 16-bit types -> 16-bit

// Sum over logical elements of a*b, in double (a and b have the same logical shape).
double dot(const TensorView& a, const TensorView& b);

// The fp32/fp16/bf16 dtypes, all four rotary modes.
std::vector<DType> activation_dtypes();
std::vector<RotaryMode> all_rotary_modes();

// "(2, 3, 5, 64)" for failure messages.
std::string shape_string(const std::vector<int64_t>& shape);

// Calls fn(coords) for every logical index of `shape`, row-major.
void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const int64_t* coords)>& fn);

}  // namespace testing
}  // namespace txops

#endif  // TXOPS_TESTS_SUPPORT_ROPE_TEST_UTIL_H_
