// The op program of the capsule-lifecycle target: bytes -> a bounded sequence of operations on DLPack
// producers (this layer's Tensor, NumPy arrays), capsules and consumers (this layer's import, NumPy's
// from_dlpack), plus drops in any order, garbage cycles and the collector, and malformed capsules.
//
// A lifetime model runs beside the real objects. It knows who holds whom (a tensor its storage, an
// unconsumed capsule its export, an imported buffer the export it took over, a view its buffer, a NumPy
// array the export or memory under it) and, after every op, what must still be alive. The executor checks
// after every op that exactly that is alive — producer storages (through the ledger), NumPy arrays
// (through weak references), imported buffers and views (through the consumer's counters) — and that every
// value read equals what the producer wrote. The ledger itself checks that no deleter runs twice.
//
// This decoder is a file format: tests/dlpack_test.cc pins bytes to ops (CapsuleDecoderGolden).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "layers/interop/dlpack_producer.h"
#include "layers/interop/dlpack_types.h"

namespace lifeline::capsule {

inline constexpr size_t kMaxOps = 32;
inline constexpr int kTensorSlots = 4;
inline constexpr int kArraySlots = 4;
inline constexpr int kCapsuleSlots = 4;
inline constexpr int kViewSlots = 6;
inline constexpr int kBufferSlots = 3;
inline constexpr int kMaxDim = 4;  // each extent in [0, kMaxDim]; ndim in [0, kMaxProducerNdim]

enum class OpKind : uint8_t {
  kCreateTensor,      // Tensor(dtype, shape, layout, seed, readonly) -> tensor slot
  kCreateArray,       // a NumPy-owned array with the same values and layout -> array slot
  kExportTensor,      // tensor.__dlpack__() -> capsule slot
  kExportArray,       // array.__dlpack__() -> capsule slot (NumPy 1.24 refuses bool and read-only arrays)
  kImportCapsule,     // import_capsule(capsule) -> view slot; a consumed capsule is refused
  kImportFromTensor,  // import_from(tensor, contiguous) -> view slot: the Python-side wrapper
  kImportFromArray,   // import_from(array) -> view slot
  kNumpyFromTensor,   // numpy.from_dlpack(tensor) -> array slot (bool is refused by NumPy 1.24)
  kNumpyFromCapsule,  // numpy.from_dlpack(CapsuleHolder(capsule)) -> array slot
  kViewBuffer,        // view.buffer() -> buffer slot: a second owner of the imported buffer
  kRead,              // read every element of a tensor, array or view (value oracle)
  kDrop,              // drop one slot's reference
  kMakeCycle,         // move a view into a self-referencing list: only the collector frees it
  kCollect,           // gc.collect()
  kMalformed,         // import a deliberately broken export of a tensor (refused, except null-deleter)
  kMaxValue = kMalformed,
};

enum class SlotKind : uint8_t { kTensor, kArray, kCapsule, kView, kBuffer, kMaxValue = kBuffer };

struct Op {
  OpKind kind = OpKind::kCreateTensor;
  // Operands.
  interop::DType dtype = interop::DType::kFloat32;  // kCreate*
  std::vector<int64_t> shape;                       // kCreate*
  interop::Layout layout = interop::Layout::kContiguous;
  uint8_t seed = 0;
  bool readonly = false;
  bool contiguous = false;          // kImportFromTensor: via tensor.contiguous()
  SlotKind slot_kind = SlotKind::kTensor;  // kRead, kDrop
  uint8_t src = 0;                  // the slot read from
  uint8_t dst = 0;                  // the slot written to
  interop::Malformed malformed = interop::Malformed::kWrongName;
  // The model's prediction: the Python exception type the op raises, or "" for success.
  std::string expect_error;
};

using Program = std::vector<Op>;

Program Decode(const uint8_t* data, size_t size);

// One line per op, e.g. `import-from-tensor t1 contiguous -> v0`.
std::string Describe(const Op& op);
std::string Describe(const Program& program);

// Runs `program` in the embedded interpreter (started on first use), checking each op's outcome against
// the model, the accounting after each op, values on every read, and at the end that dropping everything
// releases every export exactly once and leaves no storage, array, buffer or view alive. A violation is a
// LIFELINE_CHECK failure with the op index and the trace. LIFELINE_TRACE=1 prints the program first.
void Execute(const Program& program);

}  // namespace lifeline::capsule
