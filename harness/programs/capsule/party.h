// The two DLPack parties the capsule executor (executor.h) drives, each an interface with its
// implementations in their own files:
//   Subject  the producer and consumer under test, where the documented bugs live:
//              standin/lifeline_subject.cc   this layer's Tensor and IREE-shaped consumer
//                                            (layers/interop: iree-dlpack-import-leak,
//                                            turbine-capsule-rename-back)
//   Peer     a DLPack library on the other side, producer and consumer at once:
//              upstream/numpy_peer.cc        NumPy 1.24 (numpy.from_dlpack, ndarray.__dlpack__)
//              upstream/torch_peer.cc        PyTorch 1.13 (torch.from_dlpack, Tensor.__dlpack__,
//                                            torch.utils.dlpack.to_dlpack)
// A peer is one new file: its operations below and its PeerRules (format.h), which the decoder and the
// lifetime model use to predict what it refuses.
//
// Every operation returns a new reference, or a null py::Ref with the Python exception pending (the
// executor checks its type against the model's prediction).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/programs/capsule/format.h"
#include "layers/interop/python_runtime.h"

namespace lifeline::capsule {

// What both parties do as producers.
class Producer {
 public:
  virtual ~Producer() = default;
  // An object holding the producer pattern (PatternValue(dtype, seed, i) at logical element i) in
  // `layout`; read-only when `readonly`; presenting its values as `flavor` says (parties without flavors
  // are only asked for kPlain).
  virtual py::Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout,
                         uint8_t seed, bool readonly, Flavor flavor) const = 0;
  // A "dltensor" capsule: obj.__dlpack__(<args>) for `via` 0, the party's module function for 1 (only parties
  // whose rules have export_ways 2 are asked for it).
  virtual py::Ref Export(PyObject* obj, int via, ExportArgs args) const = 0;
  // The logical elements of one of its objects (or of what it imported), in C order, as a list.
  virtual py::Ref Values(PyObject* obj) const = 0;
};

class Peer : public Producer {
 public:
  virtual const PeerRules& rules() const = 0;
  // from_dlpack(obj) of any object with __dlpack__.
  virtual py::Ref Import(PyObject* producer) const = 0;
  // from_dlpack of a capsule (however the peer takes one).
  virtual py::Ref ImportCapsule(PyObject* capsule) const = 0;
};

class Subject : public Producer {
 public:
  // ---- the consumer: imports make views (kept alive by their buffer) ----
  virtual py::Ref ImportCapsule(PyObject* capsule) const = 0;
  // The Python-side wrapper: imports source.__dlpack__(), through a contiguous temporary when asked.
  virtual py::Ref ImportFrom(PyObject* source, bool contiguous) const = 0;
  // view.buffer(): a second owner of the view's imported buffer.
  virtual py::Ref ViewBuffer(PyObject* view) const = 0;
  // Imports a deliberately broken export of `tensor`; the capsule is gone when this returns.
  virtual py::Ref ImportMalformed(interop::Malformed kind, PyObject* tensor) const = 0;
  // The broken export itself, for a peer to import (a new capsule; never null).
  virtual py::Ref MakeMalformed(interop::Malformed kind, PyObject* tensor) const = 0;

  // ---- what the accounting oracle observes ----
  struct Ledger {
    uint64_t storages_live = 0;
    uint64_t bytes_live = 0;
    uint64_t exports_live = 0;  // made, deleter not yet run
    uint64_t buffers_live = 0;  // imported buffers
    uint64_t views_live = 0;
  };
  virtual Ledger GetLedger() const = 0;
  // Whether the producer storage with ledger id `id` (1, 2, ... in creation order since the last reset)
  // is still alive, and the live ones described ("storage #3 (96 B, 2 refs), ...").
  virtual bool StorageAlive(uint64_t id) const = 0;
  virtual std::string DescribeLiveStorages() const = 0;
  // Starts an iteration's ledger (storage ids from 1, counters zero); at the end, releases the exports
  // NULL-deleter capsules parked.
  virtual void ResetLedger() const = 0;
};

}  // namespace lifeline::capsule
