#include "layers/interop/dlpack_consumer.h"

#include <string>
#include <utility>

#include "core/bugs.h"
#include "core/check.h"
#include "layers/interop/python_runtime.h"

namespace lifeline::interop {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

ConsumerStats g_stats;

std::string DeviceName(DLDeviceType type) {
  switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLROCM: return "kDLROCM";
    default: return "device type";
  }
}

// The buffer's release callback: the DLPack deleter of the managed tensor it imported.
void CallDeleter(void* user) {
  auto* managed = static_cast<DLManagedTensor*>(user);
  ++g_stats.deleter_calls;
  if (managed->deleter) managed->deleter(managed);
}

}  // namespace

ImportedBuffer::ImportedBuffer(uint8_t* data, ReleaseFn release, void* user)
    : data_(data), release_(release), user_(user) {}

namespace {

// The reference counting of imported buffers and views: a count that is already zero means the object
// was freed, which the always-on check reports instead of reading freed memory any further.
void AddReference(int* refs, const char* what) {
  LIFELINE_CHECK(*refs > 0, std::string(what) + " retained after its release");
  ++*refs;
}

// True when the last reference went.
bool DropReference(int* refs, const char* what) {
  LIFELINE_CHECK(*refs > 0, std::string(what) + " released more often than retained");
  return --*refs == 0;
}

}  // namespace

ImportedBuffer* ImportedBuffer::Import(uint8_t* data, ReleaseFn release, void* user) {
  ++g_stats.buffers_live;
  return new ImportedBuffer(data, release, user);
}

void ImportedBuffer::Retain() { AddReference(&refs_, "imported buffer"); }

void ImportedBuffer::Release() {
  if (!DropReference(&refs_, "imported buffer")) return;
  --g_stats.buffers_live;
  ReleaseFn release = release_;
  void* user = user_;
  delete this;
  if (release) release(user);
}

BufferView::BufferView(ImportedBuffer* buffer, DType dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> strides, int64_t byte_offset)
    : buffer_(buffer), dtype_(dtype), shape_(std::move(shape)), strides_(std::move(strides)),
      byte_offset_(byte_offset) {}

BufferView* BufferView::Create(ImportedBuffer* buffer, DType dtype, std::vector<int64_t> shape,
                               std::vector<int64_t> strides, int64_t byte_offset) {
  buffer->Retain();
  ++g_stats.views_live;
  return new BufferView(buffer, dtype, std::move(shape), std::move(strides), byte_offset);
}

void BufferView::Retain() { AddReference(&refs_, "buffer view"); }

void BufferView::Release() {
  if (!DropReference(&refs_, "buffer view")) return;
  --g_stats.views_live;
  ImportedBuffer* buffer = buffer_;
  delete this;
  buffer->Release();
}

int64_t BufferView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

double BufferView::Element(int64_t index) const {
  int64_t off = 0;
  for (size_t i = shape_.size(); i-- > 0;) {
    off += (index % shape_[i]) * strides_[i];
    index /= shape_[i];
  }
  // injected-dlpack-byte-offset (not upstream; see harness/bugs.h) forgets DLTensor.byte_offset.
  const int64_t base = Reintroduced(Bug::kInjectedDlpackByteOffset) ? 0 : byte_offset_;
  return LoadElement(dtype_, buffer_->data() + base + off * static_cast<int64_t>(ItemSize(dtype_)));
}

Status ValidateManagedTensor(const DLManagedTensor* managed) {
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU)
    return InvalidArgument("unsupported device " + DeviceName(t.device.device_type) + " (" +
                           std::to_string(t.device.device_type) + "); only kDLCPU (1) is importable");
  if (t.ndim < 0 || t.ndim > kMaxImportNdim)
    return InvalidArgument("DLTensor.ndim is " + std::to_string(t.ndim) + "; expected 0.." +
                           std::to_string(kMaxImportNdim));
  auto dtype = FromDLDataType(t.dtype);
  if (!dtype || *dtype > kMaxStandinDType)
    return InvalidArgument("unsupported dtype (code " + std::to_string(t.dtype.code) + ", bits " +
                           std::to_string(t.dtype.bits) + ", lanes " + std::to_string(t.dtype.lanes) +
                           "); expected float32, float16, int8 or bool");
  if (t.ndim > 0 && t.shape == nullptr)
    return InvalidArgument("DLTensor.shape is NULL with ndim " + std::to_string(t.ndim));
  int64_t numel = 1;
  bool overflow = false;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0)
      return InvalidArgument("DLTensor.shape[" + std::to_string(i) + "] is " + std::to_string(t.shape[i]));
    overflow |= __builtin_mul_overflow(numel, t.shape[i], &numel);
  }
  int64_t bytes;
  if (overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(ItemSize(*dtype)), &bytes))
    return InvalidArgument("the byte size of the DLTensor's shape overflows int64");
  if (numel > 0 && t.data == nullptr)
    return InvalidArgument("DLTensor.data is NULL for a tensor of " + std::to_string(numel) + " elements");
  return Status::Ok();
}

