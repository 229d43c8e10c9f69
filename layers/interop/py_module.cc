#include "layers/interop/py_module.h"

#include <structmember.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/dlpack_producer.h"
#include "layers/interop/python_runtime.h"

namespace lifeline::py {
namespace {

using interop::BufferView;
using interop::DType;
using interop::ImportedBuffer;
using interop::Layout;
using interop::Storage;
using interop::TensorDesc;

PyTypeObject* g_tensor_type = nullptr;
PyTypeObject* g_view_type = nullptr;
PyTypeObject* g_buffer_type = nullptr;
PyTypeObject* g_holder_type = nullptr;

// ---- Tensor (producer) ---------------------------------------------------------------------------

struct TensorObject {
  PyObject_HEAD
  Storage* storage;
  TensorDesc desc;
  Layout layout;
};

PyObject* ShapeTuple(const int64_t* shape, int ndim) {
  PyObject* t = PyTuple_New(ndim);
  for (int i = 0; t && i < ndim; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(shape[i]));
  return t;
}

// Builds a list of the `n` elements `at(i)` returns, as Python bool, int or float by dtype.
template <typename At>
PyObject* ValuesList(DType dtype, int64_t n, At at) {
  PyObject* list = PyList_New(n);
  for (int64_t i = 0; list && i < n; ++i) {
    double v = at(i);
    PyObject* item = dtype == DType::kBool              ? PyBool_FromLong(v != 0)
                     : interop::IsInteger(dtype)          ? PyLong_FromLong(static_cast<long>(v))
                                                          : PyFloat_FromDouble(v);
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

// A layout by name, or nullopt with ValueError set.
std::optional<Layout> ParseLayout(const char* name) {
  auto layout = interop::LayoutFromName(name);
  if (!layout) {
    std::string names;
    for (int i = 0; i <= static_cast<int>(Layout::kMaxValue); ++i)
      names += (i ? ", " : "") + std::string(interop::LayoutName(static_cast<Layout>(i)));
    PyErr_Format(PyExc_ValueError, "unknown layout '%s' (%s)", name, names.c_str());
  }
  return layout;
}

// A shape from a sequence of ints; false with the exception set.
bool ParseShape(PyObject* obj, std::vector<int64_t>* shape) {
  Ref seq = Ref::Steal(PySequence_Fast(obj, "shape must be a sequence of ints"));
  if (!seq) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i) {
    long long d = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.get(), i));
    if (d == -1 && PyErr_Occurred()) return false;
    shape->push_back(d);
  }
  return true;
}

PyObject* NewTensorObject(Storage* storage, const TensorDesc& desc, Layout layout) {
  auto* self = PyObject_New(TensorObject, g_tensor_type);
  if (!self) {
    storage->Release();
    return nullptr;
  }
  self->storage = storage;
  self->desc = desc;
  self->layout = layout;
  return reinterpret_cast<PyObject*>(self);
}

PyObject* TensorNew(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"dtype", "shape", "layout", "seed", "readonly", nullptr};
  const char* dtype_name = nullptr;
  PyObject* shape_obj = nullptr;
  const char* layout_name = "contiguous";
  unsigned int seed = 0;
  int readonly = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|sIp", const_cast<char**>(kwlist), &dtype_name, &shape_obj,
                                   &layout_name, &seed, &readonly))
    return nullptr;
  auto dtype = interop::DTypeFromName(dtype_name);
  if (!dtype || *dtype > interop::kMaxStandinDType)
    return PyErr_Format(PyExc_ValueError, "unknown dtype '%s' (float32, float16, int8, bool)", dtype_name);
  auto layout = ParseLayout(layout_name);
  if (!layout) return nullptr;
  std::vector<int64_t> shape;
  if (!ParseShape(shape_obj, &shape)) return nullptr;
  auto placed = interop::PlaceTensor(*dtype, shape, *layout);
  if (!placed.ok()) return PyErr_Format(PyExc_ValueError, "Tensor: %s", placed.status().message().c_str());
  Storage* storage = Storage::Create(static_cast<size_t>(placed->storage_elements) * interop::ItemSize(*dtype),
                                     readonly != 0);
  interop::FillPattern(placed->desc, storage->data(), seed);
  if (readonly) storage->Seal();
  return NewTensorObject(storage, placed->desc, *layout);
}

