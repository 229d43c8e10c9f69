#include "layers/interop/python_runtime.h"

#include <cstdio>
#include <cstdlib>

// ASan carries LSan; the lsan lane links standalone LSan and says so with LIFELINE_LSAN (it compiles without
// -fsanitize=leak, which would make __has_feature(leak_sanitizer) true: cmake/LifelineLane.cmake).
#if defined(LIFELINE_LSAN)
#include <sanitizer/lsan_interface.h>
#define LIFELINE_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#include <sanitizer/lsan_interface.h>
#define LIFELINE_HAS_LSAN 1
#endif
#endif
#ifndef LIFELINE_HAS_LSAN
#define LIFELINE_HAS_LSAN 0
#endif

#include "layers/interop/py_module.h"

#ifndef LIFELINE_PYTHON_EXECUTABLE
#error "LIFELINE_PYTHON_EXECUTABLE must name Debian's python3 (set by CMake from Python3_EXECUTABLE)"
#endif

namespace lifeline::py {
namespace {

[[noreturn]] void StartupFailure(const char* what, const PyStatus* status) {
  std::fprintf(stderr, "lifeline: cannot start the embedded Python (%s): %s\n", what,
               status && status->err_msg ? status->err_msg : "see the Python error above");
  if (PyErr_Occurred()) PyErr_Print();
  std::exit(2);
}

// Everything that exists now lives as long as the process. gc.freeze() moves it out of the collector's
// generations, so a collection inside a test or fuzz iteration walks only what that iteration made
// (a full collection over NumPy's objects otherwise dominates an iteration).
void Freeze() {
  Ref gc = Ref::Steal(PyImport_ImportModule("gc"));
  Ref frozen = gc ? Ref::Steal(PyObject_CallMethod(gc.get(), "freeze", nullptr)) : Ref();
  if (!frozen) StartupFailure("gc.freeze()", nullptr);
}

void Start() {
  // PYTHONMALLOC=malloc, set in code so the binaries behave the same under ctest, the CLI and a shell.
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.allocator = PYMEM_ALLOCATOR_MALLOC;
  PyStatus status = Py_PreInitialize(&pre);
  if (PyStatus_Exception(status)) StartupFailure("pre-initialization", &status);

  if (PyImport_AppendInittab(kModuleName, &PyInit__lifeline_interop) != 0)
    StartupFailure("registering _lifeline_interop", nullptr);

  // Isolated: no PYTHON* environment, no user site-packages, no current directory on sys.path. The
  // program name makes the path computation find Debian's stdlib and, through Debian's site.py,
  // /usr/lib/python3/dist-packages (NumPy) — whatever other python3 is first on PATH.
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  status = PyConfig_SetBytesString(&config, &config.program_name, LIFELINE_PYTHON_EXECUTABLE);
  if (PyStatus_Exception(status)) StartupFailure("program name", &status);
  config.install_signal_handlers = 0;  // SIGINT stays with libFuzzer and the CLI
  status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) StartupFailure("initialization", &status);

  Ref numpy = Ref::Steal(PyImport_ImportModule("numpy"));
  if (!numpy) StartupFailure("import numpy (install python3-numpy: scripts/install-deps.sh)", nullptr);
  Ref module = Ref::Steal(PyImport_ImportModule(kModuleName));
  if (!module) StartupFailure("import _lifeline_interop", nullptr);
  Freeze();
}

// What the interpreter allocates while it starts and imports NumPy lives as long as the process: code
// objects of Cython modules, interned tuples, type caches. Many of them are referenced only from memory
// LeakSanitizer does not scan (CPython's mmap'd arenas and frame stacks), so at exit they would look
// leaked. Instead of suppression patterns, which could also match project objects created through the
// same CPython functions later, LSan is told to ignore exactly the allocations made inside this call.
void StartIgnoringItsAllocations() {
#if LIFELINE_HAS_LSAN
  __lsan::ScopedDisabler interpreter_lifetime;
#endif
  Start();
}

}  // namespace

void EnsureInterpreter() {
  static const bool started = (StartIgnoringItsAllocations(), true);
  (void)started;
}

PyObject* RunLongLived(const char* code, const char* what) {
  EnsureInterpreter();
#if LIFELINE_HAS_LSAN
  __lsan::ScopedDisabler long_lived;  // as for the start-up: what the code imports lives as long as the process
#endif
  PyObject* globals = PyDict_New();
  if (!globals || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) != 0)
    StartupFailure(what, nullptr);
  Ref done = Ref::Steal(PyRun_String(code, Py_file_input, globals, globals));
  if (!done) {
    std::fprintf(stderr, "lifeline: %s failed: %s\n", what, TakeError().c_str());
    std::exit(2);
  }
  Freeze();
  return globals;
}

std::string TakeError() {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  if (!type) return "no Python exception is pending";
  PyErr_NormalizeException(&type, &value, &trace);
  std::string out = reinterpret_cast<PyTypeObject*>(type)->tp_name;
  if (value) {
    Ref text = Ref::Steal(PyObject_Str(value));
    const char* utf8 = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
    if (utf8 && *utf8) out += std::string(": ") + utf8;
    PyErr_Clear();  // a failing str() must not leave a second exception behind
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return out;
}

std::string PendingErrorType() {
  PyObject* type = PyErr_Occurred();
  return type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "";
}

Ref Attr(const char* module, const char* name) {
  Ref m = Ref::Steal(PyImport_ImportModule(module));
  Ref a = m ? Ref::Steal(PyObject_GetAttrString(m.get(), name)) : Ref();
  if (!a) {
    std::fprintf(stderr, "lifeline: the embedded Python has no %s.%s\n", module, name);
    StartupFailure("attribute lookup", nullptr);
  }
  return a;
}

}  // namespace lifeline::py
