#include "layers/interop/dlpack_producer.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "core/check.h"
#include "core/sanitizer.h"

namespace lifeline::interop {
namespace {

constexpr const char* kCapsuleName = "dltensor";        // DLPack: capsule names are static strings
constexpr const char* kUsedCapsuleName = "used_dltensor";
constexpr const char* kWrongCapsuleName = "not_dltensor";
constexpr size_t kMaxReleasedRecords = 1 << 14;  // reclaimed oldest-first beyond this between resets

constexpr std::string_view kMalformedNames[] = {
    "wrong-name", "used-name", "null-data", "negative-ndim", "too-many-dims", "null-shape",
    "negative-dim", "overflow", "device", "dtype", "null-deleter", "lanes"};

// One export. `managed` comes first so a DLManagedTensor* is the record's address.
struct ExportRecord {
  DLManagedTensor managed;
  int64_t shape[kMaxProducerNdim];
  int64_t strides[kMaxProducerNdim];
  Storage* storage;
  uint64_t id;
  bool released = false;
  bool parked = false;  // NULL deleter: released by ResetProducerLedger
};

struct Ledger {
  std::unordered_map<const DLManagedTensor*, ExportRecord*> records;
  std::deque<ExportRecord*> released;
  std::vector<ExportRecord*> parked;
  std::vector<Storage*> storages;  // live ones; keeps their bytes reachable for LeakSanitizer
  ProducerStats stats;
  uint64_t next_storage_id = 1;
  uint64_t next_export_id = 1;
};

Ledger& L() {
  static Ledger* ledger = new Ledger;  // never destroyed: capsules may die during interpreter teardown
  return *ledger;
}

uint64_t Checksum(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void Reclaim(ExportRecord* r) {
  L().records.erase(&r->managed);
  san::MarkAlive(r->shape, sizeof r->shape + sizeof r->strides, true);
  delete r;
}

void ReleaseRecord(ExportRecord* r) {
  Ledger& l = L();
  r->released = true;
  ++l.stats.deleter_calls;
  --l.stats.exports_live;
  Storage* s = r->storage;
  r->storage = nullptr;
  // The consumer copied shape and strides at import; reading them now is a finding.
  san::MarkDead(r->shape, sizeof r->shape + sizeof r->strides);
  l.released.push_back(r);
  while (l.released.size() > kMaxReleasedRecords) {
    Reclaim(l.released.front());
    l.released.pop_front();
  }
  s->Release();
}

// The deleter of every export: DLPack says it frees the managed tensor and what it holds.
void ProducerDeleter(DLManagedTensor* self) {
  Ledger& l = L();
  auto it = l.records.find(self);
  LIFELINE_CHECK(it != l.records.end(),
                 "DLPack ownership: a deleter was called with a DLManagedTensor this producer never made");
  ExportRecord* r = it->second;
  LIFELINE_CHECK(!r->released, "DLPack ownership: the deleter of export #" + std::to_string(r->id) +
                                   " ran a second time; exactly one party calls it, exactly once");
  ReleaseRecord(r);
}

ExportRecord* NewRecord(Storage* storage, const TensorDesc& desc) {
  Ledger& l = L();
  auto* r = new ExportRecord{};
  r->storage = storage;
  storage->Retain();
  r->id = l.next_export_id++;
  for (int i = 0; i < desc.ndim; ++i) {
    r->shape[i] = desc.shape[i];
    r->strides[i] = desc.strides[i];
  }
  DLTensor& t = r->managed.dl_tensor;
  t.data = storage->data();
  t.device = {kDLCPU, 0};
  t.ndim = desc.ndim;
  t.dtype = ToDLDataType(desc.dtype);
  t.shape = r->shape;
  t.strides = desc.null_strides ? nullptr : r->strides;
  t.byte_offset = static_cast<uint64_t>(desc.offset) * ItemSize(desc.dtype);
  r->managed.manager_ctx = r;
  r->managed.deleter = &ProducerDeleter;
  l.records.emplace(&r->managed, r);
  ++l.stats.exports_made;
  ++l.stats.exports_live;
  return r;
}

// Python DLPack specification: the producer's capsule destructor calls the deleter only if the capsule
// was never consumed, i.e. still bears its original name. Destructors may run with an exception set.
void CallDeleterIfNamed(PyObject* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name)) return;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, name));
  if (managed && managed->deleter) managed->deleter(managed);
  PyErr_Restore(type, value, trace);
}

void ProducerCapsuleDestructor(PyObject* capsule) { CallDeleterIfNamed(capsule, kCapsuleName); }

// The malformed capsules that start under another name release themselves under that name (kept in the
// capsule's context); once a consumer renamed one to "used_dltensor", they do nothing.
void OwnNameCapsuleDestructor(PyObject* capsule) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  const char* own = static_cast<const char*>(PyCapsule_GetContext(capsule));
  PyErr_Clear();
  PyErr_Restore(type, value, trace);
  if (own) CallDeleterIfNamed(capsule, own);
}

}  // namespace

