// Element types and layouts shared by the DLPack producer and consumer of the interop layer.
//
// DLPack here is Debian's libdlpack-dev (dlpack.h version 0.6, the unversioned `DLManagedTensor` ABI that
// NumPy 1.24's `__dlpack__`/`from_dlpack` speak). 0.6 has no boolean type code; the producer uses the
// code DLPack 0.8 later assigned (`kDLBool` = 6, 8 bits), which NumPy 1.24's from_dlpack refuses
// with RuntimeError("Unsupported dtype in DLTensor.").
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lifeline::interop {

enum class DType : uint8_t { kFloat32, kFloat16, kInt8, kBool, kMaxValue = kBool };
inline constexpr uint8_t kDLBoolCode = 6;  // DLPack >= 0.8 kDLBool

// How a producer tensor's logical elements sit in its storage.
enum class Layout : uint8_t {
  kContiguous,  // C order, no offset
  kTransposed,  // axes reversed in memory (Fortran order): non-contiguous for ndim >= 2
  kStrided,     // every other element of the last axis (storage twice as long): non-contiguous
  kOffset,      // C order starting `kOffsetElements` into the storage (DLTensor.byte_offset != 0)
  kMaxValue = kOffset,
};
inline constexpr int64_t kOffsetElements = 3;

DLDataType ToDLDataType(DType type);
// The DType a DLDataType names, or nullopt for anything this layer does not read (lanes != 1 included).
std::optional<DType> FromDLDataType(DLDataType type);
size_t ItemSize(DType type);
std::string_view DTypeName(DType type);  // "float32", "float16", "int8", "bool"
std::optional<DType> DTypeFromName(std::string_view name);
std::string_view LayoutName(Layout layout);  // "contiguous", "transposed", "strided", "offset"
std::optional<Layout> LayoutFromName(std::string_view name);

// One element as a double (float16 widened exactly; bool as 0/1) and back.
double LoadElement(DType type, const uint8_t* p);
void StoreElement(DType type, uint8_t* p, double value);

// The value a producer tensor filled with `seed` holds at logical (C-order) element `index`: small
// integers and halves, exact in every dtype, so values compare exactly after any round trip.
double PatternValue(DType type, uint32_t seed, uint64_t index);

}  // namespace lifeline::interop
