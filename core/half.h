// IEEE 754 binary16 ("float16") conversions, shared by the layers that store half-precision elements:
// round to nearest even, subnormals kept, infinities and NaN preserved (a NaN stays a NaN).
#pragma once

#include <cstdint>

namespace lifeline {

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

}  // namespace lifeline
