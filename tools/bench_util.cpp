// bench_util.cpp — aligned buffers, deterministic fills, clock and shape strings for `txops bench`.
#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/dtype.h"

namespace txops {
namespace bench {

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

double median_of_sorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

Buffer::Buffer(size_t bytes) : bytes_(bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  data_ = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded == 0 ? 64 : rounded);
}
Buffer::~Buffer() { std::free(data_); }
Buffer::Buffer(Buffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}
Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}
void Buffer::copy_from(const Buffer& other) {
  std::memcpy(data_, other.data_, bytes_ < other.bytes_ ? bytes_ : other.bytes_);
}

HostTensor::HostTensor(DType dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  buffer = Buffer(static_cast<size_t>(n) * dtype_size(dtype));
  view = TensorView::make(buffer.data(), dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr);
}

namespace {

// splitmix64: a fast, well-mixed counter-based generator (the value at index i depends only on seed and i).
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline float unit_float(uint64_t seed, int64_t i) {
  return static_cast<float>(mix(seed * 0x100000001B3ull + static_cast<uint64_t>(i)) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace

void fill_uniform(HostTensor* t, uint64_t seed, float lo, float hi) {
  const int64_t n = t->view.numel();
  void* data = t->view.data;
  const DType dtype = t->view.dtype;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) store_f32(data, dtype, i, lo + (hi - lo) * unit_float(seed, i));
}

// The index of the angle channel j of a row of d channels shares with its rotation partner.
static int64_t rotary_pair_class(RotaryMode mode, int64_t d, int64_t j) {
  switch (mode) {
    case RotaryMode::kInterleave: return j / 2;
    case RotaryMode::kQuarter: return (j / (d / 2)) * (d / 4) + j % (d / 4);
    default: return j % (d / 2);  // half, interleave-half
  }
}

void fill_cos_sin(HostTensor* cos, HostTensor* sin, uint64_t seed, RotaryMode mode) {
  const int64_t n = cos->view.numel();
  const int64_t d = cos->view.shape[cos->view.ndim - 1];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = i / d;
    const float theta = 6.2831853f * unit_float(seed, row * d + rotary_pair_class(mode, d, i % d));
    store_f32(cos->view.data, cos->view.dtype, i, std::cos(theta));
    store_f32(sin->view.data, sin->view.dtype, i, std::sin(theta));
  }
}

void fill_cos_sin_cache(HostTensor* cache, uint64_t seed) {
  const int64_t r = cache->view.shape[cache->view.ndim - 1], half = r / 2;
  const int64_t n = cache->view.numel() / r * half;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = i / half, k = i % half;
    const float theta = 6.2831853f * unit_float(seed, i);
    store_f32(cache->view.data, cache->view.dtype, row * r + k, std::cos(theta));
    store_f32(cache->view.data, cache->view.dtype, row * r + half + k, std::sin(theta));
  }
}

void fill_unit_rows(HostTensor* t, uint64_t seed) {
  const int64_t d = t->view.shape[t->view.ndim - 1];
  const int64_t rows = t->view.numel() / d;
  std::vector<float> row(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    double norm2 = 0;
    for (int64_t j = 0; j < d; ++j) {
      row[j] = unit_float(seed, r * d + j) * 2.0f - 1.0f;
      norm2 += static_cast<double>(row[j]) * row[j];
    }
    const float inv = norm2 > 0 ? static_cast<float>(1.0 / std::sqrt(norm2)) : 0.0f;
    for (int64_t j = 0; j < d; ++j) store_f32(t->view.data, t->view.dtype, r * d + j, row[j] * inv);
  }
}

HostTensor int32_tensor(const std::vector<int32_t>& values) {
  HostTensor t(DType::kI32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), static_cast<int32_t*>(t.view.data));
  return t;
}

bool Dims::has(const std::string& key) const {
  for (const auto& kv : items_)
    if (kv.first == key) return true;
  return false;
}
int64_t Dims::get(const std::string& key) const {
  for (const auto& kv : items_)
    if (kv.first == key) return kv.second;
  return 0;
}
void Dims::set(const std::string& key, int64_t value) {
  for (auto& kv : items_)
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  items_.emplace_back(key, value);
}
std::string Dims::str() const {
  std::string s;
  for (const auto& kv : items_) {
    if (!s.empty()) s += ",";
    s += kv.first + "=" + std::to_string(kv.second);
  }
  return s;
}
bool Dims::parse(const std::string& text, Dims* out, std::string* error) {
  *out = Dims();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    char* end = nullptr;
    const long long value = eq == std::string::npos ? 0 : std::strtoll(item.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == item.c_str() + eq + 1 || *end != '\0' || value < 0) {
      *error = "--shape items must be KEY=VALUE with VALUE >= 0, got '" + item + "'";
      return false;
    }
    out->set(item.substr(0, eq), value);
    pos = comma + 1;
  }
  return true;
}

bool parse_dtype(const std::string& name, DType* dtype) {
  if (name == "bf16") *dtype = DType::kBF16;
  else if (name == "fp16") *dtype = DType::kF16;
  else if (name == "fp32") *dtype = DType::kF32;
  else return false;
  return true;
}

}  // namespace bench
}  // namespace txops