BufferView* ImportCapsule(PyObject* capsule) {
  if (!PyCapsule_CheckExact(capsule)) {
    PyErr_Format(PyExc_TypeError, "import expects a DLPack capsule, got %s", Py_TYPE(capsule)->tp_name);
    return nullptr;
  }
  const char* name = PyCapsule_GetName(capsule);
  if (name && std::string(name) == kUsedCapsuleName) {
    PyErr_SetString(PyExc_BufferError,
                    "the DLPack capsule was already consumed (it is named \"used_dltensor\"); a capsule "
                    "can be imported once");
    return nullptr;
  }
  if (!name || std::string(name) != kCapsuleName) {
    PyErr_Format(PyExc_BufferError, "the capsule is named \"%s\", not \"dltensor\"", name ? name : "(NULL)");
    return nullptr;
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (!managed) return nullptr;
  if (Status s = ValidateManagedTensor(managed); !s.ok()) {
    PyErr_Format(PyExc_BufferError, "cannot import the DLPack capsule: %s", s.message().c_str());
    return nullptr;
  }
  const DLTensor& t = managed->dl_tensor;
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  std::vector<int64_t> strides(t.ndim);
  if (t.strides) {
    strides.assign(t.strides, t.strides + t.ndim);
  } else {  // NULL strides: compact C order
    int64_t s = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      strides[i] = s;
      s *= shape[i];
    }
  }
  // Ownership passes to the buffer: from here on the release callback is the only caller of the deleter.
  ImportedBuffer* buffer = ImportedBuffer::Import(static_cast<uint8_t*>(t.data), &CallDeleter, managed);
  if (PyCapsule_SetName(capsule, kUsedCapsuleName) != 0) {
    LIFELINE_CHECK(false, "renaming a valid DLPack capsule failed: " + py::TakeError());
  }
  BufferView* view = BufferView::Create(buffer, *FromDLDataType(t.dtype), std::move(shape),
                                        std::move(strides), static_cast<int64_t>(t.byte_offset));
  ++g_stats.imports;
  if (!Reintroduced(Bug::kIreeDlpackImportLeak)) {
    buffer->Release();  // fix (iree #20988): the view holds the buffer; drop the import reference
  }
  // else: iree #20849 — the binding released its import reference only on its failure paths, so the
  // buffer never reaches zero references and the producer's deleter never runs.
  return view;
}

BufferView* ImportFrom(PyObject* source, bool make_contiguous) {
  py::Ref tensor = py::Ref::Borrow(source);
  if (make_contiguous) {
    // torch's `.contiguous()`, NumPy's `ascontiguousarray`: the object itself when already contiguous,
    // otherwise a temporary that dies when this function returns.
    static PyObject* const ascontiguousarray = py::Attr("numpy", "ascontiguousarray").release();  // process lifetime
    tensor = PyObject_HasAttrString(source, "contiguous")
                 ? py::Ref::Steal(PyObject_CallMethod(source, "contiguous", nullptr))
                 : py::Ref::Steal(PyObject_CallFunctionObjArgs(ascontiguousarray, source, nullptr));
    if (!tensor) return nullptr;
  }
  py::Ref capsule = py::Ref::Steal(PyObject_CallMethod(tensor.get(), "__dlpack__", nullptr));
  if (!capsule) return nullptr;
  BufferView* view = ImportCapsule(capsule.get());
  if (view && Reintroduced(Bug::kTurbineCapsuleRenameBack)) {
    // The workaround of iree-turbine #522/#843 for the leak: hand the capsule back to its producer so the
    // producer's destructor calls the deleter when `capsule` dies at the end of this function — while
    // `view` still points into the memory.
    if (PyCapsule_SetName(capsule.get(), kCapsuleName) != 0) {
      view->Release();
      return nullptr;
    }
  }
  return view;
}

ConsumerStats GetConsumerStats() { return g_stats; }

void ResetConsumerCounters() {
  g_stats.imports = 0;
  g_stats.deleter_calls = 0;
}

}  // namespace lifeline::interop
