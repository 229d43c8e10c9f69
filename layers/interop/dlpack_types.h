// Element types and layouts shared by the DLPack producer and consumer of the interop layer.
//
// DLPack here is Debian's libdlpack-dev (dlpack.h version 0.6, the unversioned `DLManagedTensor` ABI that
// NumPy 1.24's `__dlpack__`/`from_dlpack` speak). 0.6 has no boolean type code; the producer uses the
// code DLPack 0.8 later assigned (`kDLBool` = 6, 8 bits), which NumPy 1.24's from_dlpack refuses
// with RuntimeError("Unsupported dtype in DLTensor.").
//
// uint8, bfloat16 and complex64 are the further types PyTorch carries over DLPack (the torch capsule
// programs, harness/programs/capsule/upstream/torch_peer.h); int16-64, uint16-64, float64 and complex128 those
// NumPy and PyTorch also carry. This layer's producer makes and its consumer reads only the first four
// (kMaxStandinDType): it refuses the others like any other dtype it cannot read.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lifeline::interop {

enum class DType : uint8_t {
  kFloat32, kFloat16, kInt8, kBool,  // this layer's producer and consumer
  kUInt8, kBFloat16, kComplex64,     // only parties with wider DLPack support (PyTorch)
  // The wider integer, float64 and complex128 types NumPy and PyTorch carry (PyTorch 1.13 has no uint16-64),
  // drawn only from a dtype byte with bit 7 set (harness/programs/capsule/format.cc).
  kInt16, kInt32, kInt64, kUInt16, kUInt32, kUInt64, kFloat64, kComplex128,
  kMaxValue = kComplex128,
};
inline constexpr DType kMaxClassicDType = DType::kComplex64;
inline constexpr DType kMaxStandinDType = DType::kBool;
inline constexpr uint8_t kDLBoolCode = 6;  // DLPack >= 0.8 kDLBool

// How a producer tensor's logical elements sit in its storage.
enum class Layout : uint8_t {
  kContiguous,  // C order, no offset
  kTransposed,  // axes reversed in memory (Fortran order): non-contiguous for ndim >= 2
  kStrided,     // every other element of the last axis (storage twice as long): non-contiguous
  kOffset,      // C order starting `kOffsetElements` into the storage (DLTensor.byte_offset != 0)
  // The layouts below are drawn only from a layout byte with bit 7 set (harness/programs/capsule/format.cc):
  // the four above keep the bytes they always had.
  kReversed,     // the last axis reversed (a[..., ::-1]): a negative stride; this layer's producer starts at
                 // the storage's last element of each row (DLTensor.byte_offset != 0 for rows longer than 1)
  kBroadcast,    // axis 0 has stride 0 (numpy.broadcast_to, torch.expand): every row is the same memory, so
                 // the rows hold the same values (PatternPeriod)
  kNullStrides,  // C order exported with DLTensor.strides == NULL, which DLPack 0.6 allows for compact
                 // row-major tensors (only this layer's producer exports it; peers make their contiguous)
  kReversedAll,  // every axis reversed (a[::-1, ::-1, ...], numpy.flip): a negative stride on every axis; logical
                 // element 0 is the storage's last (DLTensor.byte_offset != 0 in this layer's producer)
  kUnitStrides,  // C order over the axes of extent above 1; an axis of extent 1 has stride 0 (even axes) or
                 // kUnitStride (odd axes), which no element steps by: DLPack gives such strides no meaning, and
                 // NumPy and PyTorch make them (np.newaxis, expand, as_strided)
  kMaxValue = kUnitStrides,
};
inline constexpr Layout kMaxClassicLayout = Layout::kOffset;
inline constexpr int64_t kOffsetElements = 3;
inline constexpr int64_t kUnitStride = 4099;  // kUnitStrides: beyond any storage the producer makes

DLDataType ToDLDataType(DType type);
// The DType a DLDataType names, or nullopt for anything this layer does not read (lanes != 1 included).
std::optional<DType> FromDLDataType(DLDataType type);
size_t ItemSize(DType type);
std::string_view DTypeName(DType type);  // "float32", "float16", "int8", "bool", "uint8", "bfloat16", "complex64",
                                         // "int16", ..., "uint64", "float64", "complex128"
std::optional<DType> DTypeFromName(std::string_view name);
std::string_view LayoutName(Layout layout);  // "contiguous", "transposed", "strided", "offset", "reversed",
                                             // "broadcast", "null-strides", "reversed-all", "unit-strides"
std::optional<Layout> LayoutFromName(std::string_view name);

// One element as a double (float16 and bfloat16 widened exactly; bool as 0/1; complex: its real part)
// and back (complex: the real part, the imaginary part zero).
bool IsComplex(DType type);
bool IsInteger(DType type);  // signed or unsigned, not bool
double LoadElement(DType type, const uint8_t* p);
void StoreElement(DType type, uint8_t* p, double value);

// The value a producer tensor filled with `seed` holds at logical (C-order) element `index`: small
// integers and halves, exact in every dtype, so values compare exactly after any round trip.
// For complex types this is the real part, and PatternImag the imaginary part (0 for every other dtype).
double PatternValue(DType type, uint32_t seed, uint64_t index);
double PatternImag(DType type, uint32_t seed, uint64_t index);

}  // namespace lifeline::interop
