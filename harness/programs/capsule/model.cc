#include "harness/programs/capsule/model.h"

#include "core/check.h"

namespace lifeline::capsule {
namespace {

using interop::DType;
using interop::Layout;
using interop::Malformed;

constexpr int kSlotCounts[] = {kTensorSlots, kArraySlots, kCapsuleSlots, kViewSlots, kBufferSlots};

int SlotCount(SlotKind k) { return kSlotCounts[static_cast<int>(k)]; }

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return numel;
}

bool ProducerContiguous(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  return placed.ok() && placed->desc.contiguous() && placed->desc.offset == 0;
}

}  // namespace

int64_t StorageBytes(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  LIFELINE_PRECONDITION(placed.ok(), "the decoder made an invalid shape: " + placed.status().message());
  return placed->storage_elements * static_cast<int64_t>(interop::ItemSize(dtype));
}

Model::Model(const PeerRules& peer) : peer_(peer) {
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

int Model::AddArray(Content c, std::vector<int> refs, bool exportable) {
  Node n{NodeKind::kArray, c, std::move(refs)};
  n.array_id = next_array_id_++;
  n.exportable = exportable;
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

bool Model::PeerExports(DType dtype, bool readonly) const {
  return (dtype != DType::kBool || peer_.exports_bool) && (!readonly || peer_.exports_read_only);
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
    case OpKind::kNumpyFromTensor: return has(SlotKind::kTensor) && room(SlotKind::kArray);
    case OpKind::kNumpyFromCapsule: return has(SlotKind::kCapsule) && room(SlotKind::kArray);
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
  switch (op.kind) {
    case OpKind::kExportArray:
    case OpKind::kImportFromArray:  // import_from asks the array for __dlpack__ first
      return src(SlotKind::kArray).exportable ? "" : peer_.export_refusal;
    case OpKind::kImportCapsule: return src(SlotKind::kCapsule).consumed ? "BufferError" : "";
    case OpKind::kNumpyFromTensor:
      return src(SlotKind::kTensor).content.dtype == DType::kBool && !peer_.imports_bool ? peer_.import_refusal : "";
    case OpKind::kNumpyFromCapsule: {
      const Node& c = src(SlotKind::kCapsule);
      if (c.consumed) return peer_.used_capsule_refusal;
      return c.content.dtype == DType::kBool && !peer_.imports_bool ? peer_.import_refusal : "";
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
  if (!error.empty()) return;  // a refused request changes nothing
  auto src = [&](SlotKind k) { return Slot(k, op.src); };
  switch (op.kind) {
    case OpKind::kCreateTensor: {
      Content c{op.dtype, op.seed, Numel(op.shape)};
      int storage = AddStorage(StorageBytes(op.dtype, op.shape, op.layout), c);
      Node t{NodeKind::kTensor, c, {storage}};
      t.contiguous = ProducerContiguous(op.dtype, op.shape, op.layout);
      t.shape = op.shape;
      MutableSlot(SlotKind::kTensor, op.dst) = Add(std::move(t));
      break;
    }
    case OpKind::kCreateArray:
      MutableSlot(SlotKind::kArray, op.dst) =
          AddArray({op.dtype, op.seed, Numel(op.shape)}, {}, PeerExports(op.dtype, op.readonly));
      break;
    case OpKind::kExportTensor:
    case OpKind::kExportArray: {
      const Node& owner = nodes_[src(SourceKind(op.kind))];
      // A tensor's export holds its storage; an array's holds the array.
      int held = op.kind == OpKind::kExportTensor ? owner.refs[0] : src(SlotKind::kArray);
      int e = Add({NodeKind::kExport, owner.content, {held}});
      MutableSlot(SlotKind::kCapsule, op.dst) = Add({NodeKind::kCapsule, nodes_[e].content, {e}});
      break;
    }
    case OpKind::kImportCapsule: AddImport(Consume(src(SlotKind::kCapsule)), op.dst); break;
    case OpKind::kImportFromTensor: {
      const Node t = nodes_[src(SlotKind::kTensor)];
      int storage = t.refs[0];
      if (op.contiguous && !t.contiguous)  // a temporary copy that only the import keeps
        storage = AddStorage(StorageBytes(t.content.dtype, t.shape, Layout::kContiguous), t.content);
      AddImport(Add({NodeKind::kExport, t.content, {storage}}), op.dst);
      break;
    }
    case OpKind::kImportFromArray: {
      int a = src(SlotKind::kArray);
      AddImport(Add({NodeKind::kExport, nodes_[a].content, {a}}), op.dst);
      break;
    }
    case OpKind::kNumpyFromTensor: {
      const Node& t = nodes_[src(SlotKind::kTensor)];
      Content c = t.content;
      int e = Add({NodeKind::kExport, c, {t.refs[0]}});
      MutableSlot(SlotKind::kArray, op.dst) = AddArray(c, {e}, PeerExports(c.dtype, peer_.imports_read_only));
      break;
    }
    case OpKind::kNumpyFromCapsule: {
      const Content content = nodes_[src(SlotKind::kCapsule)].content;
      int target = Consume(src(SlotKind::kCapsule));
      MutableSlot(SlotKind::kArray, op.dst) =
          AddArray(content, {target}, PeerExports(content.dtype, peer_.imports_read_only));
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

std::vector<bool> Model::Alive() const {
  std::vector<bool> alive(nodes_.size(), false);
  std::vector<int> stack(cycles_.begin(), cycles_.end());
  stack.insert(stack.end(), parked_.begin(), parked_.end());
  for (const auto& row : slots_)
    for (int s : row)
      if (s >= 0) stack.push_back(s);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (alive[n]) continue;
    alive[n] = true;
    for (int r : nodes_[n].refs) stack.push_back(r);
  }
  return alive;
}

void Model::DropEverything() {
  for (auto& row : slots_)
    for (int& s : row) s = -1;
  cycles_.clear();
}

}  // namespace lifeline::capsule
