// The byte format of the capsule programs (target interop_capsule_lifecycle): bytes -> a bounded
// sequence of operations on two DLPack parties and the capsules between them, plus drops in any order,
// garbage cycles and the collector, and malformed capsules. Each op is legal in the lifetime model's
// state where it appears (model.h) and carries the model's prediction: the Python exception it raises.
//
// The parties (party.h): the subject, this layer's producer (`tensor` slots) and IREE-shaped consumer
// (`view` and `buffer` slots), where the documented bugs live; and one or more peer libraries, each a
// producer and consumer at once (`array` slots; the ops named `*-array` and `<peer>-from-*`): NumPy in
// interop_capsule_lifecycle, NumPy and PyTorch in torch_capsule_lifecycle. Which ops a peer refuses is
// part of its rules (PeerRules), so the decoder takes them: the same bytes decode to the same ops,
// predicted for those peers. With one peer the decoder reads no peer operand and the trace names no peer
// (interop_capsule_lifecycle's format is unchanged by the second peer); with several, every op a peer
// performs names it ("torch-from-capsule c0 -> a1").
//
// This decoder is a file format: tests/capsule/decoder_test.cc pins bytes to ops (CapsuleDecoderGolden).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
  kPeerFromTensor,    // a peer's from_dlpack(tensor) -> array slot (bool is refused by NumPy 1.24)
  kPeerFromCapsule,   // a peer's from_dlpack of a capsule -> array slot
  kViewBuffer,        // view.buffer() -> buffer slot: a second owner of the imported buffer
  kRead,              // read every element of a tensor, array or view (value oracle)
  kDrop,              // drop one slot's reference
  kMakeCycle,         // move a view into a self-referencing list: only the collector frees it
  kCollect,           // gc.collect()
  kMalformed,         // import a deliberately broken export of a tensor (refused, except null-deleter)
  kPeerFromArray,     // a peer's from_dlpack(array) of any peer's array, its own included (several peers only)
  kPeerMalformed,     // a peer's from_dlpack of a broken export of a tensor: the kinds a consumer can check
                      // (name, device, dtype) and a NULL deleter (several peers only)
  kMaxValue = kPeerMalformed,
};

// How a peer's array presents its values (peers whose rules have `flavors`: PyTorch's lazy views). The
// logical values are always the producer pattern; what differs is what sits in memory and what the
// tensor asks its consumers to do with it.
enum class Flavor : uint8_t {
  kPlain,
  kConj,          // a lazily conjugated complex view: memory holds the conjugates, the conjugate bit is set
  kNeg,           // a lazily negated view (torch._neg_view): memory holds the negatives, the negative bit set
  kRequiresGrad,  // a floating tensor that requires grad
  kMaxValue = kRequiresGrad,
};

// The keyword arguments an object's exports through __dlpack__ pass (the array API's
// `__dlpack__(*, stream, max_version, dl_device, copy)`): how the consumer that asks for them calls. NumPy 1.24,
// PyTorch 1.13 and this layer's producer take `stream` only, and each answers a stream other than None on a CPU
// array its own way (PeerRules::stream_refusal, int_streams_only).
enum class ExportArgs : uint8_t {
  kNone,           // __dlpack__()
  kStreamNone,     // stream=None
  kStreamNoSync,   // stream=-1: "no synchronization" (the specification's value for any device)
  kStreamOne,      // stream=1: CUDA's legacy default stream
  kStreamNotInt,   // stream="1": not an integer
  kMaxVersion,     // max_version=(1, 0): a consumer that takes DLManagedTensorVersioned
  kDlDevice,       // dl_device=(1, 0): the export asked for on kDLCPU device 0
  kCopy,           // copy=False
  kMaxValue = kCopy,
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
  uint8_t peer = 0;                 // kCreateArray, kPeerFrom*: the peer that acts (index into the peers)
  Flavor flavor = Flavor::kPlain;   // kCreateArray by a peer with flavors
  uint8_t via = 0;                  // kExportArray: 0 obj.__dlpack__(), 1 the peer's module function
  // kCreate*: the keyword arguments the object's exports through __dlpack__ pass (from the layout byte);
  // kExport*: the exported object's, which an export through the module function (via 1) does not pass.
  ExportArgs export_args = ExportArgs::kNone;
  const char* party = nullptr;      // the acting peer's name, set only in programs with several peers
  // The model's prediction: the Python exception type the op raises, or "" for success.
  std::string expect_error;
  // The state the model found the op's object in (the model's StateOf), for `lifeline coverage --states`.
  const char* state = nullptr;
};

using Program = std::vector<Op>;

// The layouts a layout byte without bit 7 names (format.cc): the four every party has made from the start.
inline constexpr uint32_t kClassicLayouts = (1u << (static_cast<int>(interop::kMaxClassicLayout) + 1)) - 1;

