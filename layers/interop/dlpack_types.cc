#include "layers/interop/dlpack_types.h"

#include <cstring>

#include "core/half.h"

namespace lifeline::interop {
namespace {

constexpr std::string_view kDTypeNames[] = {"float32", "float16", "int8", "bool"};
constexpr std::string_view kLayoutNames[] = {"contiguous", "transposed", "strided", "offset"};

}  // namespace

DLDataType ToDLDataType(DType type) {
  switch (type) {
    case DType::kFloat32: return {kDLFloat, 32, 1};
    case DType::kFloat16: return {kDLFloat, 16, 1};
    case DType::kInt8: return {kDLInt, 8, 1};
    case DType::kBool: return {kDLBoolCode, 8, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<DType> FromDLDataType(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  if (t.code == kDLFloat && t.bits == 32) return DType::kFloat32;
  if (t.code == kDLFloat && t.bits == 16) return DType::kFloat16;
  if (t.code == kDLInt && t.bits == 8) return DType::kInt8;
  if (t.code == kDLBoolCode && t.bits == 8) return DType::kBool;
  return std::nullopt;
}

size_t ItemSize(DType type) {
  switch (type) {
    case DType::kFloat32: return 4;
    case DType::kFloat16: return 2;
    case DType::kInt8:
    case DType::kBool: return 1;
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
    case DType::kFloat32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return HalfToFloat(h);
    }
    case DType::kInt8: return static_cast<int8_t>(*p);
    case DType::kBool: return *p != 0 ? 1.0 : 0.0;
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
    case DType::kInt8: *p = static_cast<uint8_t>(static_cast<int8_t>(value)); return;
    case DType::kBool: *p = value != 0 ? 1 : 0; return;
  }
}

double PatternValue(DType type, uint32_t seed, uint64_t index) {
  uint64_t k = (uint64_t{seed} * 31 + index * 7) % 97;  // 0..96
  switch (type) {
    case DType::kFloat32:
    case DType::kFloat16: return (static_cast<double>(k) - 48) * 0.5;  // halves in [-24, 24]
    case DType::kInt8: return static_cast<double>(k) - 48;             // [-48, 48]
    case DType::kBool: return k % 3 == 0 ? 1.0 : 0.0;
  }
  return 0;
}

}  // namespace lifeline::interop
