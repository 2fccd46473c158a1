// dtype.h — scalar conversions between fp32 and the 16-bit float formats (round-to-nearest-even, NaN kept
// quiet), and element load/store by runtime dtype. The SIMD kernels use the same rounding
// (core/simd_convert-inl.h), so scalar tails and vector bodies agree bit for bit.
#ifndef TXOPS_CORE_DTYPE_H_
#define TXOPS_CORE_DTYPE_H_

#include <cstdint>
#include <cstring>

#include "txops/txops.h"

namespace txops {

inline float bits_to_f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bf16_to_f32(uint16_t h) { return bits_to_f32(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_to_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u | 0x00400000u) >> 16);  // quiet NaN
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return bits_to_f32(sign | 0x7F800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in fp32
    const float mag = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -mag : mag;
  }
  return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));  // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // result is subnormal (or zero): value / 2^-24 rounded to nearest even integer
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    const uint32_t exp = abs >> 23;
    const uint32_t man = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24 (value = man * 2^(exp-150); want man * 2^(exp-150+24))
    const uint32_t q = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    const uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | r);
  }
  // normal: rebias exponent and round the 13 dropped bits to nearest even
  const uint32_t rebased = abs - 0x38000000u;  // exponent 127 -> 15
  const uint32_t r = (rebased + 0xFFFu + ((rebased >> 13) & 1u)) >> 13;
  return static_cast<uint16_t>(sign | r);
}

// Element access by runtime dtype (fp32 / fp16 / bf16; fp64 for references). `index` is in elements.
inline float load_f32(const void* base, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(base)[index];
    case DType::kF16: return f16_to_f32(static_cast<const uint16_t*>(base)[index]);
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[index]);
    case DType::kF64: return static_cast<float>(static_cast<const double*>(base)[index]);
    default: return 0.0f;
  }
}
inline double load_f64(const void* base, DType dtype, int64_t index) {
  if (dtype == DType::kF64) return static_cast<const double*>(base)[index];
  return static_cast<double>(load_f32(base, dtype, index));
}
inline void store_f32(void* base, DType dtype, int64_t index, float value) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(base)[index] = value; break;
    case DType::kF16: static_cast<uint16_t*>(base)[index] = f32_to_f16(value); break;
    case DType::kBF16: static_cast<uint16_t*>(base)[index] = f32_to_bf16(value); break;
    case DType::kF64: static_cast<double*>(base)[index] = value; break;
    default: break;
  }
}

inline bool is_float_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

}  // namespace txops

#endif  // TXOPS_CORE_DTYPE_H_
