// bench_util.h — small pieces shared by the `txops bench` sources: 64-byte-aligned buffers, deterministic
// random fills, a monotonic clock, and the KEY=VALUE shape strings cases are named and picked by.
#ifndef TXOPS_TOOLS_BENCH_UTIL_H_
#define TXOPS_TOOLS_BENCH_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "txops/txops.h"

namespace txops {
namespace bench {

// Seconds on a monotonic clock.
double now_seconds();

// The median of values sorted ascending (not empty).
double median_of_sorted(const std::vector<double>& sorted);

// Owned, 64-byte-aligned, zero-initialised memory (pages touched once, so timings see no page faults).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  void copy_from(const Buffer& other);  // same size

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A contiguous tensor: its buffer and a view over it.
struct HostTensor {
  Buffer buffer;
  TensorView view;
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);
  size_t bytes() const { return buffer.bytes(); }
};

// Deterministic pseudo-random values (uniform in [lo, hi)), stored in the tensor's dtype.
void fill_uniform(HostTensor* t, uint64_t seed, float lo, float hi);
// cos(theta) / sin(theta) of deterministic angles, one angle per row and pair of channels the mode rotates
// together (half and interleave-half: j and j + D/2; interleave: 2k and 2k + 1; quarter: j and j + D/4 in each half),
// as real rotary tables are. Each pair then turns by an exact rotation, so the repeated in-place calls of a timing
// loop keep the values' magnitude: with an independent angle per channel the 2 x 2 maps are not orthogonal, values
// shrink or grow geometrically over the repetitions, and on Intel cores the fp32 subnormals they pass through cost
// ~40x per call (ApplyRotaryPosEmbV2 decode, bf16: median 1.6 ms against a minimum of 0.04 ms).
void fill_cos_sin(HostTensor* cos, HostTensor* sin, uint64_t seed, RotaryMode mode = RotaryMode::kHalf);
// A cos/sin cache (P, R) as vLLM builds it: each row cos(theta_k) for k < R/2, then sin(theta_k).
void fill_cos_sin_cache(HostTensor* cache, uint64_t seed);
// Rows of the last dimension scaled to unit L2 norm (the gated delta rule's q and k).
void fill_unit_rows(HostTensor* t, uint64_t seed);
// A 1-D int32 tensor holding `values` (sequence lengths, state indices, per-sequence counts).
HostTensor int32_tensor(const std::vector<int32_t>& values);

// Ordered KEY=VALUE integer dimensions, e.g. "B=64,S=1,Nq=32,Nk=8,D=128".
class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<std::pair<std::string, int64_t>> items) : items_(items) {}
  bool has(const std::string& key) const;
  int64_t get(const std::string& key) const;  // 0 when absent
  void set(const std::string& key, int64_t value);
  std::string str() const;
  const std::vector<std::pair<std::string, int64_t>>& items() const { return items_; }
  // Parses "K=V,K=V"; false (and *error set) on a malformed string.
  static bool parse(const std::string& text, Dims* out, std::string* error);

 private:
  std::vector<std::pair<std::string, int64_t>> items_;
};

// "bf16" / "fp16" / "fp32" -> dtype; false otherwise.
bool parse_dtype(const std::string& name, DType* dtype);

}  // namespace bench
}  // namespace txops

#endif  // TXOPS_TOOLS_BENCH_UTIL_H_