void TensorDealloc(PyObject* obj) {
  auto* self = reinterpret_cast<TensorObject*>(obj);
  PyTypeObject* type = Py_TYPE(obj);
  self->storage->Release();
  PyObject_Free(obj);
  Py_DECREF(type);
}

PyObject* TensorDlpack(PyObject* obj, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"stream", nullptr};
  PyObject* stream = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O", const_cast<char**>(kwlist), &stream)) return nullptr;
  if (stream != Py_None)
    return PyErr_Format(PyExc_BufferError, "stream must be None for a kDLCPU tensor");
  auto* self = reinterpret_cast<TensorObject*>(obj);
  return interop::ExportCapsule(self->storage, self->desc);
}

PyObject* DeviceTuple(PyObject*, PyObject*) { return Py_BuildValue("(ii)", static_cast<int>(kDLCPU), 0); }

PyObject* TensorValues(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<TensorObject*>(obj);
  const int64_t item = static_cast<int64_t>(interop::ItemSize(self->desc.dtype));
  return ValuesList(self->desc.dtype, self->desc.numel(), [&](int64_t i) {
    return interop::LoadElement(self->desc.dtype, self->storage->data() + self->desc.ElementOffset(i) * item);
  });
}

PyObject* TensorContiguous(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<TensorObject*>(obj);
  if (self->desc.contiguous() && self->desc.offset == 0) return Py_NewRef(obj);
  std::vector<int64_t> shape(self->desc.shape, self->desc.shape + self->desc.ndim);
  auto placed = interop::PlaceTensor(self->desc.dtype, shape, Layout::kContiguous);
  if (!placed.ok()) return PyErr_Format(PyExc_ValueError, "%s", placed.status().message().c_str());
  const size_t item = interop::ItemSize(self->desc.dtype);
  Storage* copy = Storage::Create(static_cast<size_t>(placed->storage_elements) * item, false);
  for (int64_t i = 0; i < self->desc.numel(); ++i)
    std::memcpy(copy->data() + i * item, self->storage->data() + self->desc.ElementOffset(i) * item, item);
  return NewTensorObject(copy, placed->desc, Layout::kContiguous);
}

PyObject* TensorGet(PyObject* obj, void* which) {
  auto* self = reinterpret_cast<TensorObject*>(obj);
  switch (reinterpret_cast<intptr_t>(which)) {
    case 0: return ShapeTuple(self->desc.shape, self->desc.ndim);
    case 1: return PyUnicode_FromString(std::string(interop::DTypeName(self->desc.dtype)).c_str());
    case 2: return PyUnicode_FromString(std::string(interop::LayoutName(self->layout)).c_str());
    case 3: return PyLong_FromLongLong(self->desc.numel() * static_cast<int64_t>(interop::ItemSize(self->desc.dtype)));
    case 4: return PyLong_FromUnsignedLongLong(self->storage->id());
    case 5: return PyBool_FromLong(self->desc.contiguous() && self->desc.offset == 0);
    case 6: return PyBool_FromLong(self->storage->read_only());
  }
  Py_RETURN_NONE;
}

