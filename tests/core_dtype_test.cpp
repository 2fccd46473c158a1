// core_dtype_test.cpp — the scalar fp32 <-> fp16 / bf16 conversions every kernel's rounding must match:
// exhaustive over 16-bit patterns, halfway cases (ties to even), overflow, subnormals, NaN; checked against
// the CPU's own F16C conversion where available and against an exact double-based rounding model.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>

#include "core/dtype.h"

namespace txops {
namespace {

__attribute__((target("f16c"))) uint16_t hardware_f32_to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("f16c"))) float hardware_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

bool cpu_has_f16c() { return __builtin_cpu_supports("f16c"); }

TEST(Fp16, WideningIsExactForEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (cpu_has_f16c()) {
      const float hw = hardware_f16_to_f32(static_cast<uint16_t>(h));
      if (std::isnan(hw)) {
        EXPECT_TRUE(std::isnan(f)) << h;
      } else {
        EXPECT_EQ(f32_to_bits(f), f32_to_bits(hw)) << "pattern " << h;
      }
    }
    if (!std::isnan(f)) EXPECT_EQ(f32_to_f16(f), h) << "round trip of pattern " << h;
  }
}

TEST(Fp16, NarrowingTiesToEvenAtEveryHalfway) {
  // For each pair of adjacent finite fp16 values a < b, the midpoint rounds to the one with an even pattern,
  // and points just below / above the midpoint round down / up.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double a = f16_to_f32(static_cast<uint16_t>(h)), b = f16_to_f32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((a + b) / 2);  // exact in fp32
    const uint16_t even = (h % 2 == 0) ? h : h + 1;
    EXPECT_EQ(f32_to_f16(mid), even) << "tie between patterns " << h << " and " << h + 1;
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, -1.0f)), h);
    EXPECT_EQ(f32_to_f16(std::nextafter(mid, 2e5f)), h + 1);
    EXPECT_EQ(f32_to_f16(-mid), even | 0x8000);
  }
}

TEST(Fp16, OverflowSubnormalsAndNaN) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.99f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // halfway to 2^16 rounds to even = inf
  EXPECT_EQ(f32_to_f16(1e30f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie: rounds to even (zero)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  const uint16_t nan = f32_to_f16(std::nanf(""));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(Fp16, MatchesHardwareOnRandomFloats) {
  if (!cpu_has_f16c()) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t bits = rng();
    const float f = bits_to_f32(bits);
    const uint16_t hw = hardware_f32_to_f16(f), ours = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_EQ(ours & 0x7C00, 0x7C00);
      EXPECT_NE(ours & 0x03FF, 0);
    } else {
      ASSERT_EQ(ours, hw) << "bits 0x" << std::hex << bits;
    }
  }
}

// bf16: the exact model — the nearest of the two bf16 neighbours, ties to the even pattern.
uint16_t bf16_model(float f) {
  const uint32_t u = f32_to_bits(f);
  const uint16_t down = static_cast<uint16_t>(u >> 16);
  if ((u & 0xFFFF) == 0) return down;
  const double lo = bf16_to_f32(down);
  const uint16_t up_bits = static_cast<uint16_t>(down + 1);
  const double hi = bf16_to_f32(up_bits);  // magnitude step away from zero (sign kept in the pattern)
  const double dl = std::fabs(f - lo), dh = std::fabs(hi - f);
  if (dl < dh) return down;
  if (dh < dl) return up_bits;
  return (down & 1) ? up_bits : down;
}

TEST(Bf16, NarrowingMatchesNearestEvenModel) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    if (i % 4 == 0) bits = (bits & 0xFFFF0000u) | 0x8000u;  // exact ties
    const float f = bits_to_f32(bits);
    if (std::isnan(f) || std::isinf(f)) continue;
    if ((bits & 0x7F800000u) == 0x7F000000u && (bits >> 16 & 0x7F) == 0x7F) continue;  // rounds to inf: below
    ASSERT_EQ(f32_to_bf16(f), bf16_model(f)) << "bits 0x" << std::hex << bits;
  }
  EXPECT_EQ(f32_to_bf16(bits_to_f32(0x7F7FFFFFu)), 0x7F80);  // max float rounds to inf
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256 + 1.0f / 1024), f32_to_bf16(1.0078125f));  // rounds up
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3F80);  // tie to even (down)
  const uint16_t nan = f32_to_bf16(std::nanf(""));
  EXPECT_EQ(nan & 0x7F80, 0x7F80);
  EXPECT_NE(nan & 0x007F, 0);
  EXPECT_NE(f32_to_bf16(bits_to_f32(0x7F800001u)) & 0x7F, 0) << "a NaN whose payload is in the low bits stays NaN";
}

TEST(Bf16, WideningIsExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    EXPECT_EQ(f32_to_bits(bf16_to_f32(static_cast<uint16_t>(h))), h << 16);
  }
}

TEST(DtypeNames, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_STREQ(dtype_name(DType::kBF16), "bf16");
  EXPECT_STREQ(dtype_name(DType::kF16), "fp16");
  EXPECT_EQ(dtype_size(static_cast<DType>(99)), 0u);
}

}  // namespace
}  // namespace txops
