#include "layers/interop/dlpack_types.h"

#include <cstring>

#include "core/half.h"

namespace lifeline::interop {
namespace {

constexpr std::string_view kDTypeNames[] = {"float32", "float16", "int8", "bool", "uint8", "bfloat16", "complex64"};
constexpr std::string_view kLayoutNames[] = {"contiguous", "transposed", "strided", "offset",
                                                 "reversed",   "broadcast",  "null-strides"};

}  // namespace

DLDataType ToDLDataType(DType type) {
  switch (type) {
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kInt8: return {kDLInt, 8, 1};
    case DType::kBool: return {kDLBoolCode, 8, 1};
    case DType::kUInt8: return {kDLUInt, 8, 1};
    case DType::kBFloat16: return {kDLBfloat, 16, 1};
    case DType::kComplex64: return {kDLComplex, 64, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<DType> FromDLDataType(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLFloat && t.bits == 32) return DType::kFloat32;
  if (t.code == kDLFloat && t.bits == 16) return DType::kFloat16;
  if (t.code == kDLInt && t.bits == 8) return DType::kInt8;
  if (t.code == kDLBoolCode && t.bits == 8) return DType::kBool;
  if (t.code == kDLUInt && t.bits == 8) return DType::kUInt8;
  if (t.code == kDLBfloat && t.bits == 16) return DType::kBFloat16;
  if (t.code == kDLComplex && t.bits == 64) return DType::kComplex64;
  return std::nullopt;
}

size_t ItemSize(DType type) {
  switch (type) {
    case DType::kFloat32: return 4;
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt8:
    case DType::kBool:
    case DType::kUInt8: return 1;
    case DType::kComplex64: return 8;
  }
  return 1;
}

std::string_view DTypeName(DType type) { return kDTypeNames[static_cast<int>(type)]; }

std::optional<DType> DTypeFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DType::kMaxValue); ++i)
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::string_view LayoutName(Layout layout) { return kLayoutNames[static_cast<int>(layout)]; }

std::optional<Layout> LayoutFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(Layout::kMaxValue); ++i)
    if (kLayoutNames[i] == name) return static_cast<Layout>(i);
  return std::nullopt;
}

double LoadElement(DType type, const uint8_t* p) {
  switch (type) {
    case DType::kFloat32:
    case DType::kComplex64: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return HalfToFloat(h);
    }
    case DType::kBFloat16: {  // the upper half of a float32
      uint16_t b;
      std::memcpy(&b, p, 2);
      uint32_t bits = uint32_t{b} << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::kInt8: return static_cast<int8_t>(*p);
    case DType::kBool: return *p != 0 ? 1.0 : 0.0;
    case DType::kUInt8: return *p;
  }
  return 0;
}

void StoreElement(DType type, uint8_t* p, double value) {
  switch (type) {
    case DType::kFloat32: {
      float f = static_cast<float>(value);
      std::memcpy(p, &f, 4);
      return;
    }
    case DType::kFloat16: {
      uint16_t h = FloatToHalf(static_cast<float>(value));
      std::memcpy(p, &h, 2);
      return;
    }
    case DType::kBFloat16: {  // truncation: PatternValue's values are exact in bfloat16
      float f = static_cast<float>(value);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t b = static_cast<uint16_t>(bits >> 16);
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kComplex64: {
      float parts[2] = {static_cast<float>(value), 0.0f};
      std::memcpy(p, parts, 8);
      return;
    }
    case DType::kInt8: *p = static_cast<uint8_t>(static_cast<int8_t>(value)); return;
    case DType::kBool: *p = value != 0 ? 1 : 0; return;
    case DType::kUInt8: *p = static_cast<uint8_t>(value); return;
  }
}

double PatternValue(DType type, uint32_t seed, uint64_t index) {
  uint64_t k = (uint64_t{seed} * 31 + index * 7) % 97;  // 0..96
  switch (type) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kComplex64: return (static_cast<double>(k) - 48) * 0.5;  // halves in [-24, 24]
    case DType::kInt8: return static_cast<double>(k) - 48;               // [-48, 48]
    case DType::kBool: return k % 3 == 0 ? 1.0 : 0.0;
    case DType::kUInt8: return static_cast<double>(k);                   // [0, 96]
  }
  return 0;
}

double PatternImag(DType type, uint32_t seed, uint64_t index) {
  if (type != DType::kComplex64) return 0;
  uint64_t k = (uint64_t{seed} * 17 + index * 11 + 5) % 89;  // 0..88
  return (static_cast<double>(k) - 44) * 0.25;                // quarters in [-11, 11], never all zero
}

}  // namespace lifeline::interop