PyMethodDef kTensorMethods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&TensorDlpack)),
     METH_VARARGS | METH_KEYWORDS, "Export as a \"dltensor\" capsule (stream must be None)."},
    {"__dlpack_device__", &DeviceTuple, METH_NOARGS, "(kDLCPU, 0)"},
    {"values", &TensorValues, METH_NOARGS, "The logical elements in C order."},
    {"contiguous", &TensorContiguous, METH_NOARGS, "Itself if C-contiguous with no offset, else a copy."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kTensorGetters[] = {
    {"shape", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(0)},
    {"dtype", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(1)},
    {"layout", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(2)},
    {"nbytes", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(3)},
    {"storage_id", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(4)},
    {"is_contiguous", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(5)},
    {"readonly", &TensorGet, nullptr, nullptr, reinterpret_cast<void*>(6)},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- View and Buffer (consumer) -------------------------------------------------------------------

struct ViewObject {
  PyObject_HEAD
  BufferView* view;
};

struct BufferObject {
  PyObject_HEAD
  ImportedBuffer* buffer;
};

PyObject* WrapView(BufferView* view) {
  if (!view) return nullptr;
  auto* self = PyObject_New(ViewObject, g_view_type);
  if (!self) {
    view->Release();
    return nullptr;
  }
  self->view = view;
  return reinterpret_cast<PyObject*>(self);
}

void ViewDealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  reinterpret_cast<ViewObject*>(obj)->view->Release();
  PyObject_Free(obj);
  Py_DECREF(type);
}

PyObject* ViewValues(PyObject* obj, PyObject*) {
  BufferView* v = reinterpret_cast<ViewObject*>(obj)->view;
  return ValuesList(v->dtype(), v->numel(), [&](int64_t i) { return v->Element(i); });
}

PyObject* ViewBuffer(PyObject* obj, PyObject*) {
  BufferView* v = reinterpret_cast<ViewObject*>(obj)->view;
  auto* b = PyObject_New(BufferObject, g_buffer_type);
  if (!b) return nullptr;
  v->buffer()->Retain();
  b->buffer = v->buffer();
  return reinterpret_cast<PyObject*>(b);
}

PyObject* ViewGet(PyObject* obj, void* which) {
  BufferView* v = reinterpret_cast<ViewObject*>(obj)->view;
  if (which == nullptr) return ShapeTuple(v->shape().data(), static_cast<int>(v->shape().size()));
  return PyUnicode_FromString(std::string(interop::DTypeName(v->dtype())).c_str());
}

PyMethodDef kViewMethods[] = {
    {"values", &ViewValues, METH_NOARGS, "The logical elements in C order, read through the buffer."},
    {"buffer", &ViewBuffer, METH_NOARGS, "A handle that keeps the imported buffer alive."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kViewGetters[] = {{"shape", &ViewGet, nullptr, nullptr, nullptr},
                              {"dtype", &ViewGet, nullptr, nullptr, reinterpret_cast<void*>(1)},
                              {nullptr, nullptr, nullptr, nullptr, nullptr}};

void BufferDealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  reinterpret_cast<BufferObject*>(obj)->buffer->Release();
  PyObject_Free(obj);
  Py_DECREF(type);
}

// ---- CapsuleHolder ---------------------------------------------------------------------------------

struct HolderObject {
  PyObject_HEAD
  PyObject* capsule;
};

PyObject* HolderNew(PyTypeObject* type, PyObject* args, PyObject*) {
  PyObject* capsule;
  if (!PyArg_ParseTuple(args, "O!", &PyCapsule_Type, &capsule)) return nullptr;
  auto* self = reinterpret_cast<HolderObject*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->capsule = Py_NewRef(capsule);
  return reinterpret_cast<PyObject*>(self);
}

void HolderDealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  Py_CLEAR(reinterpret_cast<HolderObject*>(obj)->capsule);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* HolderDlpack(PyObject* obj, PyObject*, PyObject*) {
  return Py_NewRef(reinterpret_cast<HolderObject*>(obj)->capsule);
}

PyMethodDef kHolderMethods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&HolderDlpack)),
     METH_VARARGS | METH_KEYWORDS, "The held capsule, whatever its state."},
    {"__dlpack_device__", &DeviceTuple, METH_NOARGS, "(kDLCPU, 0)"},
    {nullptr, nullptr, 0, nullptr}};

// ---- module functions ------------------------------------------------------------------------------

PyObject* ImportCapsuleFn(PyObject*, PyObject* capsule) { return WrapView(interop::ImportCapsule(capsule)); }

PyObject* ImportFromFn(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"source", "contiguous", nullptr};
  PyObject* source;
  int contiguous = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", const_cast<char**>(kwlist), &source, &contiguous))
    return nullptr;
  return WrapView(interop::ImportFrom(source, contiguous != 0));
}

