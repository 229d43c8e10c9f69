#include "harness/programs/capsule/executor.h"

#include <string>
#include <vector>

#include "core/check.h"
#include "harness/oracles/dlpack_oracles.h"
#include "harness/programs/capsule/model.h"
#include "harness/programs/capsule/py_call.h"
#include "harness/programs/common/describe.h"
#include "harness/programs/common/oracle.h"

namespace lifeline::capsule {
namespace {

using py::Ref;

struct Python {
  Ref weakref, collect, referrers;
};

const Python& Py() {
  static const Python* p = [] {
    py::EnsureInterpreter();
    return new Python{py::Attr("weakref", "ref"), py::Attr("gc", "collect"), py::Attr("gc", "get_referrers")};
  }();
  return *p;
}

// A list that holds `view` and itself: garbage only the cycle collector frees once the program lets go.
Ref MakeCycle(PyObject* view) {
  Ref cycle = Ref::Steal(PyList_New(0));
  LIFELINE_PRECONDITION(cycle && PyList_Append(cycle.get(), view) == 0 && PyList_Append(cycle.get(), cycle.get()) == 0,
                        "making a garbage cycle failed: " + py::TakeError());
  return cycle;
}

// "refcount 2; referrers known to gc: tuple dict" — what holds `obj`, for the leak message.
std::string Holders(PyObject* obj) {
  Ref referrers = Call(Py().referrers, {obj});
  std::string out = "refcount " + std::to_string(Py_REFCNT(obj)) + "; referrers known to gc:";
  if (!referrers) return out + " unknown (" + py::TakeError() + ")";
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(referrers.get()); ++i)
    out += std::string(" ") + Py_TYPE(PyList_GET_ITEM(referrers.get(), i))->tp_name;
  return out;
}

class Executor {
 public:
  Executor(const Program& program, const Subject& subject, const std::vector<const Peer*>& peers)
      : program_(program), subject_(subject), peers_(peers), model_(RulesOf(peers)) {}
  void Run();

 private:
  Ref& Slot(SlotKind k, int i) { return slots_[static_cast<int>(k)][i]; }
  // Who reads slot `i` of kind `k`: an array's own peer, else the subject.
  const Producer& OwnerOf(SlotKind k, int i) const {
    if (k != SlotKind::kArray) return subject_;
    return *peers_[model_.node(model_.Slot(k, i)).peer];
  }
  void Step(const Op& op);
  Ref Call(const Op& op);
  void CheckOutcome(const Op& op, const Ref& result);
  void CheckValues(const Ref& list, const Content& c, const std::string& what);
  void CheckAccounting(const std::string& when);
  std::string Where() const { return programs::Where(index_, program_[index_]); }

