// The capsule programs' lifetime model. It knows who holds whom — a tensor its storage, an unconsumed
// capsule its export, an imported buffer the export it took over, a view its buffer, a peer array the
// export or memory under it — and so, after every op, what must still be alive: whatever is reachable
// from the program's slots, its garbage cycles (until the collector runs) and the exports parked by a
// NULL-deleter capsule. It also predicts which requests the parties refuse (the subject's rules are this
// layer's; the peer's come as PeerRules).
//
// The decoder (format.cc) asks it what is legal, predicts each op's exception and applies it; the
// executor applies each op with the outcome it checked and compares what is alive with Alive().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/programs/capsule/format.h"

namespace lifeline::capsule {

// What a producer wrote: element i of anything that shows these values is PatternValue(dtype, seed,
// interop::PatternIndex(period, i)).
struct Content {
  interop::DType dtype = interop::DType::kFloat32;
  uint32_t seed = 0;
  int64_t numel = 0;
  // Its strides are C order for every extent above 1, or it has no elements: PyTorch's is_contiguous(),
  // which ignores a storage offset (this layer's producer also wants no offset: Node::contiguous).
  bool c_order = true;
  // Its exports carry a nonzero DLTensor.byte_offset: this layer's producer's offset layout (NumPy and
  // PyTorch fold an offset into DLTensor.data instead).
  bool byte_offset = false;
  // Its exports carry DLTensor.data == NULL: PyTorch exports every tensor without elements so
  // (its data_ptr() is NULL then).
  bool null_data = false;
  // 0, or the elements of one row of a broadcast (its rows share one memory: interop::PatternPeriod).
  int64_t period = 0;
  // Its exports carry a negative stride on an axis of more than one element, and it has elements: the
  // reversed layout, and whatever imported it without a copy.
  bool negative_strides = false;
};

// kCopy: a peer's temporary copy made inside an import (import_from(array, contiguous)), held only by the
// export; unobserved (no slot, no ledger, no weak reference) but kept in the graph for what it holds.
enum class NodeKind : uint8_t { kStorage, kTensor, kExport, kArray, kCapsule, kBuffer, kHandle, kView, kCopy };

struct Node {
  NodeKind kind;
  Content content;
  std::vector<int> refs;      // what this node keeps alive
  uint64_t storage_id = 0;    // kStorage: the subject's ledger id
  int64_t bytes = 0;          // kStorage
  int array_id = -1;          // kArray: the executor's weak reference to it, by creation order
  bool contiguous = false;    // kTensor: contiguous() returns the tensor itself
  std::vector<int64_t> shape; // kTensor
  int peer = 0;               // kArray: the peer it belongs to
  bool readonly = false;      // kArray
  Flavor flavor = Flavor::kPlain;  // kArray
  bool consumed = false;      // kCapsule
  ExportArgs export_args = ExportArgs::kNone;  // kTensor, kArray: what its exports through __dlpack__ pass
};

class Model {
 public:
  explicit Model(const Peers& peers);

  // The node in `kind`'s slot `i`, or -1.
  int Slot(SlotKind kind, int i) const { return slots_[static_cast<int>(kind)][i]; }
  int FreeSlot(SlotKind kind) const;
  std::vector<int> Filled(SlotKind kind) const;
  bool AnyFilled(SlotKind kind) const;
  const Node& node(int n) const { return nodes_[n]; }
  size_t size() const { return nodes_.size(); }
  bool Legal(OpKind kind) const;
  // What an export of array node `a` carries.
  Content ExportedContent(const Node& a) const {
    Content c = a.content;
    c.null_data = peers_[a.peer]->exports_null_when_empty && c.numel == 0;
    return c;
  }

  // The state of the object `op` (operands decoded) acts on, before it acts, as `lifeline coverage --states`
  // counts them (states.txt beside this file):
  //   consumed      a capsule a consumer took over (it holds nothing)
  //   held          something other than this slot keeps the object alive: an export of it, a view, another
  //                 slot, a garbage cycle
  //   shared        nothing else holds the object, but what it holds is held from elsewhere too (a view
  //                 whose tensor is still in its slot, a capsule whose tensor is)
  //   sole          the object is the only way to what it holds (a view of a dropped tensor, a fresh tensor)
  //   garbage, clean  a collect with garbage cycles waiting, or none
  //   -             ops on no object (the creates)
  const char* StateOf(const Op& op) const;
  // The exception `op` (operands decoded) must raise now, or "".
  std::string Predict(const Op& op) const;
  // Applies `op`, which raised `error` ("" when it succeeded: only then does anything change).
  void Apply(const Op& op, const std::string& error);
  // Reachable from the slots, the garbage cycles and the parked exports.
  std::vector<bool> Alive() const { return Reach(SlotKind::kTensor, -1); }
  // Teardown: the program drops every slot and runs the collector; then the ledger reset releases the
  // exports NULL-deleter capsules parked.
  void DropEverything();
  void ReleaseParked() { parked_.clear(); }

 private:
  // Alive(), leaving out slot `skip` of `kind` as a root (-1: none).
  std::vector<bool> Reach(SlotKind kind, int skip) const;
  int Add(Node n);
  int AddStorage(int64_t bytes, Content c);
  // A peer's array: made by it (readonly, flavor as asked) or imported (its rules say if read-only).
  int AddArray(int peer, Content c, std::vector<int> refs, bool readonly, Flavor flavor);
  int AddImportedArray(int peer, Content c, int held) {
    // NumPy makes a writable array of its own for NULL data (nothing to protect).
    const bool readonly = peers_[peer]->imports_read_only && !c.null_data;
    c.byte_offset = false;  // a peer's own exports fold the offset into the data pointer
    c.null_data = false;    // ... and its own rules say when they are NULL (ExportedContent)
    return AddArray(peer, c, {held}, readonly, Flavor::kPlain);
  }
  // The exception array node `a`'s own peer raises when asked to export it (`via` as in Op; through __dlpack__
  // with `args`), or "".
  std::string ExportRefusal(const Node& a, int via, ExportArgs args) const;
  // What import_from(array, contiguous) exports: the array itself, or the peer's contiguous copy of it.
  bool CopiedForImport(const Node& a, bool contiguous) const;
  // A consumer takes over capsule node `capsule`: it is consumed and holds nothing; returns the export
  // it held.
  int Consume(int capsule);
  // An import: buffer -> `target` export, view -> buffer, into view slot `dst`.
  void AddImport(int target, int dst);
  int& MutableSlot(SlotKind kind, int i) { return slots_[static_cast<int>(kind)][i]; }

  const Peers peers_;
  std::vector<Node> nodes_;
  int slots_[static_cast<int>(SlotKind::kMaxValue) + 1][kMaxSlots];
  std::vector<int> cycles_;  // views held only by garbage cycles
  std::vector<int> parked_;  // NULL-deleter exports: alive until the ledger is reset
  uint64_t next_storage_id_ = 1;
  int next_array_id_ = 0;
};

// The bytes of the storage a tensor of `dtype`, `shape` and `layout` gets from this layer's producer.
int64_t StorageBytes(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout);

}  // namespace lifeline::capsule
