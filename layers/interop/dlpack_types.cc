#include "layers/interop/dlpack_types.h"

#include <cstring>
#include <iterator>

#include "core/half.h"

namespace lifeline::interop {
namespace {

constexpr std::string_view kDTypeNames[] = {"float32", "float16", "int8",   "bool",   "uint8",   "bfloat16",
                                            "complex64", "int16", "int32", "int64",  "uint16",  "uint32",
                                            "uint64",  "float64", "complex128"};
static_assert(std::size(kDTypeNames) == static_cast<size_t>(DType::kMaxValue) + 1, "a name per dtype");

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
constexpr std::string_view kLayoutNames[] = {"contiguous", "transposed",   "strided",     "offset",     "reversed",
                                             "broadcast",  "null-strides", "reversed-all", "unit-strides"};

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
    case DType::kInt16: return {kDLInt, 16, 1};
    case DType::kInt32: return {kDLInt, 32, 1};
    case DType::kInt64: return {kDLInt, 64, 1};
    case DType::kUInt16: return {kDLUInt, 16, 1};
    case DType::kUInt32: return {kDLUInt, 32, 1};
    case DType::kUInt64: return {kDLUInt, 64, 1};
    case DType::kFloat64: return {kDLFloat, 64, 1};
    case DType::kComplex128: return {kDLComplex, 128, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}

std::optional<DType> FromDLDataType(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (int i = 0; i <= static_cast<int>(DType::kMaxValue); ++i) {
    const DLDataType d = ToDLDataType(static_cast<DType>(i));
    if (d.code == t.code && d.bits == t.bits) return static_cast<DType>(i);
  }
  return std::nullopt;
}

bool IsComplex(DType type) { return type == DType::kComplex64 || type == DType::kComplex128; }

bool IsInteger(DType type) {
  const uint8_t code = ToDLDataType(type).code;
  return code == kDLInt || code == kDLUInt;
}

size_t ItemSize(DType type) { return ToDLDataType(type).bits / 8; }

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
    case DType::kInt16: return Load<int16_t>(p);
    case DType::kInt32: return Load<int32_t>(p);
    case DType::kInt64: return static_cast<double>(Load<int64_t>(p));
    case DType::kUInt16: return Load<uint16_t>(p);
    case DType::kUInt32: return Load<uint32_t>(p);
    case DType::kUInt64: return static_cast<double>(Load<uint64_t>(p));
    case DType::kFloat64:
    case DType::kComplex128: return Load<double>(p);
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
    case DType::kInt16: Store(p, static_cast<int16_t>(value)); return;
    case DType::kInt32: Store(p, static_cast<int32_t>(value)); return;
    case DType::kInt64: Store(p, static_cast<int64_t>(value)); return;
    case DType::kUInt16: Store(p, static_cast<uint16_t>(value)); return;
    case DType::kUInt32: Store(p, static_cast<uint32_t>(value)); return;
    case DType::kUInt64: Store(p, static_cast<uint64_t>(value)); return;
    case DType::kFloat64: Store(p, value); return;
    case DType::kComplex128: {
      const double parts[2] = {value, 0.0};
      std::memcpy(p, parts, 16);
      return;
    }
  }
}

double PatternValue(DType type, uint32_t seed, uint64_t index) {
  uint64_t k = (uint64_t{seed} * 31 + index * 7) % 97;  // 0..96
  switch (type) {
    case DType::kFloat32:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat64:
    case DType::kComplex64:
    case DType::kComplex128: return (static_cast<double>(k) - 48) * 0.5;  // halves in [-24, 24]
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64: return static_cast<double>(k) - 48;  // [-48, 48]
    case DType::kBool: return k % 3 == 0 ? 1.0 : 0.0;
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64: return static_cast<double>(k);  // [0, 96]
  }
  return 0;
}

double PatternImag(DType type, uint32_t seed, uint64_t index) {
  if (!IsComplex(type)) return 0;
  uint64_t k = (uint64_t{seed} * 17 + index * 11 + 5) % 89;  // 0..88
  return (static_cast<double>(k) - 44) * 0.25;                // quarters in [-11, 11], never all zero
}

}  // namespace lifeline::interop