  const Program& program_;
  const Subject& subject_;
  const std::vector<const Peer*>& peers_;
  Model model_;
  size_t index_ = 0;
  Ref slots_[static_cast<int>(SlotKind::kMaxValue) + 1][kMaxSlots];
  std::vector<Ref> cycles_;
  std::vector<Ref> array_refs_;  // weak references to the peer's arrays, by model array id
};

void Executor::CheckOutcome(const Op& op, const Ref& result) {
  if (op.expect_error.empty()) {
    LIFELINE_CHECK(result, Where() + "raised " + py::TakeError() + "; the model expects success");
    return;
  }
  LIFELINE_CHECK(!result, Where() + "succeeded; the model expects " + op.expect_error);
  std::string type = py::PendingErrorType();
  std::string error = py::TakeError();
  LIFELINE_CHECK(type == op.expect_error, Where() + "raised " + error + "; the model expects " + op.expect_error);
  LIFELINE_CHECK(error.size() > type.size() + 2, Where() + "raised " + type + " without a message");
}

// "3.5" or "3.5-2.25j".
std::string ValueText(double re, double im, bool complex) {
  std::string s = std::to_string(re);
  if (complex) s += (im < 0 ? "" : "+") + std::to_string(im) + "j";
  return s;
}

// `list` is what a party's Values() returned for `what`: it must be exactly the producer's pattern.
void Executor::CheckValues(const Ref& list, const Content& c, const std::string& what) {
  LIFELINE_CHECK(list, Where() + "reading " + what + " raised " + py::TakeError());
  LIFELINE_CHECK(PyList_Check(list.get()) && PyList_GET_SIZE(list.get()) == c.numel,
                 Where() + "value oracle: " + what + " has " + std::to_string(PyList_Size(list.get())) +
                     " elements, the producer made " + std::to_string(c.numel));
  const bool complex = interop::IsComplex(c.dtype);
  for (Py_ssize_t i = 0; i < c.numel; ++i) {
    PyObject* item = PyList_GET_ITEM(list.get(), i);
    double re = 0, im = 0;
    if (PyComplex_Check(item)) {
      re = PyComplex_RealAsDouble(item);
      im = PyComplex_ImagAsDouble(item);
    } else {
      re = PyFloat_Check(item) ? PyFloat_AS_DOUBLE(item) : static_cast<double>(PyLong_AsLong(item));
    }
    const uint64_t k = interop::PatternIndex(c.period, i);
    const double want_re = interop::PatternValue(c.dtype, c.seed, k);
    const double want_im = interop::PatternImag(c.dtype, c.seed, k);
    if (re == want_re && im == want_im) continue;
    // What the wrong value is, when it is a sign flip of the right one: a lazy negation or conjugation that
    // was lost on the way (PyTorch's negative and conjugate bits).
    std::string hint;
    if (re == -want_re && im == -want_im) hint = "; it is the negation of what the producer wrote";
    if (complex && re == want_re && im == -want_im) hint = "; it is the conjugate of what the producer wrote";
    LIFELINE_CHECK(false, Where() + "value oracle: " + what + " element " + std::to_string(i) + " reads " +
                              ValueText(re, im, complex) + ", the producer wrote " +
                              ValueText(want_re, want_im, complex) + " (" + std::string(interop::DTypeName(c.dtype)) +
                              ", seed " + std::to_string(c.seed) + ")" + hint);
  }
}

// After every op: what the model says is alive is exactly what is alive.
void Executor::CheckAccounting(const std::string& when) {
  std::vector<bool> alive = model_.Alive();
  uint64_t storages = 0, bytes = 0, buffers = 0, views = 0;
  for (size_t n = 0; n < model_.size(); ++n) {
    const Node& node = model_.node(n);
    switch (node.kind) {
      case NodeKind::kStorage: {
        auto name = [&] {
          return "storage #" + std::to_string(node.storage_id) + " (" + std::to_string(node.bytes) + " B)";
        };
        LIFELINE_CHECK_OK(programs::At(
            when, oracles::CheckHeldExactly(name, alive[n], subject_.StorageAlive(node.storage_id), [&] {
              return ", nothing the program holds refers to it (live: " + subject_.DescribeLiveStorages() + ")";
            })));
        storages += alive[n];
        bytes += alive[n] ? static_cast<uint64_t>(node.bytes) : 0;
        break;
      }
      case NodeKind::kArray: {
        PyObject* target = PyWeakref_GetObject(array_refs_[node.array_id].get());
        bool real = target != Py_None;
        auto name = [&] {
          return std::string(peers_[node.peer]->rules().object_name) + " #" + std::to_string(node.array_id);
        };
        LIFELINE_CHECK_OK(programs::At(
            when, oracles::CheckHeldExactly(name, alive[n], real, [&] { return " (" + Holders(target) + ")"; })));
        break;
      }
      case NodeKind::kBuffer: buffers += alive[n]; break;
      case NodeKind::kView: views += alive[n]; break;
      default: break;
    }
  }
  Subject::Ledger ledger = subject_.GetLedger();
  LIFELINE_CHECK_OK(programs::At(when, oracles::CheckProducerTotals(ledger.storages_live, ledger.bytes_live, storages,
                                                                    bytes,
                                                                    [&] { return subject_.DescribeLiveStorages(); })));
  LIFELINE_CHECK_OK(
      programs::At(when, oracles::CheckConsumerTotals(ledger.buffers_live, ledger.views_live, buffers, views)));
}

// The op's call into the parties: the new object, or null with the Python exception pending; a null Ref
// with nothing pending for ops that make nothing.
Ref Executor::Call(const Op& op) {
  auto src = [&](SlotKind k) { return Slot(k, op.src).get(); };
  switch (op.kind) {
    case OpKind::kCreateTensor: return subject_.Create(op.dtype, op.shape, op.layout, op.seed, op.readonly, op.flavor);
    case OpKind::kCreateArray:
      return peers_[op.peer]->Create(op.dtype, op.shape, op.layout, op.seed, op.readonly, op.flavor);
    case OpKind::kExportTensor: return subject_.Export(src(SlotKind::kTensor), 0, op.export_args);
    case OpKind::kExportArray:
      return OwnerOf(SlotKind::kArray, op.src).Export(src(SlotKind::kArray), op.via, op.export_args);
    case OpKind::kImportCapsule: return subject_.ImportCapsule(src(SlotKind::kCapsule));
    case OpKind::kImportFromTensor:
    case OpKind::kImportFromArray: return subject_.ImportFrom(src(SourceKind(op.kind)), op.contiguous);
    case OpKind::kPeerFromTensor: return peers_[op.peer]->Import(src(SlotKind::kTensor));
    case OpKind::kPeerFromCapsule: return peers_[op.peer]->ImportCapsule(src(SlotKind::kCapsule));
    case OpKind::kPeerFromArray: return peers_[op.peer]->Import(src(SlotKind::kArray));
    case OpKind::kPeerMalformed: {
      Ref capsule = subject_.MakeMalformed(op.malformed, src(SlotKind::kTensor));
      return peers_[op.peer]->ImportCapsule(capsule.get());  // the capsule dies here, refused or not
    }
    case OpKind::kViewBuffer: return subject_.ViewBuffer(src(SlotKind::kView));
    case OpKind::kMalformed: return subject_.ImportMalformed(op.malformed, src(SlotKind::kTensor));
    case OpKind::kRead: {
      const Content& c = model_.node(model_.Slot(op.slot_kind, op.src)).content;
      CheckValues(OwnerOf(op.slot_kind, op.src).Values(src(op.slot_kind)), c, Describe(op).substr(5));
      return Ref();
    }
    case OpKind::kDrop: Slot(op.slot_kind, op.src).reset(); return Ref();
    case OpKind::kMakeCycle:
      cycles_.push_back(MakeCycle(src(SlotKind::kView)));
      Slot(SlotKind::kView, op.src).reset();
      return Ref();
    case OpKind::kCollect: {
      cycles_.clear();  // the lists are now garbage, each a cycle: only the collector frees them
      Ref n = capsule::Call(Py().collect, {});
      LIFELINE_PRECONDITION(n, "gc.collect failed: " + py::TakeError());
      return Ref();
    }
  }
  return Ref();
}

void Executor::Step(const Op& op) {
  Ref result = Call(op);
  if (!HasDest(op.kind)) {
    model_.Apply(op, "");
    return;
  }
  CheckOutcome(op, result);
  model_.Apply(op, op.expect_error);  // the outcome just checked
  if (!result) return;
  SlotKind dst = DestKind(op.kind);
  Slot(dst, op.dst) = result;
  if (dst == SlotKind::kArray) {
    Ref weak = capsule::Call(Py().weakref, {result.get()});
    LIFELINE_PRECONDITION(weak, "weakref to a peer array failed: " + py::TakeError());
    array_refs_.push_back(std::move(weak));
  }
  // A new view or array is used at once, as a caller would: its memory must hold the producer's values.
  if (dst == SlotKind::kView || dst == SlotKind::kArray) {
    CheckValues(OwnerOf(dst, op.dst).Values(result.get()), model_.node(model_.Slot(dst, op.dst)).content,
                "the new " + std::string(dst == SlotKind::kView ? "view" : "array"));
  }
}

void Executor::Run() {
  Subject::Ledger start = subject_.GetLedger();
  LIFELINE_PRECONDITION(start.storages_live == 0 && start.buffers_live == 0,
                        "an earlier iteration left producer storages or imported buffers alive");
  subject_.ResetLedger();
  OpTraceScope trace(&program_, program_.size(), &programs::RenderOps<Program>);
  for (index_ = 0; index_ < program_.size(); ++index_) {
    trace.set_op(index_);
    Step(program_[index_]);
    CheckAccounting("");
  }
  // Teardown: drop every reference the program holds and collect; only parked NULL-deleter exports may
  // keep anything, and resetting the ledger releases those.
  trace.set_op(program_.size());
  for (auto& row : slots_)
    for (Ref& r : row) r.reset();
  cycles_.clear();
  model_.DropEverything();
  Ref n = capsule::Call(Py().collect, {});
  LIFELINE_PRECONDITION(n, "gc.collect failed: " + py::TakeError());
  CheckAccounting("after dropping everything: ");
  model_.ReleaseParked();
  subject_.ResetLedger();
  CheckAccounting("after the ledger reset: ");
  LIFELINE_CHECK_OK(oracles::CheckExportsReleased(subject_.GetLedger().exports_live));
}

}  // namespace

void Execute(const Program& program, const Subject& subject, const std::vector<const Peer*>& peers) {
  programs::MaybePrintProgram(program);
  Executor(program, subject, peers).Run();
}

Peers RulesOf(const std::vector<const Peer*>& peers) {
  Peers rules;
  for (const Peer* p : peers) rules.push_back(&p->rules());
  return rules;
}

}  // namespace lifeline::capsule
