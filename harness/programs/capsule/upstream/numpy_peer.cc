#include "harness/programs/capsule/upstream/numpy_peer.h"

#include "core/check.h"
#include "harness/programs/capsule/py_call.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

// numpy_peer.py, embedded at build time as kNumpyPeerPy.
#include "numpy_peer.py.inc"

struct Numpy {
  Ref make_array, values, from_dlpack, holder_type;
};

const Numpy& Np() {
  static const Numpy* np = [] {
    py::EnsureInterpreter();
    Ref globals = Ref::Steal(PyDict_New());
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    Ref done = Ref::Steal(PyRun_String(kNumpyPeerPy, Py_file_input, globals.get(), globals.get()));
    LIFELINE_PRECONDITION(done, "numpy_peer.py failed: " + py::TakeError());
    auto get = [&](const char* name) { return Ref::Borrow(PyDict_GetItemString(globals.get(), name)); };
    return new Numpy{get("make_array"), get("values"), py::Attr("numpy", "from_dlpack"),
                     py::Attr("_lifeline_interop", "CapsuleHolder")};
  }();
  return *np;
}

class NumpyPeer final : public Peer {
 public:
  const PeerRules& rules() const override { return NumpyRules(); }
  Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout, uint8_t seed,
             bool readonly) const override {
    return CallCreate(Np().make_array, dtype, shape, layout, seed, readonly);
  }
  Ref Export(PyObject* obj) const override { return CallMethod(obj, "__dlpack__"); }
  Ref Values(PyObject* obj) const override { return Call(Np().values, {obj}); }
  Ref Import(PyObject* producer) const override { return Call(Np().from_dlpack, {producer}); }
  Ref ImportCapsule(PyObject* capsule) const override {
    // NumPy 1.24's from_dlpack takes an object with __dlpack__, not a bare capsule.
    Ref holder = Call(Np().holder_type, {capsule});
    LIFELINE_PRECONDITION(holder, "CapsuleHolder failed: " + py::TakeError());
    return Call(Np().from_dlpack, {holder.get()});
  }
};

}  // namespace

const PeerRules& NumpyRules() {
  static const PeerRules rules{
      /*object_name=*/"NumPy array",
      /*export_refusal=*/"BufferError",
      /*exports_bool=*/false,
      /*exports_read_only=*/false,
      /*imports_read_only=*/true,
      /*import_refusal=*/"RuntimeError",
      /*imports_bool=*/false,
      /*used_capsule_refusal=*/"ValueError",
  };
  return rules;
}

std::unique_ptr<Peer> MakeNumpyPeer() {
  Np();
  return std::make_unique<NumpyPeer>();
}

}  // namespace lifeline::capsule