PyObject* MalformedFn(PyObject*, PyObject* args) {
  const char* kind_name;
  PyObject* tensor;
  if (!PyArg_ParseTuple(args, "sO!", &kind_name, g_tensor_type, &tensor)) return nullptr;
  auto kind = interop::MalformedFromName(kind_name);
  if (!kind) return PyErr_Format(PyExc_ValueError, "unknown malformed-capsule kind '%s'", kind_name);
  auto* t = reinterpret_cast<TensorObject*>(tensor);
  if (*kind == interop::Malformed::kOverflow && t->desc.ndim < 2)
    return PyErr_Format(PyExc_ValueError, "the overflow kind needs a tensor of ndim >= 2");
  if (*kind == interop::Malformed::kNegativeDim && t->desc.ndim < 1)
    return PyErr_Format(PyExc_ValueError, "the negative-dim kind needs a tensor of ndim >= 1");
  return interop::MalformedCapsule(*kind, t->storage, t->desc);
}

PyObject* ProducerStatsFn(PyObject*, PyObject*) {
  interop::ProducerStats s = interop::GetProducerStats();
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "storages_live", s.storages_live, "bytes_live", s.bytes_live,
                       "exports_live", s.exports_live, "exports_made", s.exports_made, "deleter_calls",
                       s.deleter_calls);
}

PyObject* ConsumerStatsFn(PyObject*, PyObject*) {
  interop::ConsumerStats s = interop::GetConsumerStats();
  return Py_BuildValue("{s:K,s:K,s:K,s:K}", "buffers_live", s.buffers_live, "views_live", s.views_live,
                       "imports", s.imports, "deleter_calls", s.deleter_calls);
}

PyObject* LiveStoragesFn(PyObject*, PyObject*) {
  return PyUnicode_FromString(interop::DescribeLiveStorages().c_str());
}

PyObject* ResetFn(PyObject*, PyObject*) {
  interop::ResetProducerLedger();
  interop::ResetConsumerCounters();
  Py_RETURN_NONE;
}

PyObject* ExpectedValuesFn(PyObject*, PyObject* args) {
  const char* dtype_name;
  long long count;
  unsigned int seed;
  if (!PyArg_ParseTuple(args, "sLI", &dtype_name, &count, &seed)) return nullptr;
  auto dtype = interop::DTypeFromName(dtype_name);
  if (!dtype) return PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", dtype_name);
  if (count < 0 || count > interop::kMaxProducerElements)
    return PyErr_Format(PyExc_ValueError, "count must be in 0..%lld", static_cast<long long>(interop::kMaxProducerElements));
  if (interop::IsComplex(*dtype)) {
    PyObject* list = PyList_New(count);
    for (int64_t i = 0; list && i < count; ++i)
      PyList_SET_ITEM(list, i, PyComplex_FromDoubles(interop::PatternValue(*dtype, seed, i),
                                                     interop::PatternImag(*dtype, seed, i)));
    return list;
  }
  return ValuesList(*dtype, count, [&](int64_t i) { return interop::PatternValue(*dtype, seed, i); });
}

// strides(shape, layout): the element strides the producer places `layout` with, for peers that make the same
// layout (harness/programs/capsule/upstream/*.py).
PyObject* StridesFn(PyObject*, PyObject* args) {
  PyObject* shape_obj;
  const char* layout_name;
  if (!PyArg_ParseTuple(args, "Os", &shape_obj, &layout_name)) return nullptr;
  auto layout = ParseLayout(layout_name);
  std::vector<int64_t> shape;
  if (!layout || !ParseShape(shape_obj, &shape)) return nullptr;
  auto placed = interop::PlaceTensor(DType::kFloat32, shape, *layout);
  if (!placed.ok()) return PyErr_Format(PyExc_ValueError, "strides: %s", placed.status().message().c_str());
  PyObject* t = PyTuple_New(placed->desc.ndim);
  for (int i = 0; t && i < placed->desc.ndim; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(placed->desc.strides[i]));
  return t;
}