Storage::Storage(uint8_t* data, size_t bytes, bool read_only, uint64_t id)
    : data_(data), bytes_(bytes), read_only_(read_only), id_(id) {}

Storage* Storage::Create(size_t bytes, bool read_only) {
  Ledger& l = L();
  auto* data = static_cast<uint8_t*>(std::calloc(bytes ? bytes : 1, 1));
  LIFELINE_CHECK(data != nullptr, "out of memory for " + std::to_string(bytes) + " storage bytes");
  auto* s = new Storage(data, bytes, read_only, l.next_storage_id++);
  l.storages.push_back(s);
  ++l.stats.storages_live;
  l.stats.bytes_live += bytes;
  return s;
}

void Storage::Retain() {
  LIFELINE_CHECK(refs_ > 0, "storage #" + std::to_string(id_) + " retained after it was freed");
  ++refs_;
}

void Storage::Seal() { checksum_ = Checksum(data_, bytes_); }

void Storage::Release() {
  LIFELINE_CHECK(refs_ > 0, "storage #" + std::to_string(id_) + " released after it was freed");
  if (--refs_ > 0) return;
  LIFELINE_CHECK(!read_only_ || Checksum(data_, bytes_) == checksum_,
                 "read-only storage #" + std::to_string(id_) + " was written through an export");
  Ledger& l = L();
  for (auto& s : l.storages)
    if (s == this) {
      s = l.storages.back();
      l.storages.pop_back();
      break;
    }
  --l.stats.storages_live;
  l.stats.bytes_live -= bytes_;
  std::free(data_);  // later reads: heap-use-after-free
  delete this;
}

int64_t TensorDesc::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

bool TensorDesc::contiguous() const {
  int64_t expect = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

int64_t TensorDesc::ElementOffset(int64_t index) const {
  int64_t off = offset;
  for (int i = ndim - 1; i >= 0; --i) {
    off += (index % shape[i]) * strides[i];
    index /= shape[i];
  }
  return off;
}

StatusOr<Placement> PlaceTensor(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  if (shape.size() > static_cast<size_t>(kMaxProducerNdim))
    return InvalidArgument("ndim " + std::to_string(shape.size()) + " is above the producer's limit of " +
                           std::to_string(kMaxProducerNdim));
  Placement p;
  TensorDesc& d = p.desc;
  d.dtype = dtype;
  d.ndim = static_cast<int>(shape.size());
  int64_t numel = 1;
  for (int i = 0; i < d.ndim; ++i) {
    if (shape[i] < 0) return InvalidArgument("shape[" + std::to_string(i) + "] is negative");
    if (shape[i] > kMaxProducerElements || numel * shape[i] > kMaxProducerElements)
      return InvalidArgument("more than " + std::to_string(kMaxProducerElements) + " elements");
    d.shape[i] = shape[i];
    numel *= shape[i];
  }
  // Strides over an "outer" shape whose last axis is doubled for kStrided.
  const int64_t widen = layout == Layout::kStrided ? 2 : 1;
  int64_t stride = 1;
  if (layout == Layout::kTransposed) {
    for (int i = 0; i < d.ndim; ++i) {
      d.strides[i] = stride;
      stride *= d.shape[i];
    }
  } else {
    for (int i = d.ndim - 1; i >= 0; --i) {
      // kBroadcast: axis 0 takes no memory (one row, seen shape[0] times).
      if (i == 0 && layout == Layout::kBroadcast) {
        d.strides[0] = 0;
        break;
      }
      // kUnitStrides: an axis of extent 1 steps by nothing, so its stride is free; the others are C order.
      if (layout == Layout::kUnitStrides && d.shape[i] == 1) {
        d.strides[i] = i % 2 == 0 ? 0 : kUnitStride;
        continue;
      }
      d.strides[i] = stride * (i == d.ndim - 1 ? widen : 1);
      stride *= d.shape[i] * (i == d.ndim - 1 ? widen : 1);
    }
  }
  d.offset = layout == Layout::kOffset ? kOffsetElements : 0;
  // kReversed: each row's element 0 is the last of its memory, so the tensor starts last-extent - 1 elements in.
  if (layout == Layout::kReversed && d.ndim > 0) {
    d.strides[d.ndim - 1] = -1;
    d.offset = d.shape[d.ndim - 1] > 0 ? d.shape[d.ndim - 1] - 1 : 0;
  }
  // kReversedAll: the C-order strides negated, so logical element 0 is the storage's last.
  if (layout == Layout::kReversedAll) {
    for (int i = 0; i < d.ndim; ++i) d.strides[i] = -d.strides[i];
    d.offset = numel > 0 ? numel - 1 : 0;
  }
  d.null_strides = layout == Layout::kNullStrides;
  const bool reversed = layout == Layout::kReversed || layout == Layout::kReversedAll;
  p.storage_elements = numel == 0 ? 0 : (reversed ? numel : d.offset + stride);
  return p;
}

int64_t PatternPeriod(const TensorDesc& desc) {
  if (desc.ndim == 0 || desc.strides[0] != 0 || desc.shape[0] < 2) return 0;
  return desc.numel() / desc.shape[0];
}

void FillPattern(const TensorDesc& desc, uint8_t* base, uint32_t seed) {
  const size_t item = ItemSize(desc.dtype);
  const int64_t n = desc.numel();
  const int64_t period = PatternPeriod(desc);
  for (int64_t i = 0; i < n; ++i)
    StoreElement(desc.dtype, base + desc.ElementOffset(i) * static_cast<int64_t>(item),
                 PatternValue(desc.dtype, seed, PatternIndex(period, i)));
}

PyObject* ExportCapsule(Storage* storage, const TensorDesc& desc) {
  ExportRecord* r = NewRecord(storage, desc);
  PyObject* capsule = PyCapsule_New(&r->managed, kCapsuleName, &ProducerCapsuleDestructor);
  if (!capsule) ProducerDeleter(&r->managed);
  return capsule;
}

std::string_view MalformedName(Malformed kind) { return kMalformedNames[static_cast<int>(kind)]; }

std::optional<Malformed> MalformedFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(Malformed::kMaxValue); ++i)
    if (kMalformedNames[i] == name) return static_cast<Malformed>(i);
  return std::nullopt;
}

