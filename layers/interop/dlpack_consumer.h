// The DLPack consumer of the interop layer, in the shape of IREE's runtime import
// (iree/runtime bindings, `iree_hal_allocator_import_buffer` + `iree_hal_buffer_view_create`):
//
//   1. read the "dltensor" capsule and check the DLManagedTensor (bad input is a BufferError that names
//      what is wrong, and the capsule is left untouched so its own destructor still releases it);
//   2. import the memory as an `ImportedBuffer` whose release callback calls the DLPack deleter — the
//      import holds one reference;
//   3. rename the capsule "used_dltensor": ownership has passed to the buffer;
//   4. create a `BufferView` (shape, strides, dtype), which retains the buffer;
//   5. drop the import reference, so the view is the only owner and the deleter runs when the last
//      view or buffer handle goes (iree #20988).
//
// The documented bugs of this path (repro/iree-dlpack-import-leak/, repro/turbine-capsule-rename-back/)
// sit beside their fixes:
//   iree-dlpack-import-leak       step 5 only on failure: the buffer never reaches zero references, the
//                                 deleter never runs, the producer's bytes stay held (iree #20849).
//   turbine-capsule-rename-back   `ImportFrom` (the Python-side wrapper) renames the consumed capsule back
//                                 to "dltensor" so the producer's destructor calls the deleter too
//                                 (iree-turbine #522/#843, reverted by #887/#893): a premature free while
//                                 the view still reads the memory, and with the fix in place a second
//                                 deleter call.
#pragma once

#include <Python.h>
#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/interop/dlpack_types.h"

namespace lifeline::interop {

inline constexpr int kMaxImportNdim = 32;

// Imported memory with a release callback, refcounted. The callback runs once, when the last reference
// goes.
class ImportedBuffer {
 public:
  using ReleaseFn = void (*)(void* user);
  static ImportedBuffer* Import(uint8_t* data, ReleaseFn release, void* user);
  void Retain();
  void Release();
  uint8_t* data() const { return data_; }

 private:
  ImportedBuffer(uint8_t* data, ReleaseFn release, void* user);
  uint8_t* data_;
  ReleaseFn release_;
  void* user_;
  int refs_ = 1;
};

// A typed, shaped view of an imported buffer; holds one buffer reference.
class BufferView {
 public:
  static BufferView* Create(ImportedBuffer* buffer, DType dtype, std::vector<int64_t> shape,
                            std::vector<int64_t> strides, int64_t byte_offset);
  void Retain();
  void Release();

  ImportedBuffer* buffer() const { return buffer_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  // Logical (C-order) element `index` read through the buffer's memory.
  double Element(int64_t index) const;

 private:
  BufferView(ImportedBuffer* buffer, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides,
             int64_t byte_offset);
  ImportedBuffer* buffer_;
  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;  // elements
  int64_t byte_offset_;
  int refs_ = 1;
};

// Checks a DLManagedTensor the way the importer does; the message names the first thing wrong.
Status ValidateManagedTensor(const DLManagedTensor* managed);

// Steps 1-5 above. Returns a new view (one reference, the caller's) or nullptr with a Python exception
// set: TypeError for something that is not a capsule, BufferError for a capsule that cannot be
// imported (consumed already, wrong name, malformed tensor).
BufferView* ImportCapsule(PyObject* capsule);

// The Python-side import wrapper (iree-turbine's `from_dlpack`-style helper): obtains a capsule from
// `source.__dlpack__()` — from `source.contiguous()` first when `make_contiguous` and the source is not
// contiguous (a temporary that lives only inside this call) — and imports it. NumPy arrays and this
// layer's tensors both work. Returns a new view or nullptr with a Python exception set.
BufferView* ImportFrom(PyObject* source, bool make_contiguous);

struct ConsumerStats {
  uint64_t buffers_live = 0;
  uint64_t views_live = 0;
  uint64_t imports = 0;          // successful imports
  uint64_t deleter_calls = 0;    // deleters called by release callbacks (any producer's)
};
ConsumerStats GetConsumerStats();
void ResetConsumerCounters();  // zeroes `imports` and `deleter_calls`; live counts are kept

}  // namespace lifeline::interop
