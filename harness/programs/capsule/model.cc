#include "harness/programs/capsule/model.h"

#include "core/check.h"

namespace lifeline::capsule {
namespace {

using interop::DType;
using interop::Layout;
using interop::Malformed;

constexpr int kSlotCounts[] = {kTensorSlots, kArraySlots, kCapsuleSlots, kViewSlots, kBufferSlots};

int SlotCount(SlotKind k) { return kSlotCounts[static_cast<int>(k)]; }

bool ProducerContiguous(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  return placed.ok() && placed->desc.contiguous() && placed->desc.offset == 0;
}

// What a tensor of `layout` holds (every party places its layouts as this layer's producer does; only this
// layer's producer exports an offset in DLTensor.byte_offset).
Content MadeContent(const Op& op) {
  auto placed = interop::PlaceTensor(op.dtype, op.shape, op.layout);
  LIFELINE_PRECONDITION(placed.ok(), "the decoder made an invalid shape: " + placed.status().message());
  const interop::TensorDesc& d = placed->desc;
  Content c{op.dtype, op.seed, d.numel()};
  // PyTorch's is_contiguous(): from the last axis, every extent above 1 has the C-order stride; no elements
  // is contiguous.
  int64_t expected = 1;
  for (int i = d.ndim - 1; i >= 0 && c.numel > 0; --i) {
    if (d.shape[i] == 1) continue;
    c.c_order &= d.strides[i] == expected;
    c.negative_strides |= d.strides[i] < 0;
    expected *= d.shape[i];
  }
  c.byte_offset = op.kind == OpKind::kCreateTensor && d.offset != 0;
  c.period = interop::PatternPeriod(d);
  return c;
}

}  // namespace

int64_t StorageBytes(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  LIFELINE_PRECONDITION(placed.ok(), "the decoder made an invalid shape: " + placed.status().message());
  return placed->storage_elements * static_cast<int64_t>(interop::ItemSize(dtype));
}

Model::Model(const Peers& peers) : peers_(peers) {
  for (auto& row : slots_)
    for (int& s : row) s = -1;
}

int Model::FreeSlot(SlotKind k) const {
  for (int i = 0; i < SlotCount(k); ++i)
    if (Slot(k, i) < 0) return i;
  return -1;
}

std::vector<int> Model::Filled(SlotKind k) const {
  std::vector<int> out;
  for (int i = 0; i < SlotCount(k); ++i)
    if (Slot(k, i) >= 0) out.push_back(i);
  return out;
}

int Model::Add(Node n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

int Model::AddStorage(int64_t bytes, Content c) {
  Node n{NodeKind::kStorage, c};
  n.storage_id = next_storage_id_++;
  n.bytes = bytes;
  return Add(std::move(n));
}

int Model::AddArray(int peer, Content c, std::vector<int> refs, bool readonly, Flavor flavor) {
  Node n{NodeKind::kArray, c, std::move(refs)};
  n.array_id = next_array_id_++;
  n.peer = peer;
  n.readonly = readonly;
  n.flavor = flavor;
  return Add(std::move(n));
}

void Model::AddImport(int target, int dst) {
  int buffer = Add({NodeKind::kBuffer, nodes_[target].content, {target}});
  MutableSlot(SlotKind::kView, dst) = Add({NodeKind::kView, nodes_[target].content, {buffer}});
}

int Model::Consume(int capsule) {
  Node& c = nodes_[capsule];
  c.consumed = true;
  int target = c.refs[0];
  c.refs.clear();
  return target;
}

namespace {

// What a __dlpack__ that takes `stream` only raises for `a` before anything else: TypeError for the keywords every
// party here predates (max_version, dl_device, copy), `stream_refusal` for a stream other than None (nullptr: it
// takes one), else nullptr.
const char* ArgumentRefusal(ExportArgs a, const char* stream_refusal) {
  if (a == ExportArgs::kMaxVersion || a == ExportArgs::kDlDevice || a == ExportArgs::kCopy) return "TypeError";
  const bool stream = a == ExportArgs::kStreamNoSync || a == ExportArgs::kStreamOne || a == ExportArgs::kStreamNotInt;
  return stream ? stream_refusal : nullptr;
}

}  // namespace

std::string Model::ExportRefusal(const Node& a, int via, ExportArgs args) const {
  const PeerRules& r = *peers_[a.peer];
  if (via == 0) {
    if (const char* refusal = ArgumentRefusal(args, r.stream_refusal)) return refusal;
  }
  // A conjugate view's memory holds the conjugates: exported as it is, a consumer reads wrong values. The
  // DLPack protocol has no conjugate bit, so a producer must resolve it or refuse (PyTorch's __dlpack__
  // refuses). Every way of exporting is held to that: a way that exports the raw memory is a finding.
  if (a.flavor == Flavor::kConj) return r.export_refusal;
  // The array API's __dlpack__ may refuse a tensor that requires grad (PyTorch's does); to_dlpack exports
  // its data, which is valid.
  if (a.flavor == Flavor::kRequiresGrad && via == 0) return r.export_refusal;
  if (via == 0 && args == ExportArgs::kStreamNotInt && r.int_streams_only) return "TypeError";
  if (!HasDType(r.exports, a.content.dtype) || (a.readonly && !r.exports_read_only)) return r.export_refusal;
  return "";
}

bool Model::CopiedForImport(const Node& a, bool contiguous) const {
  return contiguous && peers_[a.peer]->contiguous_copies && !a.content.c_order;
}

bool Model::AnyFilled(SlotKind k) const {
  for (int i = 0; i < SlotCount(k); ++i)
    if (Slot(k, i) >= 0) return true;
  return false;
}

bool Model::Legal(OpKind k) const {
  // Called for every kind before every op: no allocation here.
  auto has = [&](SlotKind s) { return AnyFilled(s); };
  auto room = [&](SlotKind s) { return FreeSlot(s) >= 0; };
  switch (k) {
    case OpKind::kCreateTensor: return room(SlotKind::kTensor);
    case OpKind::kCreateArray: return room(SlotKind::kArray);
    case OpKind::kExportTensor: return has(SlotKind::kTensor) && room(SlotKind::kCapsule);
    case OpKind::kExportArray: return has(SlotKind::kArray) && room(SlotKind::kCapsule);
    case OpKind::kImportCapsule: return has(SlotKind::kCapsule) && room(SlotKind::kView);
    case OpKind::kImportFromTensor:
    case OpKind::kMalformed: return has(SlotKind::kTensor) && room(SlotKind::kView);
    case OpKind::kImportFromArray: return has(SlotKind::kArray) && room(SlotKind::kView);
    case OpKind::kPeerFromTensor: return has(SlotKind::kTensor) && room(SlotKind::kArray);
    case OpKind::kPeerFromCapsule: return has(SlotKind::kCapsule) && room(SlotKind::kArray);
    case OpKind::kPeerFromArray: return peers_.size() > 1 && has(SlotKind::kArray) && room(SlotKind::kArray);
    case OpKind::kPeerMalformed: return peers_.size() > 1 && has(SlotKind::kTensor) && room(SlotKind::kArray);
    case OpKind::kViewBuffer: return has(SlotKind::kView) && room(SlotKind::kBuffer);
    case OpKind::kRead: return has(SlotKind::kTensor) || has(SlotKind::kArray) || has(SlotKind::kView);
    case OpKind::kDrop:
      for (int s = 0; s <= static_cast<int>(SlotKind::kMaxValue); ++s)
        if (has(static_cast<SlotKind>(s))) return true;
      return false;
    case OpKind::kMakeCycle: return has(SlotKind::kView);
    case OpKind::kCollect: return true;
  }
  return false;
}

std::string Model::Predict(const Op& op) const {
  auto src = [&](SlotKind k) -> const Node& { return nodes_[Slot(k, op.src)]; };
  // This layer's consumer reads its four dtypes only.
  auto subject_refusal = [](const Content& c) { return c.dtype > interop::kMaxStandinDType ? "BufferError" : ""; };
  const PeerRules& peer = *peers_[op.peer];
  auto peer_refusal = [&](const Content& c) { return HasDType(peer.imports, c.dtype) ? "" : peer.import_refusal; };
  switch (op.kind) {
    case OpKind::kExportArray: return ExportRefusal(src(SlotKind::kArray), op.via, op.export_args);
    case OpKind::kExportTensor: {  // this layer's producer: __dlpack__(*, stream) wants stream None on kDLCPU
      const char* refusal = ArgumentRefusal(op.export_args, "BufferError");
      return refusal ? refusal : "";
    }
    case OpKind::kImportFromArray: {  // import_from asks the array (or its contiguous copy) for __dlpack__ first
      Node exported = src(SlotKind::kArray);
      if (CopiedForImport(exported, op.contiguous) && exported.flavor != Flavor::kRequiresGrad)
        exported.flavor = Flavor::kPlain;  // the copy has the logical values in memory
      std::string refusal = ExportRefusal(exported, 0, ExportArgs::kNone);
      return refusal.empty() ? subject_refusal(exported.content) : refusal;
    }
    case OpKind::kImportCapsule: {
      const Node& c = src(SlotKind::kCapsule);
      return c.consumed ? "BufferError" : subject_refusal(c.content);
    }
    case OpKind::kPeerFromTensor: return peer_refusal(src(SlotKind::kTensor).content);
    case OpKind::kPeerFromCapsule: {
      const Node& c = src(SlotKind::kCapsule);
      return c.consumed ? peer.used_capsule_refusal : peer_refusal(c.content);
    }
    case OpKind::kPeerMalformed:
      switch (op.malformed) {
        case Malformed::kWrongName:
        case Malformed::kUsedName: return peer.used_capsule_refusal;
        case Malformed::kDevice: return peer.device_refusal;
        case Malformed::kDType: return peer.import_refusal;
        case Malformed::kNullDeleter: return peer_refusal(src(SlotKind::kTensor).content);
        case Malformed::kLanes: return peer.lanes_refusal;
        default: return "?";  // the decoder hands peers no other kind
      }
    case OpKind::kPeerFromArray: {  // from_dlpack asks the array for __dlpack__ first
      const Node& a = src(SlotKind::kArray);
      std::string refusal = ExportRefusal(a, 0, ExportArgs::kNone);
      return refusal.empty() ? peer_refusal(a.content) : refusal;
    }
    case OpKind::kMalformed: {
      const Node& t = src(SlotKind::kTensor);
      bool accepted = !interop::MustBeRefused(op.malformed) ||
                      (op.malformed == Malformed::kNullData && t.content.numel == 0) ||
                      (op.malformed == Malformed::kNullShape && t.shape.empty());
      return accepted ? "" : "BufferError";
    }
    default: return "";
  }
}

void Model::Apply(const Op& op, const std::string& error) {
  if (op.kind == OpKind::kPeerMalformed && op.malformed == Malformed::kNullDeleter && !error.empty()) {
    // The producer parks a NULL-deleter export when it makes it (nobody else could release it), so a
    // refused one stays alive until the ledger reset too.
    const Node& t = nodes_[Slot(SlotKind::kTensor, op.src)];
    parked_.push_back(Add({NodeKind::kExport, t.content, {t.refs[0]}}));
    return;
  }
  if (!error.empty()) return;  // a refused request changes nothing
  auto src = [&](SlotKind k) { return Slot(k, op.src); };
  switch (op.kind) {
    case OpKind::kCreateTensor: {
      Content c = MadeContent(op);
      int storage = AddStorage(StorageBytes(op.dtype, op.shape, op.layout), c);
      Node t{NodeKind::kTensor, c, {storage}};
      t.contiguous = ProducerContiguous(op.dtype, op.shape, op.layout);
      t.shape = op.shape;
      t.export_args = op.export_args;
      MutableSlot(SlotKind::kTensor, op.dst) = Add(std::move(t));
      break;
    }
    case OpKind::kCreateArray:
      MutableSlot(SlotKind::kArray, op.dst) = AddArray(op.peer, MadeContent(op), {}, op.readonly, op.flavor);
      nodes_.back().export_args = op.export_args;
      break;
    case OpKind::kExportTensor:
    case OpKind::kExportArray: {
      const Node& owner = nodes_[src(SourceKind(op.kind))];
      // A tensor's export holds its storage; an array's holds the array.
      int held = op.kind == OpKind::kExportTensor ? owner.refs[0] : src(SlotKind::kArray);
      int e = Add({NodeKind::kExport, op.kind == OpKind::kExportTensor ? owner.content : ExportedContent(owner), {held}});
      MutableSlot(SlotKind::kCapsule, op.dst) = Add({NodeKind::kCapsule, nodes_[e].content, {e}});
      break;
    }
    case OpKind::kImportCapsule: AddImport(Consume(src(SlotKind::kCapsule)), op.dst); break;
    case OpKind::kImportFromTensor: {
      const Node t = nodes_[src(SlotKind::kTensor)];
      int storage = t.refs[0];
      Content c = t.content;
      if (op.contiguous && !t.contiguous) {  // a temporary copy that only the import keeps
        c.c_order = true;
        c.byte_offset = c.negative_strides = false;
        storage = AddStorage(StorageBytes(c.dtype, t.shape, Layout::kContiguous), c);
      }
      AddImport(Add({NodeKind::kExport, c, {storage}}), op.dst);
      break;
    }
    case OpKind::kImportFromArray: {
      int a = src(SlotKind::kArray);
      Content c = nodes_[a].content;
      int held = a;
      if (CopiedForImport(nodes_[a], op.contiguous)) {  // a temporary copy that only the import keeps
        c.c_order = true;
        c.negative_strides = false;
        held = Add({NodeKind::kCopy, c});
      }
      AddImport(Add({NodeKind::kExport, c, {held}}), op.dst);
      break;
    }
    case OpKind::kPeerFromTensor: {
      const Node& t = nodes_[src(SlotKind::kTensor)];
      Content c = t.content;
      int e = Add({NodeKind::kExport, c, {t.refs[0]}});
      MutableSlot(SlotKind::kArray, op.dst) = AddImportedArray(op.peer, c, e);
      break;
    }
    case OpKind::kPeerFromCapsule: {
      const Content content = nodes_[src(SlotKind::kCapsule)].content;
      int target = Consume(src(SlotKind::kCapsule));
      MutableSlot(SlotKind::kArray, op.dst) = AddImportedArray(op.peer, content, target);
      break;
    }
    case OpKind::kPeerMalformed: {  // only the NULL-deleter export is accepted: parked until the ledger reset
      const Node& t = nodes_[src(SlotKind::kTensor)];
      int e = Add({NodeKind::kExport, t.content, {t.refs[0]}});
      parked_.push_back(e);
      MutableSlot(SlotKind::kArray, op.dst) = AddImportedArray(op.peer, nodes_[e].content, e);
      break;
    }
    case OpKind::kPeerFromArray: {
      int a = src(SlotKind::kArray);
      const Content c = ExportedContent(nodes_[a]);
      int e = Add({NodeKind::kExport, c, {a}});
      MutableSlot(SlotKind::kArray, op.dst) = AddImportedArray(op.peer, c, e);
      break;
    }
    case OpKind::kViewBuffer: {
      const Node& v = nodes_[src(SlotKind::kView)];
      MutableSlot(SlotKind::kBuffer, op.dst) = Add({NodeKind::kHandle, v.content, {v.refs[0]}});
      break;
    }
    case OpKind::kRead: break;
    case OpKind::kCollect: cycles_.clear(); break;
    case OpKind::kDrop: MutableSlot(op.slot_kind, op.src) = -1; break;
    case OpKind::kMakeCycle:
      cycles_.push_back(src(SlotKind::kView));
      MutableSlot(SlotKind::kView, op.src) = -1;
      break;
    case OpKind::kMalformed: {
      const Node& t = nodes_[src(SlotKind::kTensor)];
      int e = Add({NodeKind::kExport, t.content, {t.refs[0]}});
      if (op.malformed == Malformed::kNullDeleter) parked_.push_back(e);
      AddImport(e, op.dst);
      break;
    }
  }
}

std::vector<bool> Model::Reach(SlotKind kind, int skip) const {
  std::vector<bool> alive(nodes_.size(), false);
  std::vector<int> stack(cycles_.begin(), cycles_.end());
  stack.insert(stack.end(), parked_.begin(), parked_.end());
  for (int k = 0; k <= static_cast<int>(SlotKind::kMaxValue); ++k)
    for (int i = 0; i < kMaxSlots; ++i)
      if (slots_[k][i] >= 0 && !(k == static_cast<int>(kind) && i == skip)) stack.push_back(slots_[k][i]);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (alive[n]) continue;
    alive[n] = true;
    for (int r : nodes_[n].refs) stack.push_back(r);
  }
  return alive;
}

const char* Model::StateOf(const Op& op) const {
  if (op.kind == OpKind::kCollect) return cycles_.empty() ? "clean" : "garbage";
  SlotKind kind;
  if (op.kind == OpKind::kRead || op.kind == OpKind::kDrop) {
    kind = op.slot_kind;
  } else if (HasSource(op.kind)) {
    kind = SourceKind(op.kind);
  } else {
    return "-";
  }
  const int n = Slot(kind, op.src);
  if (n < 0) return "-";
  if (nodes_[n].kind == NodeKind::kCapsule && nodes_[n].consumed) return "consumed";
  const std::vector<bool> elsewhere = Reach(kind, op.src);
  if (elsewhere[n]) return "held";
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<int> stack(nodes_[n].refs.begin(), nodes_[n].refs.end());
  while (!stack.empty()) {
    const int m = stack.back();
    stack.pop_back();
    if (seen[m]) continue;
    seen[m] = true;
    if (elsewhere[m]) return "shared";
    for (int r : nodes_[m].refs) stack.push_back(r);
  }
  return "sole";
}

void Model::DropEverything() {
  for (auto& row : slots_)
    for (int& s : row) s = -1;
  cycles_.clear();
}

}  // namespace lifeline::capsule
