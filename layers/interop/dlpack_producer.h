// The DLPack producer of the interop layer, with the ledger that is the interop oracle.
//
// A producer tensor is a strided view (`TensorDesc`) of a refcounted `Storage`. Exporting it makes a
// `DLManagedTensor` that holds one storage reference, wrapped in a PyCapsule named "dltensor" whose
// destructor follows the Python DLPack specification: it calls the deleter only if the capsule still
// bears that name (nobody consumed it). The deleter drops the storage reference and "frees" the managed
// tensor.
//
// The ledger watches every export and every storage of this process:
//   * a deleter runs at most once per DLManagedTensor (a second call is a LIFELINE_CHECK failure that
//     names the export; the record stays addressable until `ResetProducerLedger()` so the second call
//     reaches the ledger instead of reading a recycled block);
//   * storage bytes are freed with free() when the last reference goes, so any later read of them is a
//     heap-use-after-free for ASan and an invalid read for memcheck;
//   * read-only storage is checksummed when sealed and verified when freed (DLPack 0.6 cannot tell a
//     consumer that memory is read-only, so a consumer that wrote into it is caught here);
//   * live storages, bytes and exports are counted, for the accounting oracle of the harness.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/interop/dlpack_types.h"

namespace lifeline::interop {

inline constexpr int kMaxProducerNdim = 4;
inline constexpr int64_t kMaxProducerElements = 1 << 16;

class Storage {
 public:
  // Zero-filled storage of `bytes` bytes (a zero-size storage still has a distinct, non-NULL data
  // pointer); one reference, owned by the caller.
  static Storage* Create(size_t bytes, bool read_only);
  void Retain();
  void Release();
  // Read-only storage: remember the bytes as they are now; `Release` of the last reference checks them.
  void Seal();

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  uint64_t id() const { return id_; }
  bool read_only() const { return read_only_; }
  int refs() const { return refs_; }

 private:
  Storage(uint8_t* data, size_t bytes, bool read_only, uint64_t id);
  uint8_t* data_;
  size_t bytes_;
  bool read_only_;
  uint64_t id_;
  int refs_ = 1;
  uint64_t checksum_ = 0;
};

// The logical tensor a producer exports: element strides (DLPack counts strides in elements) and an
// element offset into the storage.
struct TensorDesc {
  DType dtype = DType::kFloat32;
  int ndim = 0;
  int64_t shape[kMaxProducerNdim] = {};
  int64_t strides[kMaxProducerNdim] = {};
  int64_t offset = 0;
  // Exports carry DLTensor.strides == NULL (the strides above are then C order: Layout::kNullStrides).
  bool null_strides = false;

  int64_t numel() const;
  bool contiguous() const;  // C order, no holes (offset allowed)
  // Address of logical (C-order) element `index` inside `base`.
  int64_t ElementOffset(int64_t index) const;
};

// The descriptor of a `layout` tensor of `shape`, and the storage elements it needs. Bad shapes (ndim
// above kMaxProducerNdim, negative extents, more than kMaxProducerElements) are INVALID_ARGUMENT.
struct Placement {
  TensorDesc desc;
  int64_t storage_elements = 0;
};
StatusOr<Placement> PlaceTensor(DType dtype, const std::vector<int64_t>& shape, Layout layout);

// The pattern's period of a tensor placed as `desc`: 0 when logical element i holds pattern element i, or the
// elements of one row when axis 0 (of more than one row) has stride 0, whose rows are one memory and so hold
// pattern elements i modulo the period (Layout::kBroadcast).
int64_t PatternPeriod(const TensorDesc& desc);
// The pattern element logical element `index` holds, for a period as PatternPeriod returns.
inline uint64_t PatternIndex(int64_t period, int64_t index) {
  return static_cast<uint64_t>(period > 0 ? index % period : index);
}

// Writes PatternValue(dtype, seed, PatternIndex(PatternPeriod(desc), i)) at every logical element i.
void FillPattern(const TensorDesc& desc, uint8_t* base, uint32_t seed);

// Exports `desc` over `storage` (retained) as a new "dltensor" capsule; nullptr with a Python
// exception set if the capsule cannot be made (the export is then undone).
PyObject* ExportCapsule(Storage* storage, const TensorDesc& desc);

// Deliberately broken capsules for the consumer's bad-input paths. Each is a real export of `storage`
// (so the ledger sees it released, and "leaves nothing behind" is checkable) with one thing wrong.
enum class Malformed : uint8_t {
  kWrongName,     // named "not_dltensor"; its destructor releases it under that name
  kUsedName,      // already named "used_dltensor" when handed over; released by its own destructor
  kNullData,      // DLTensor.data is NULL with elements to read
  kNegativeNdim,  // ndim = -1
  kTooManyDims,   // ndim = 33
  kNullShape,     // shape = NULL with ndim > 0
  kNegativeDim,   // shape[0] = -5
  kOverflow,      // shape {2^40, 2^40}: the byte size overflows int64
  kDevice,        // device kDLCUDA
  kDType,         // an opaque-handle dtype with 7 bits
  kNullDeleter,   // valid per the spec: deleter NULL, memory kept alive by the producer until reset
  kLanes,         // valid per the spec, refused by every party here: the same bytes as a vector type, lanes 2
                  // of half the bits (float32 as float16x2, an 8-bit type as 4-bit x2)
  kMaxValue = kLanes,
};
std::string_view MalformedName(Malformed kind);
std::optional<Malformed> MalformedFromName(std::string_view name);
// True for the kinds a conforming consumer must refuse: all but kNullDeleter, and kLanes for a consumer without
// vector types (every party here).
bool MustBeRefused(Malformed kind);
PyObject* MalformedCapsule(Malformed kind, Storage* storage, const TensorDesc& desc);

struct ProducerStats {
  uint64_t storages_live = 0;
  uint64_t bytes_live = 0;
  uint64_t exports_live = 0;     // made, deleter not yet run (parked NULL-deleter exports included)
  uint64_t exports_made = 0;
  uint64_t deleter_calls = 0;
};
ProducerStats GetProducerStats();
// "storage #3 (96 B, 2 refs), storage #5 (0 B, 1 ref)" — for oracle messages.
std::string DescribeLiveStorages();
// True if `storage_id` is still alive.
bool StorageAlive(uint64_t storage_id);
// Ends an iteration: releases NULL-deleter exports parked until now (so nothing may still hold an import
// of one) and reclaims the records of
// released exports. Counters of live objects are unaffected otherwise; `exports_made` and
// `deleter_calls` restart from zero.
void ResetProducerLedger();

}  // namespace lifeline::interop
