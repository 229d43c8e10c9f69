#include "harness/programs/capsule/standin/lifeline_subject.h"

#include "core/check.h"
#include "harness/programs/capsule/py_call.h"
#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/dlpack_producer.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

// The functions of the `_lifeline_interop` module the subject calls.
Ref Module(const char* name) {
  py::EnsureInterpreter();
  return py::Attr("_lifeline_interop", name);
}

class LifelineSubject final : public Subject {
 public:
  Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout, uint8_t seed,
             bool readonly, Flavor) const override {
    return CallCreate(tensor_type_, dtype, shape, layout, seed, readonly);
  }
  Ref Export(PyObject* obj, int, ExportArgs args) const override { return CallDlpack(obj, args); }
  Ref Values(PyObject* obj) const override { return CallMethod(obj, "values"); }

  Ref ImportCapsule(PyObject* capsule) const override { return Call(import_capsule_, {capsule}); }
  Ref ImportFrom(PyObject* source, bool contiguous) const override {
    Ref c = Bool(contiguous);
    return Call(import_from_, {source, c.get()});
  }
  Ref ViewBuffer(PyObject* view) const override { return CallMethod(view, "buffer"); }
  Ref MakeMalformed(interop::Malformed kind, PyObject* tensor) const override {
    Ref k = Str(interop::MalformedName(kind));
    Ref capsule = Call(malformed_, {k.get(), tensor});
    LIFELINE_PRECONDITION(capsule, "malformed_capsule failed: " + py::TakeError());
    return capsule;
  }
  Ref ImportMalformed(interop::Malformed kind, PyObject* tensor) const override {
    Ref capsule = MakeMalformed(kind, tensor);
    return Call(import_capsule_, {capsule.get()});  // a refused capsule must release its export itself
  }

  Ledger GetLedger() const override {
    interop::ProducerStats p = interop::GetProducerStats();
    interop::ConsumerStats c = interop::GetConsumerStats();
    return Ledger{p.storages_live, p.bytes_live, p.exports_live, c.buffers_live, c.views_live};
  }
  bool StorageAlive(uint64_t id) const override { return interop::StorageAlive(id); }
  std::string DescribeLiveStorages() const override { return interop::DescribeLiveStorages(); }
  void ResetLedger() const override {
    interop::ResetProducerLedger();
    interop::ResetConsumerCounters();
  }

 private:
  const Ref tensor_type_ = Module("Tensor");
  const Ref import_capsule_ = Module("import_capsule");
  const Ref import_from_ = Module("import_from");
  const Ref malformed_ = Module("malformed_capsule");
};

}  // namespace

std::unique_ptr<Subject> MakeLifelineSubject() { return std::make_unique<LifelineSubject>(); }

}  // namespace lifeline::capsule
