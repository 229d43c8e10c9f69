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

Ref Bool(bool b) { return Ref::Borrow(b ? Py_True : Py_False); }

Ref CallCreate(const Ref& fn, interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout,
               uint8_t seed, bool readonly) {
  Ref d = Str(interop::DTypeName(dtype)), s = ShapeTuple(shape), l = Str(interop::LayoutName(layout));
  Ref sd = Ref::Steal(PyLong_FromLong(seed)), ro = Bool(readonly);
  return Call(fn, {d.get(), s.get(), l.get(), sd.get(), ro.get()});
}

}  // namespace lifeline::capsule