bool MustBeRefused(Malformed kind) { return kind != Malformed::kNullDeleter; }

PyObject* MalformedCapsule(Malformed kind, Storage* storage, const TensorDesc& desc) {
  ExportRecord* r = NewRecord(storage, desc);
  DLTensor& t = r->managed.dl_tensor;
  const char* name = kCapsuleName;
  switch (kind) {
    case Malformed::kWrongName: name = kWrongCapsuleName; break;
    case Malformed::kUsedName: name = kUsedCapsuleName; break;
    case Malformed::kNullData: t.data = nullptr; break;
    case Malformed::kNegativeNdim: t.ndim = -1; break;
    case Malformed::kTooManyDims: t.ndim = 33; break;
    case Malformed::kNullShape: t.shape = nullptr; break;
    case Malformed::kNegativeDim: r->shape[0] = -5; break;
    case Malformed::kOverflow:
      r->shape[0] = r->shape[1] = int64_t{1} << 40;
      break;
    case Malformed::kDevice: t.device = {kDLCUDA, 0}; break;
    case Malformed::kDType: t.dtype = {kDLOpaqueHandle, 7, 1}; break;
    case Malformed::kLanes:
      t.dtype.bits = static_cast<uint8_t>(t.dtype.bits / 2);
      t.dtype.lanes = 2;
      break;
    case Malformed::kNullDeleter:
      r->managed.deleter = nullptr;
      r->parked = true;
      L().parked.push_back(r);
      break;
  }
  PyObject* capsule = name == kCapsuleName
                          ? PyCapsule_New(&r->managed, name, &ProducerCapsuleDestructor)
                          : PyCapsule_New(&r->managed, name, &OwnNameCapsuleDestructor);
  if (capsule && name != kCapsuleName && PyCapsule_SetContext(capsule, const_cast<char*>(name)) != 0) {
    Py_CLEAR(capsule);
  }
  if (!capsule && !r->parked) ProducerDeleter(&r->managed);
  return capsule;
}

ProducerStats GetProducerStats() { return L().stats; }

std::string DescribeLiveStorages() {
  std::string out;
  for (const Storage* s : L().storages) {
    if (!out.empty()) out += ", ";
    out += "storage #" + std::to_string(s->id()) + " (" + std::to_string(s->bytes()) + " B, " +
           std::to_string(s->refs()) + (s->refs() == 1 ? " ref)" : " refs)");
  }
  return out.empty() ? "none" : out;
}

bool StorageAlive(uint64_t storage_id) {
  for (const Storage* s : L().storages)
    if (s->id() == storage_id) return true;
  return false;
}

void ResetProducerLedger() {
  Ledger& l = L();
  std::vector<ExportRecord*> parked;
  parked.swap(l.parked);
  for (ExportRecord* r : parked) ReleaseRecord(r);  // counts as the release the NULL deleter could not do
  for (ExportRecord* r : l.released) Reclaim(r);
  l.released.clear();
  l.stats.exports_made = 0;
  l.stats.deleter_calls = 0;
  l.next_export_id = 1;
  if (l.storages.empty()) l.next_storage_id = 1;
}

}  // namespace lifeline::interop
