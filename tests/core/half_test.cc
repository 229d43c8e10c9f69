// IEEE 754 binary16 conversions of core/half.h: exact values both ways, round to nearest even (ties,
// subnormals, overflow to infinity), NaN kept a NaN, and every half surviving a trip through float.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/half.h"

namespace lifeline {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(HalfFloat, ExactValuesRoundTrip) {
  struct Row {
    float value;
    uint16_t half;
  };
  const Row rows[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3C00},
      {-2.5f, 0xC100},
      {0.5f, 0x3800},
      {65504.0f, 0x7BFF},                // largest finite
      {-65504.0f, 0xFBFF},
      {std::ldexp(1.0f, -14), 0x0400},   // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},   // smallest subnormal
      {-std::ldexp(1.0f, -24), 0x8001},
      {std::ldexp(1023.0f, -24), 0x03FF},  // largest subnormal
      {std::ldexp(1.0f, -15), 0x0200},
      {std::numeric_limits<float>::infinity(), 0x7C00},
      {-std::numeric_limits<float>::infinity(), 0xFC00},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(::testing::Message() << row.value << " <-> 0x" << std::hex << row.half);
    EXPECT_EQ(FloatToHalf(row.value), row.half);
    EXPECT_EQ(Bits(HalfToFloat(row.half)), Bits(row.value));  // bitwise: keeps the sign of zero
  }
}

TEST(HalfFloat, RoundsToNearestEven) {
  struct Row {
    const char* what;
    float value;
    uint16_t half;
  };
  const float ulp1 = std::ldexp(1.0f, -10);  // the float16 spacing at 1
  const Row rows[] = {
      {"tie below even 1.0 stays", 1.0f + ulp1 / 2, 0x3C00},
      {"tie above odd 1+ulp goes up", 1.0f + 3 * ulp1 / 2, 0x3C02},
      {"just above the tie goes up", 1.0f + ulp1 / 2 + std::ldexp(1.0f, -20), 0x3C01},
      {"just below the tie goes down", 1.0f + ulp1 / 2 - std::ldexp(1.0f, -20), 0x3C00},
      {"negative tie to even", -(1.0f + 3 * ulp1 / 2), 0xBC02},
      {"subnormal tie to zero", std::ldexp(1.0f, -25), 0x0000},
      {"subnormal tie to two", std::ldexp(3.0f, -25), 0x0002},
      {"below half the smallest subnormal", std::ldexp(1.0f, -26), 0x0000},
      {"largest subnormal tie carries into the normals", std::ldexp(2047.0f, -25), 0x0400},
      {"largest normal mantissa carries into the exponent", 2.0f - ulp1 / 2, 0x4000},
      {"just under the overflow tie", 65519.0f, 0x7BFF},
      {"overflow tie rounds to infinity", 65520.0f, 0x7C00},
      {"far past the range", 1e6f, 0x7C00},
      {"far past the range, negative", -1e6f, 0xFC00},
      {"float subnormal flushes to zero", std::numeric_limits<float>::denorm_min(), 0x0000},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    EXPECT_EQ(FloatToHalf(row.value), row.half) << std::hex << FloatToHalf(row.value);
  }
}

TEST(HalfFloat, NanStaysNan) {
  uint16_t h = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00u, 0x7C00u);
  EXPECT_NE(h & 0x03FFu, 0u);
  EXPECT_TRUE(std::isnan(HalfToFloat(h)));
  EXPECT_TRUE(std::isnan(HalfToFloat(0x7E00)));
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7C00)));
}

TEST(HalfFloat, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0) continue;  // NaN payloads are not kept
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace lifeline
