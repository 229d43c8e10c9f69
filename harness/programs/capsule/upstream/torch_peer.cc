#include "harness/programs/capsule/upstream/torch_peer.h"

#include "harness/programs/capsule/py_call.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

// torch_peer.py, embedded at build time as kTorchPeerPy.
#include "torch_peer.py.inc"

Ref Helper(const char* name) {
  static PyObject* const globals =
      py::RunLongLived(kTorchPeerPy, "importing torch (install python3-torch: scripts/install-deps.sh)");
  return Ref::Borrow(PyDict_GetItemString(globals, name));
}

class TorchPeer final : public Peer {
 public:
  const PeerRules& rules() const override { return TorchRules(); }
  Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout, uint8_t seed,
             bool, Flavor flavor) const override {
    Ref d = Str(interop::DTypeName(dtype)), s = ShapeTuple(shape), l = Str(interop::LayoutName(layout));
    Ref sd = Ref::Steal(PyLong_FromLong(seed)), f = Str(FlavorName(flavor));
    return Call(make_tensor_, {d.get(), s.get(), l.get(), sd.get(), f.get()});
  }
  Ref Export(PyObject* obj, int via, ExportArgs args) const override {
    if (via == 0) return CallDlpack(obj, args);
    return Call(to_dlpack_, {obj});
  }
  Ref Values(PyObject* obj) const override { return Call(values_, {obj}); }
  Ref Import(PyObject* producer) const override { return Call(from_dlpack_, {producer}); }
  Ref ImportCapsule(PyObject* capsule) const override { return Call(from_dlpack_, {capsule}); }

 private:
  const Ref make_tensor_ = Helper("make_tensor");
  const Ref to_dlpack_ = Helper("to_dlpack");
  const Ref values_ = Helper("values");
  const Ref from_dlpack_ = Helper("from_dlpack");
};

}  // namespace

const PeerRules& TorchRules() {
  using interop::DType;
  // PyTorch 1.13 has no uint16, uint32 or uint64 (at::fromDLPack: "Unsupported kUInt bits").
  constexpr uint32_t kUnsignedWide = DTypeBit(DType::kUInt16) | DTypeBit(DType::kUInt32) | DTypeBit(DType::kUInt64);
  constexpr uint32_t kTorch = kAllDTypes & ~kUnsignedWide;
  static const PeerRules rules{
      /*name=*/"torch",
      /*object_name=*/"torch tensor",
      /*creates=*/kClassicDTypes,
      /*export_refusal=*/"RuntimeError",
      /*exports=*/kTorch & ~DTypeBit(DType::kBool),
      /*exports_read_only=*/false,  // never asked: torch makes no read-only tensors
      /*imports_read_only=*/false,
      /*import_refusal=*/"RuntimeError",
      /*imports=*/kTorch & ~DTypeBit(DType::kBool),
      /*used_capsule_refusal=*/"RuntimeError",
      /*device_refusal=*/"RuntimeError",
      /*read_only_arrays=*/false,
      /*flavors=*/true,
      /*export_ways=*/2,
      /*contiguous_copies=*/true,
      /*reads_byte_offset=*/false,     // finding torch-from-dlpack-byte-offset-ignored (guarded)
      /*leaks_refused_exports=*/true,  // finding torch-dlpack-refused-export-leaks (guarded)
      /*leaks_empty_imports=*/true,    // finding torch-from-dlpack-empty-leaks (guarded)
      /*exports_null_when_empty=*/true,
      // expand(); torch has no negative strides (flip copies) and always exports strides
      /*layouts=*/kClassicLayouts | LayoutBit(interop::Layout::kBroadcast) | LayoutBit(interop::Layout::kUnitStrides),
      /*imports_negative_strides=*/false,  // finding torch-from-dlpack-negative-strides-abort (guarded)
      /*creates_wide=*/kTorch,
      /*stream_refusal=*/nullptr,  // Tensor.__dlpack__ synchronizes an integer stream on CUDA only
      /*int_streams_only=*/true,   // "stream must be ``int`` or ``none``"
      /*lanes_refusal=*/"RuntimeError",  // "ATen does not support lanes != 1"
  };
  return rules;
}

std::unique_ptr<Peer> MakeTorchPeer() { return std::make_unique<TorchPeer>(); }

}  // namespace lifeline::capsule