PyMethodDef kModuleMethods[] = {
    {"import_capsule", &ImportCapsuleFn, METH_O, "Import a \"dltensor\" capsule -> View."},
    {"import_from", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&ImportFromFn)),
     METH_VARARGS | METH_KEYWORDS, "Import source.__dlpack__() -> View (optionally via a contiguous copy)."},
    {"malformed_capsule", &MalformedFn, METH_VARARGS, "A deliberately broken export of a Tensor."},
    {"producer_stats", &ProducerStatsFn, METH_NOARGS, "The producer ledger's counters."},
    {"consumer_stats", &ConsumerStatsFn, METH_NOARGS, "The consumer's counters."},
    {"live_storages", &LiveStoragesFn, METH_NOARGS, "The live producer storages, described."},
    {"reset_ledger", &ResetFn, METH_NOARGS, "End an iteration: release parked exports, reset counters."},
    {"strides", &StridesFn, METH_VARARGS, "The element strides the producer places a layout with."},
    {"expected_values", &ExpectedValuesFn, METH_VARARGS, "PatternValue(dtype, seed, i) for i < count (complex for complex64)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModuleDef = {PyModuleDef_HEAD_INIT, kModuleName,
                          "The lifeline interop layer: a DLPack producer, consumer and ledger.", -1,
                          kModuleMethods, nullptr, nullptr, nullptr, nullptr};

// `instantiable`: whether Python code may call the type (View and Buffer come only from imports).
PyTypeObject* MakeType(PyObject* module, const char* name, size_t size, PyType_Slot* slots,
                       bool instantiable) {
  unsigned int flags = Py_TPFLAGS_DEFAULT | (instantiable ? 0 : Py_TPFLAGS_DISALLOW_INSTANTIATION);
  PyType_Spec spec = {name, static_cast<int>(size), 0, flags, slots};
  auto* type = reinterpret_cast<PyTypeObject*>(PyType_FromModuleAndSpec(module, &spec, nullptr));
  if (type && PyModule_AddType(module, type) != 0) Py_CLEAR(type);
  return type;  // the global keeps this reference for the life of the process
}

}  // namespace

}  // namespace lifeline::py

extern "C" PyObject* PyInit__lifeline_interop(void) {
  using namespace lifeline::py;
  Ref module = Ref::Steal(PyModule_Create(&kModuleDef));
  if (!module) return nullptr;
  static PyType_Slot tensor_slots[] = {{Py_tp_new, reinterpret_cast<void*>(&TensorNew)},
                                       {Py_tp_dealloc, reinterpret_cast<void*>(&TensorDealloc)},
                                       {Py_tp_methods, kTensorMethods},
                                       {Py_tp_getset, kTensorGetters},
                                       {Py_tp_doc, const_cast<char*>("A DLPack producer tensor.")},
                                       {0, nullptr}};
  static PyType_Slot view_slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(&ViewDealloc)},
                                     {Py_tp_methods, kViewMethods},
                                     {Py_tp_getset, kViewGetters},
                                     {Py_tp_doc, const_cast<char*>("A view of an imported DLPack buffer.")},
                                     {0, nullptr}};
  static PyType_Slot buffer_slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(&BufferDealloc)},
                                       {Py_tp_doc, const_cast<char*>("A reference to an imported buffer.")},
                                       {0, nullptr}};
  static PyType_Slot holder_slots[] = {{Py_tp_new, reinterpret_cast<void*>(&HolderNew)},
                                       {Py_tp_dealloc, reinterpret_cast<void*>(&HolderDealloc)},
                                       {Py_tp_methods, kHolderMethods},
                                       {Py_tp_doc, const_cast<char*>("Hands out one given capsule.")},
                                       {0, nullptr}};
  g_tensor_type = MakeType(module.get(), "_lifeline_interop.Tensor", sizeof(TensorObject), tensor_slots, true);
  g_view_type = MakeType(module.get(), "_lifeline_interop.View", sizeof(ViewObject), view_slots, false);
  g_buffer_type = MakeType(module.get(), "_lifeline_interop.Buffer", sizeof(BufferObject), buffer_slots, false);
  g_holder_type = MakeType(module.get(), "_lifeline_interop.CapsuleHolder", sizeof(HolderObject), holder_slots, true);
  if (!g_tensor_type || !g_view_type || !g_buffer_type || !g_holder_type) return nullptr;
  return module.release();
}
