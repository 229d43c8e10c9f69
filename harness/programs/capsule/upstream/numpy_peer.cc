#include "harness/programs/capsule/upstream/numpy_peer.h"

#include "core/check.h"
#include "harness/programs/capsule/py_call.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

// numpy_peer.py, embedded at build time as kNumpyPeerPy.
#include "numpy_peer.py.inc"

// The namespace numpy_peer.py defines its functions in, run once per process.
PyObject* Helpers() {
  static PyObject* globals = [] {
    py::EnsureInterpreter();
    PyObject* g = PyDict_New();
    PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
    Ref done = Ref::Steal(PyRun_String(kNumpyPeerPy, Py_file_input, g, g));
    LIFELINE_PRECONDITION(done, "numpy_peer.py failed: " + py::TakeError());
    return g;
  }();
  return globals;
}

Ref Helper(const char* name) { return Ref::Borrow(PyDict_GetItemString(Helpers(), name)); }

class NumpyPeer final : public Peer {
 public:
  const PeerRules& rules() const override { return NumpyRules(); }
  Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout, uint8_t seed,
             bool readonly, Flavor) const override {
    return CallCreate(make_array_, dtype, shape, layout, seed, readonly);
  }
  Ref Export(PyObject* obj, int, ExportArgs args) const override { return CallDlpack(obj, args); }
  Ref Values(PyObject* obj) const override { return Call(values_, {obj}); }
  Ref Import(PyObject* producer) const override { return Call(from_dlpack_, {producer}); }
  Ref ImportCapsule(PyObject* capsule) const override {
    // NumPy 1.24's from_dlpack takes an object with __dlpack__, not a bare capsule.
    Ref holder = Call(holder_type_, {capsule});
    LIFELINE_PRECONDITION(holder, "CapsuleHolder failed: " + py::TakeError());
    return Call(from_dlpack_, {holder.get()});
  }

 private:
  const Ref make_array_ = Helper("make_array");
  const Ref values_ = Helper("values");
  const Ref from_dlpack_ = py::Attr("numpy", "from_dlpack");
  const Ref holder_type_ = py::Attr("_lifeline_interop", "CapsuleHolder");
};

}  // namespace

const PeerRules& NumpyRules() {
  using interop::DType;
  constexpr uint32_t kMade = DTypeBit(DType::kFloat32) | DTypeBit(DType::kFloat16) | DTypeBit(DType::kInt8) |
                             DTypeBit(DType::kBool);
  static const PeerRules rules{
      /*name=*/"numpy",
      /*object_name=*/"NumPy array",
      /*creates=*/kMade,  // the subject's four dtypes; creates_wide, below, has every dtype NumPy has
      /*export_refusal=*/"BufferError",
      /*exports=*/kAllDTypes & ~DTypeBit(DType::kBool),
      /*exports_read_only=*/false,
      /*imports_read_only=*/true,
      /*import_refusal=*/"RuntimeError",  // "Unsupported dtype in DLTensor."
      /*imports=*/kAllDTypes & ~DTypeBit(DType::kBool) & ~DTypeBit(DType::kBFloat16),
      /*used_capsule_refusal=*/"ValueError",
      /*device_refusal=*/"RuntimeError",  // "Unsupported device in DLTensor."
      /*read_only_arrays=*/true,
      /*flavors=*/false,
      /*export_ways=*/1,
      /*contiguous_copies=*/false,
      /*reads_byte_offset=*/true,
      /*leaks_refused_exports=*/false,
      /*leaks_empty_imports=*/false,
      /*exports_null_when_empty=*/false,
      // a[..., ::-1] and a writable as_strided broadcast (NumPy's exports never carry NULL strides)
      // numpy.flip (every axis), and as_strided for the strides of extent-1 axes
      /*layouts=*/kClassicLayouts | LayoutBit(interop::Layout::kReversed) | LayoutBit(interop::Layout::kBroadcast) |
          LayoutBit(interop::Layout::kReversedAll) | LayoutBit(interop::Layout::kUnitStrides),
      /*imports_negative_strides=*/true,
      /*creates_wide=*/kAllDTypes & ~DTypeBit(DType::kBFloat16),  // every dtype NumPy has
      /*stream_refusal=*/"RuntimeError",  // "NumPy only supports stream=None."
      /*int_streams_only=*/false,
      /*lanes_refusal=*/"RuntimeError",  // "Unsupported lanes in DLTensor dtype."
  };
  return rules;
}

std::unique_ptr<Peer> MakeNumpyPeer() { return std::make_unique<NumpyPeer>(); }

}  // namespace lifeline::capsule
