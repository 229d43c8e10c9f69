// The fixture of the tests that run Python inside the harness's embedded interpreter with this layer's
// DLPack producer and consumer (tests/interop/dlpack_test.cc).
//
// `DlpackTest` runs every test's Python snippets in a fresh globals dict and ends (TearDown) by dropping
// that dict, collecting garbage, resetting the ledger and checking that nothing is left behind: no
// producer storage, byte or export, no imported buffer or view. A test that leaks fails there.
#pragma once

#include <Python.h>
#include <gtest/gtest.h>

#include <string>

#include "layers/interop/python_runtime.h"

namespace lifeline::testing_util {

inline constexpr const char* kPrelude = "import gc\nimport numpy as np\nimport _lifeline_interop as li\n";

// Runs `code` (dedented, so snippets may be indented like the C++ around them) in `globals`. On an
// exception: the failure names the exception and the snippet line it came from.
inline testing::AssertionResult RunIn(PyObject* globals, const std::string& code) {
  py::Ref dedent = py::Attr("textwrap", "dedent");
  py::Ref text = py::Ref::Steal(PyObject_CallFunction(dedent.get(), "s", code.c_str()));
  if (!text) return testing::AssertionFailure() << "dedent: " << py::TakeError();
  const char* source = PyUnicode_AsUTF8(text.get());
  if (!source) return testing::AssertionFailure() << "utf-8: " << py::TakeError();
  py::Ref result = py::Ref::Steal(PyRun_String(source, Py_file_input, globals, globals));
  if (result) return testing::AssertionSuccess();
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  int line = -1;
  for (PyObject* t = tb; t && t != Py_None;) {
    py::Ref lineno = py::Ref::Steal(PyObject_GetAttrString(t, "tb_lineno"));
    if (lineno) line = static_cast<int>(PyLong_AsLong(lineno.get()));
    py::Ref next = py::Ref::Steal(PyObject_GetAttrString(t, "tb_next"));
    PyErr_Clear();
    if (!next || next.get() == Py_None) break;
    t = next.get();  // `tb` keeps the chain alive
  }
  Py_XDECREF(tb);
  PyErr_Restore(type, value, nullptr);
  return testing::AssertionFailure() << "the snippet raised " << py::TakeError() << " (snippet line " << line
                                     << ")\n"
                                     << source;
}

// A fresh globals dict per test with the prelude (gc, numpy as np, _lifeline_interop as li) imported;
// `Run` runs a snippet in it.
class DlpackTest : public testing::Test {
 protected:
  void SetUp() override {
    py::EnsureInterpreter();
    globals_ = py::Ref::Steal(PyDict_New());
    PyDict_SetItemString(globals_.get(), "__builtins__", PyEval_GetBuiltins());
    ASSERT_TRUE(RunIn(globals_.get(), kPrelude));
    // Earlier tests left nothing behind (their TearDown checked), so counts here are absolute.
    ASSERT_TRUE(Run(R"PY(
        assert li.producer_stats()["storages_live"] == 0, "an earlier test left " + li.live_storages()
    )PY"));
  }

  // Nothing the test made may survive: drop every name, collect, release parked NULL-deleter exports.
  void TearDown() override {
    PyDict_Clear(globals_.get());
    globals_.reset();
    py::Ref check = py::Ref::Steal(PyDict_New());
    PyDict_SetItemString(check.get(), "__builtins__", PyEval_GetBuiltins());
    ASSERT_TRUE(RunIn(check.get(), kPrelude));
    EXPECT_TRUE(RunIn(check.get(), R"PY(
        gc.collect()
        li.reset_ledger()
        p = li.producer_stats()
        c = li.consumer_stats()
        assert p["storages_live"] == 0, (p, li.live_storages())
        assert p["bytes_live"] == 0, p
        assert p["exports_live"] == 0, p
        assert c["buffers_live"] == 0, c
        assert c["views_live"] == 0, c
    )PY"));
    PyDict_Clear(check.get());
  }

  testing::AssertionResult Run(const std::string& code) { return RunIn(globals_.get(), code); }

  py::Ref globals_;
};

}  // namespace lifeline::testing_util
