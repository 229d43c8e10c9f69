// Small CPython call helpers for the capsule programs' parties and executor (the interpreter is the
// interop layer's: layers/interop/python_runtime.h). Every function returns a new reference, or a null
// Ref with the Python exception pending.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "harness/programs/capsule/format.h"
#include "layers/interop/dlpack_types.h"
#include "layers/interop/python_runtime.h"

namespace lifeline::capsule {

// fn(*args).
py::Ref Call(const py::Ref& fn, std::initializer_list<PyObject*> args);
// obj.name().
py::Ref CallMethod(PyObject* obj, const char* name);
py::Ref Str(std::string_view s);
py::Ref ShapeTuple(const std::vector<int64_t>& shape);
py::Ref Bool(bool b);
// obj.__dlpack__(<args>): the keyword arguments ExportArgs names.
py::Ref CallDlpack(PyObject* obj, ExportArgs args);
// fn(dtype name, shape tuple, layout name, seed, readonly): how both parties' producers are called.
py::Ref CallCreate(const py::Ref& fn, interop::DType dtype, const std::vector<int64_t>& shape,
                   interop::Layout layout, uint8_t seed, bool readonly);

}  // namespace lifeline::capsule
