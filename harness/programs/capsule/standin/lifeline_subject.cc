#include "harness/programs/capsule/standin/lifeline_subject.h"

#include "core/check.h"
#include "harness/programs/capsule/py_call.h"
#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/dlpack_producer.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

struct Module {
  Ref tensor_type, import_capsule, import_from, malformed;
};

const Module& Mod() {
  static const Module* m = [] {
    py::EnsureInterpreter();
    return new Module{py::Attr("_lifeline_interop", "Tensor"), py::Attr("_lifeline_interop", "import_capsule"),
                      py::Attr("_lifeline_interop", "import_from"),
                      py::Attr("_lifeline_interop", "malformed_capsule")};
  }();
  return *m;
}

class LifelineSubject final : public Subject {
 public:
  Ref Create(interop::DType dtype, const std::vector<int64_t>& shape, interop::Layout layout, uint8_t seed,
             bool readonly) const override {
    return CallCreate(Mod().tensor_type, dtype, shape, layout, seed, readonly);
  }
  Ref Export(PyObject* obj) const override { return CallMethod(obj, "__dlpack__"); }
  Ref Values(PyObject* obj) const override { return CallMethod(obj, "values"); }

  Ref ImportCapsule(PyObject* capsule) const override { return Call(Mod().import_capsule, {capsule}); }
  Ref ImportFrom(PyObject* source, bool contiguous) const override {
    Ref c = Bool(contiguous);
    return Call(Mod().import_from, {source, c.get()});
  }
  Ref ViewBuffer(PyObject* view) const override { return CallMethod(view, "buffer"); }
  Ref ImportMalformed(interop::Malformed kind, PyObject* tensor) const override {
    Ref k = Str(interop::MalformedName(kind));
    Ref capsule = Call(Mod().malformed, {k.get(), tensor});
    LIFELINE_PRECONDITION(capsule, "malformed_capsule failed: " + py::TakeError());
    return Call(Mod().import_capsule, {capsule.get()});  // a refused capsule must release its export itself
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
};

}  // namespace

std::unique_ptr<Subject> MakeLifelineSubject() {
  Mod();
  return std::make_unique<LifelineSubject>();
}

}  // namespace lifeline::capsule
