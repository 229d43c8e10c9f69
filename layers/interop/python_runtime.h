// The embedded CPython of the interop layer: Debian's libpython3.11 with Debian's NumPy, started once
// per process and never finalized (NumPy does not support re-initialization, and finalizing would run
// every capsule destructor at exit instead of inside the iteration that owns it).
//
// The interpreter uses the plain C allocator (the PYTHONMALLOC=malloc setting, made through PyPreConfig
// so no environment is needed): every Python object is then a malloc block the sanitizers and valgrind
// can see, and a freed one is a freed block, not a slot recycled inside pymalloc's arenas.
//
// The `_lifeline_interop` extension module (py_module.cc) is registered as a built-in before start-up.
#pragma once

#include <Python.h>

#include <string>
#include <utility>

namespace lifeline::py {

// Starts the interpreter on first call and imports NumPy; later calls return at once. A start-up failure
// (no stdlib, no NumPy) is not an input problem: it prints what is missing and exits with status 2.
// Must be called before any other Python API; the calling thread holds the GIL afterwards (the harness
// is single-threaded while it talks to Python).
void EnsureInterpreter();

// Runs `code` (a Python module's text) in a new namespace that lives as long as the process, under the
// same LeakSanitizer ignore scope and gc.freeze() as the start-up: for code that imports a large library
// once (PyTorch). Returns the namespace (a borrowed, immortal dict). An exception (a missing module
// included) is a start-up fault: prints "lifeline: <what> failed: <error>" and exits with status 2.
PyObject* RunLongLived(const char* code, const char* what);

// An owned reference (Py_XDECREF on destruction). `Ref::Steal(p)` takes a new reference as returned by
// most of the API; `Ref::Borrow(p)` adds one.
class Ref {
 public:
  Ref() = default;
  static Ref Steal(PyObject* p) { return Ref(p); }
  static Ref Borrow(PyObject* p) {
    Py_XINCREF(p);
    return Ref(p);
  }
  Ref(const Ref& other) : p_(other.p_) { Py_XINCREF(p_); }
  Ref(Ref&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
  Ref& operator=(Ref other) noexcept {
    std::swap(p_, other.p_);
    return *this;
  }
  ~Ref() { Py_XDECREF(p_); }

  PyObject* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  PyObject* release() { return std::exchange(p_, nullptr); }
  void reset() { Ref().swap(*this); }
  void swap(Ref& other) noexcept { std::swap(p_, other.p_); }

 private:
  explicit Ref(PyObject* p) : p_(p) {}
  PyObject* p_ = nullptr;
};

// Takes the pending Python exception (there must be one) and renders it as "TypeName: message".
std::string TakeError();
// The type name of the pending exception without clearing it, or "" when none is pending.
std::string PendingErrorType();

// A module attribute, e.g. Attr("numpy", "from_dlpack"); a missing one is a start-up fault (exit 2).
Ref Attr(const char* module, const char* name);

}  // namespace lifeline::py
