// rope_test_util.cpp — guarded random tensors and settings scopes for the RoPE tests (see the header).
#include "support/rope_test_util.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/dtype.h"

namespace txops {
namespace testing {

const char* view_style_name(ViewStyle style) {
  switch (style) {
    case ViewStyle::kContiguous: return "contiguous";
    case ViewStyle::kOffset: return "offset";
    case ViewStyle::kPadded: return "padded";
    case ViewStyle::kLastStride2: return "last-stride-2";
  }
  return "?";
}

std::vector<ViewStyle> all_view_styles() {
  return {ViewStyle::kContiguous, ViewStyle::kOffset, ViewStyle::kPadded, ViewStyle::kLastStride2};
}

void for_each_index(const std::vector<int64_t>& shape, const std::function<void(const int64_t* coords)>& fn) {
  for (int64_t s : shape)
    if (s <= 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx.data());
    int a = static_cast<int>(shape.size()) - 1;
    while (a >= 0 && ++idx[a] == shape[a]) idx[a--] = 0;
    if (a < 0) return;
  }
}

// splitmix64: a fast generator for the bulk of the bytes and values (seeded from the caller's mt19937, which
// alone would dominate the run time of the larger cases, above all under sanitizers).
static uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int64_t element_offset(const TensorView& v, const int64_t* idx) {
  int64_t off = 0;
  for (int a = 0; a < v.ndim; ++a) off += idx[a] * v.strides[a];
  return off;
}

GuardedTensor::GuardedTensor(std::mt19937* rng, DType dtype, const std::vector<int64_t>& shape, ViewStyle style,
                             double lo, double hi, const std::vector<bool>& broadcast_axes) {
  const int nd = static_cast<int>(shape.size());
  // Strides per style: the last axis first, then each outer axis spans the inner one plus padding.
  int64_t offset = 0, last_stride = 1, pad = 0;
  if (style == ViewStyle::kOffset) offset = 3;
  if (style == ViewStyle::kPadded) offset = 3, pad = 5;
  if (style == ViewStyle::kLastStride2) offset = 1, last_stride = 2, pad = 3;
  std::vector<int64_t> strides(nd, 0);
  int64_t extent = 1;  // elements spanned by one index of the current axis
  for (int a = nd - 1; a >= 0; --a) {
    strides[a] = (a == nd - 1) ? last_stride : extent + pad;
    extent = strides[a] * (shape[a] > 0 ? shape[a] : 1);
  }
  for (int a = 0; a < nd && a < static_cast<int>(broadcast_axes.size()); ++a)
    if (broadcast_axes[a]) strides[a] = 0;
  int64_t span = offset + 1;
  for (int a = 0; a < nd; ++a)
    if (shape[a] > 0) span += (shape[a] - 1) * strides[a];
  const size_t esize = dtype_size(dtype);
  // The front guard is 64 to 127 bytes, so that the view's first element lies on a 64-byte boundary plus the
  // style's offset: contiguous views are aligned for the kernels' streaming stores and offset ones are not,
  // whatever malloc returned.
  storage_.resize(2 * guard_bytes_ + 63 + static_cast<size_t>(span) * esize);
  const uintptr_t after_guard = reinterpret_cast<uintptr_t>(storage_.data() + guard_bytes_);
  front_guard_bytes_ = guard_bytes_ + (64 - after_guard % 64) % 64;
  uint64_t state = (static_cast<uint64_t>((*rng)()) << 32) | (*rng)();
  for (size_t i = 0; i < storage_.size(); i += 8) {
    const uint64_t bits = next_random(&state);
    std::memcpy(&storage_[i], &bits, std::min<size_t>(8, storage_.size() - i));
  }
  guard_pattern_.assign(storage_.begin(), storage_.begin() + front_guard_bytes_);
  guard_pattern_.insert(guard_pattern_.end(), storage_.end() - guard_bytes_, storage_.end());

  uint8_t* base = storage_.data() + front_guard_bytes_ + static_cast<size_t>(offset) * esize;
  view_ = TensorView::make(base, dtype, nd, shape.data(), strides.data());
  for_each_index(shape, [&](const int64_t* idx) {
    const double unit = static_cast<double>(next_random(&state) >> 11) * 0x1p-53;  // [0, 1)
    store_f32(view_.data, dtype, element_offset(view_, idx), static_cast<float>(lo + (hi - lo) * unit));
  });
}

bool GuardedTensor::guards_intact() const {
  return std::memcmp(storage_.data(), guard_pattern_.data(), front_guard_bytes_) == 0 &&
         std::memcmp(storage_.data() + storage_.size() - guard_bytes_, guard_pattern_.data() + front_guard_bytes_,
                     guard_bytes_) == 0;
}

std::string GuardedTensor::unexpected_changes(const std::vector<uint8_t>& before,
                                              const std::function<bool(const int64_t* coords)>& may_change) const {
  std::vector<bool> allowed(storage_.size(), false);
  const size_t esize = dtype_size(view_.dtype);
  const uint8_t* base = static_cast<const uint8_t*>(view_.data);
  for_each_index(shape(), [&](const int64_t* idx) {
    if (!may_change(idx)) return;
    const size_t at = static_cast<size_t>(base - storage_.data()) + element_offset(view_, idx) * esize;
    for (size_t b = 0; b < esize; ++b) allowed[at + b] = true;
  });
  for (size_t i = 0; i < storage_.size(); ++i) {
    if (storage_[i] == before[i] || allowed[i]) continue;
    char buf[160];
    const long long rel = static_cast<long long>(i) - static_cast<long long>(base - storage_.data());
    std::snprintf(buf, sizeof(buf), "byte %lld (relative to the view's first element, %zu-byte elements) changed",
                  rel, esize);
    return buf;
  }
  return "";
}

std::vector<double> GuardedTensor::values() const {
  std::vector<double> out;
  for_each_index(shape(), [&](const int64_t* idx) {
    out.push_back(load_f64(view_.data, view_.dtype, element_offset(view_, idx)));
  });
  return out;
}

std::vector<uint64_t> element_bits(const TensorView& v) {
  std::vector<uint64_t> out;
  std::vector<int64_t> shape(v.shape, v.shape + v.ndim);
  for_each_index(shape, [&](const int64_t* idx) {
    const int64_t off = element_offset(v, idx);
    if (dtype_size(v.dtype) == 4) {
      out.push_back(static_cast<const uint32_t*>(v.data)[off]);
    } else {
      out.push_back(static_cast<const uint16_t*>(v.data)[off]);
    }
  });
  return out;
}

double dot(const TensorView& a, const TensorView& b) {
  double sum = 0;
  std::vector<int64_t> shape(a.shape, a.shape + a.ndim);
  for_each_index(shape, [&](const int64_t* idx) {
    sum += load_f64(a.data, a.dtype, element_offset(a, idx)) * load_f64(b.data, b.dtype, element_offset(b, idx));
  });
  return sum;
}

std::vector<DType> activation_dtypes() { return {DType::kF32, DType::kF16, DType::kBF16}; }
std::vector<RotaryMode> all_rotary_modes() {
  return {RotaryMode::kHalf, RotaryMode::kInterleave, RotaryMode::kQuarter, RotaryMode::kInterleaveHalf};
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

}  // namespace testing
}  // namespace txops
