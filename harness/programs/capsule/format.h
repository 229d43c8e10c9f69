// The byte format of the capsule programs (target interop_capsule_lifecycle): bytes -> a bounded
// sequence of operations on two DLPack parties and the capsules between them, plus drops in any order,
// garbage cycles and the collector, and malformed capsules. Each op is legal in the lifetime model's
// state where it appears (model.h) and carries the model's prediction: the Python exception it raises.
//
// The two parties (party.h): the subject, this layer's producer (`tensor` slots) and IREE-shaped
// consumer (`view` and `buffer` slots), where the documented bugs live; and a peer library, producer
// and consumer at once (`array` slots; the ops named `*-array` and `numpy-from-*`): NumPy in
// interop_capsule_lifecycle. Which ops a peer refuses is part of its rules (PeerRules), so the decoder
// takes them: the same bytes decode to the same ops, predicted for that peer.
//
// This decoder is a file format: tests/capsule/decoder_test.cc pins bytes to ops (CapsuleDecoderGolden).
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
inline constexpr int kMaxSlots = 6;
inline constexpr int kMaxDim = 4;  // each extent in [0, kMaxDim]; ndim in [0, kMaxProducerNdim]

enum class OpKind : uint8_t {
  kCreateTensor,      // Tensor(dtype, shape, layout, seed, readonly) -> tensor slot
  kCreateArray,       // a peer-owned array with the same values and layout -> array slot
  kExportTensor,      // tensor.__dlpack__() -> capsule slot
  kExportArray,       // array.__dlpack__() -> capsule slot (NumPy 1.24 refuses bool and read-only arrays)
  kImportCapsule,     // import_capsule(capsule) -> view slot; a consumed capsule is refused
  kImportFromTensor,  // import_from(tensor, contiguous) -> view slot: the Python-side wrapper
  kImportFromArray,   // import_from(array) -> view slot
  kNumpyFromTensor,   // the peer's from_dlpack(tensor) -> array slot (bool is refused by NumPy 1.24)
  kNumpyFromCapsule,  // the peer's from_dlpack of a capsule -> array slot
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

// What the lifetime model knows of the peer: which requests it refuses, and with which exception.
struct PeerRules {
  const char* object_name;           // how oracle messages name its objects: "NumPy array"
  const char* export_refusal;        // the exception __dlpack__ raises when the peer cannot export
  bool exports_bool;                 // ... a bool array
  bool exports_read_only;            // ... a read-only array
  bool imports_read_only;            // the arrays its from_dlpack makes are read-only
  const char* import_refusal;        // the exception its from_dlpack raises for a dtype it cannot take
  bool imports_bool;
  const char* used_capsule_refusal;  // the exception its from_dlpack raises for a consumed capsule
};

Program Decode(const uint8_t* data, size_t size, const PeerRules& peer);

// The slot kinds an op reads from and writes to (ops with one fixed kind of each).
SlotKind SourceKind(OpKind kind);
SlotKind DestKind(OpKind kind);
bool HasSource(OpKind kind);
bool HasDest(OpKind kind);

// One line per op, e.g. `import-from-tensor t1 contiguous -> v0`.
std::string Describe(const Op& op);
// "#i <op>" per op.
std::string Describe(const Program& program);

}  // namespace lifeline::capsule
