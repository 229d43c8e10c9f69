#include "harness/programs/capsule/py_call.h"

namespace lifeline::capsule {

using py::Ref;

Ref Call(const Ref& fn, std::initializer_list<PyObject*> args) {
  Ref tuple = Ref::Steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  Py_ssize_t i = 0;
  for (PyObject* a : args) PyTuple_SET_ITEM(tuple.get(), i++, Py_NewRef(a));
  return Ref::Steal(PyObject_Call(fn.get(), tuple.get(), nullptr));
}

Ref CallMethod(PyObject* obj, const char* name) { return Ref::Steal(PyObject_CallMethod(obj, name, nullptr)); }

Ref Str(std::string_view s) {
  return Ref::Steal(PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())));
}

Ref ShapeTuple(const std::vector<int64_t>& shape) {
  Ref t = Ref::Steal(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  for (size_t i = 0; i < shape.size(); ++i) {
    PyTuple_SET_ITEM(t.get(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  }
  return t;
}

Ref CallDlpack(PyObject* obj, ExportArgs args) {
  if (args == ExportArgs::kNone) return CallMethod(obj, "__dlpack__");  // most exports: no dict to build
  Ref method = Ref::Steal(PyObject_GetAttrString(obj, "__dlpack__"));
  if (!method) return method;
  Ref kwargs = Ref::Steal(PyDict_New());
  auto set = [&](const char* key, PyObject* value) {
    Ref v = Ref::Steal(value);
    return v && PyDict_SetItemString(kwargs.get(), key, v.get()) == 0;
  };
  auto pair = [](long a, long b) { return Py_BuildValue("(ll)", a, b); };
  bool ok = true;
  switch (args) {
    case ExportArgs::kNone: break;
    case ExportArgs::kStreamNone: ok = set("stream", Py_NewRef(Py_None)); break;
    case ExportArgs::kStreamNoSync: ok = set("stream", PyLong_FromLong(-1)); break;
    case ExportArgs::kStreamOne: ok = set("stream", PyLong_FromLong(1)); break;
    case ExportArgs::kStreamNotInt: ok = set("stream", PyUnicode_FromString("1")); break;
    case ExportArgs::kMaxVersion: ok = set("max_version", pair(1, 0)); break;
    case ExportArgs::kDlDevice: ok = set("dl_device", pair(kDLCPU, 0)); break;
    case ExportArgs::kCopy: ok = set("copy", Py_NewRef(Py_False)); break;
  }
  if (!ok) return Ref();
  Ref empty = Ref::Steal(PyTuple_New(0));
  return Ref::Steal(PyObject_Call(method.get(), empty.get(), kwargs.get()));
}

Ref Bool(bool b) { return Ref::Borrow(b ? Py_True : Py_False); }

Ref CallCreate(const Ref& fn, interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout,
               uint8_t seed, bool readonly) {
  Ref d = Str(interop::DTypeName(dtype)), s = ShapeTuple(shape), l = Str(interop::LayoutName(layout));
  Ref sd = Ref::Steal(PyLong_FromLong(seed)), ro = Bool(readonly);
  return Call(fn, {d.get(), s.get(), l.get(), sd.get(), ro.get()});
}

}  // namespace lifeline::capsule