// What the lifetime model knows of a peer: which requests it refuses, and with which exception. Dtypes
// are sets of interop::DType bits (DTypeBit).
struct PeerRules {
  const char* name;                  // "numpy": names its ops in programs with several peers
  const char* object_name;           // how oracle messages name its objects: "NumPy array"
  uint32_t creates;                  // the dtypes its arrays are made in from a dtype byte without bit 7
  const char* export_refusal;        // the exception __dlpack__ raises when the peer cannot export
  uint32_t exports;                  // ... the dtypes it exports
  bool exports_read_only;            // ... whether it exports a read-only array
  bool imports_read_only;            // the arrays its from_dlpack makes are read-only
  const char* import_refusal;        // the exception its from_dlpack raises for a dtype it cannot take
  uint32_t imports;                  // ... the dtypes it takes
  const char* used_capsule_refusal;  // the exception its from_dlpack raises for a consumed capsule (or one
                                     // named otherwise than "dltensor")
  const char* device_refusal;        // ... for a device it does not import (kDLCUDA)
  bool read_only_arrays = true;      // it makes read-only arrays on request (the create op's flag)
  bool flavors = false;              // its arrays come in Flavors (PyTorch)
  int export_ways = 1;               // 2: a module function exports too (torch.utils.dlpack.to_dlpack)
  bool contiguous_copies = false;    // import_from(array, contiguous) asks it for array.contiguous()
  // Its from_dlpack reads DLTensor.byte_offset. False for PyTorch 1.13: the finding
  // torch-from-dlpack-byte-offset-ignored, whose guard (format.cc) hands such an import to the first peer.
  bool reads_byte_offset = true;
  // Refusing to export a dtype leaks the array (PyTorch 1.13: the finding
  // torch-dlpack-refused-export-leaks; its guard has the first peer make such arrays).
  bool leaks_refused_exports = false;
  // Its from_dlpack of an export with NULL data never runs the export's deleter (PyTorch 1.13: the
  // finding torch-from-dlpack-empty-leaks; its guard hands such an import to the first peer).
  bool leaks_empty_imports = false;
  // Its exports of arrays without elements carry DLTensor.data == NULL (PyTorch).
  bool exports_null_when_empty = false;
  // The layouts its arrays are made in (LayoutBit); the decoder makes the others contiguous.
  uint32_t layouts = kClassicLayouts;
  // Its from_dlpack takes an export with a negative stride (Content::negative_strides). False for PyTorch
  // 1.13: the finding torch-from-dlpack-negative-strides-abort, whose guard (format.cc) hands such an import
  // to the first peer.
  bool imports_negative_strides = true;
  // The dtypes its arrays are made in from a dtype byte with bit 7 set (format.cc PickDType): `creates` and the
  // wider ones it has (0: `creates` only).
  uint32_t creates_wide = 0;
  // What its __dlpack__ raises for a stream other than None on a CPU array, before any other refusal
  // (NumPy 1.24: RuntimeError); nullptr when it takes an integer stream there (PyTorch 1.13 ignores it).
  const char* stream_refusal = nullptr;
  // Its __dlpack__ raises TypeError for a stream that is not an integer, after refusing its flavors and
  // before its dtypes (PyTorch 1.13).
  bool int_streams_only = false;
  // What its from_dlpack raises for a dtype with lanes other than 1 (Malformed::kLanes).
  const char* lanes_refusal = nullptr;
};

constexpr uint32_t DTypeBit(interop::DType d) { return 1u << static_cast<int>(d); }
constexpr uint32_t LayoutBit(interop::Layout l) { return 1u << static_cast<int>(l); }
constexpr bool HasDType(uint32_t set, interop::DType d) { return (set & DTypeBit(d)) != 0; }
// Every dtype, and the seven the programs had before the wider ones (interop::kMaxClassicDType).
inline constexpr uint32_t kAllDTypes = (DTypeBit(interop::DType::kMaxValue) << 1) - 1;
inline constexpr uint32_t kClassicDTypes = (DTypeBit(interop::kMaxClassicDType) << 1) - 1;

using Peers = std::vector<const PeerRules*>;

Program Decode(const uint8_t* data, size_t size, const Peers& peers);
inline Program Decode(const uint8_t* data, size_t size, const PeerRules& peer) { return Decode(data, size, Peers{&peer}); }

// A program's id form, which the reducer edits (codec.h) and Encode takes: an op's `src` names the index of
// the op that made the object it reads instead of its slot, and `dst` is the op's own index, so deleting
// ops leaves the others meaning what they meant (a slot is the lowest free one of its kind, so slots move
// when earlier objects go).
Program ToIds(const Program& program);
// Whether two ops in id form are the same op: every operand the bytes decide, not the predictions.
bool SameOp(const Op& a, const Op& b);
// Encoding: the input whose decoding for `peers`, in id form, is `target`; throws programs::Unencodable
// naming the first op that cannot be written. The guards in force decide as they do when decoding.
std::vector<uint8_t> Encode(const Program& target, const Peers& peers);

// The slot kinds an op reads from and writes to (ops with one fixed kind of each).
SlotKind SourceKind(OpKind kind);
SlotKind DestKind(OpKind kind);
bool HasSource(OpKind kind);
bool HasDest(OpKind kind);

// The ops' names as traces and a program's JSON (codec.h) write them, in OpKind order (a peer's op is
// named "numpy-..." here; in programs with several peers a trace names the acting peer instead).
extern const char* const kOpNames[static_cast<int>(OpKind::kMaxValue) + 1];

// One line per op, e.g. `import-from-tensor t1 contiguous -> v0`.
std::string_view FlavorName(Flavor f);
// "", "stream=None", "stream=-1", "stream=1", "stream='1'", "max_version=(1, 0)", "dl_device=(1, 0)", "copy=False".
std::string_view ExportArgsName(ExportArgs a);
std::optional<ExportArgs> ExportArgsFromName(std::string_view name);
std::string Describe(const Op& op);
// "#i <op>" per op.
std::string Describe(const Program& program);

}  // namespace lifeline::capsule
