#include "harness/programs/capsule_program.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "harness/programs/op_trace.h"
#include "layers/interop/dlpack_consumer.h"
#include "layers/interop/python_runtime.h"

namespace lifeline::capsule {
namespace {

using interop::DType;
using interop::Layout;
using interop::Malformed;

constexpr int kSlotCounts[] = {kTensorSlots, kArraySlots, kCapsuleSlots, kViewSlots, kBufferSlots};
constexpr int kMaxSlots = 6;
constexpr const char* kSlotPrefix = "tacvb";  // tensor, array, capsule, view, buffer
constexpr const char* kOpNames[] = {
    "create-tensor", "create-array", "export-tensor", "export-array", "import-capsule",
    "import-from-tensor", "import-from-array", "numpy-from-tensor", "numpy-from-capsule", "view-buffer",
    "read", "drop", "make-cycle", "collect", "malformed"};

int SlotCount(SlotKind k) { return kSlotCounts[static_cast<int>(k)]; }

// ---- the lifetime model ---------------------------------------------------------------------------

// What a producer wrote: element i of anything that shows these values is PatternValue(dtype, seed, i).
struct Content {
  DType dtype = DType::kFloat32;
  uint32_t seed = 0;
  int64_t numel = 0;
};

enum class NodeKind : uint8_t { kStorage, kTensor, kExport, kArray, kCapsule, kBuffer, kHandle, kView };

struct Node {
  NodeKind kind;
  Content content;
  std::vector<int> refs;      // what this node keeps alive
  uint64_t storage_id = 0;    // kStorage: the ledger's id
  int64_t bytes = 0;          // kStorage
  int array_id = -1;          // kArray: index into the executor's weak references
  bool contiguous = false;    // kTensor: contiguous() returns the tensor itself
  std::vector<int64_t> shape; // kTensor
  bool exportable = false;    // kArray: NumPy 1.24 exports it (not bool, not read-only)
  bool consumed = false;      // kCapsule
};

struct Model {
  std::vector<Node> nodes;
  int slots[static_cast<int>(SlotKind::kMaxValue) + 1][kMaxSlots];
  std::vector<int> cycles;  // views held only by garbage cycles
  std::vector<int> parked;  // NULL-deleter exports: alive until the ledger is reset
  uint64_t next_storage_id = 1;
  int next_array_id = 0;

  Model() {
    for (auto& row : slots)
      for (int& s : row) s = -1;
  }
  int& Slot(SlotKind k, int i) { return slots[static_cast<int>(k)][i]; }
  int FreeSlot(SlotKind k) {
    for (int i = 0; i < SlotCount(k); ++i)
      if (Slot(k, i) < 0) return i;
    return -1;
  }
  std::vector<int> Filled(SlotKind k) {
    std::vector<int> out;
    for (int i = 0; i < SlotCount(k); ++i)
      if (Slot(k, i) >= 0) out.push_back(i);
    return out;
  }
  int Add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
  int AddStorage(int64_t bytes, Content c) {
    Node n{NodeKind::kStorage, c};
    n.storage_id = next_storage_id++;
    n.bytes = bytes;
    return Add(std::move(n));
  }
  int AddArray(Content c, std::vector<int> refs, bool exportable) {
    Node n{NodeKind::kArray, c, std::move(refs)};
    n.array_id = next_array_id++;
    n.exportable = exportable;
    return Add(std::move(n));
  }
  // An import: buffer -> `target` export, view -> buffer, into view slot `dst`.
  void AddImport(int target, int dst) {
    int buffer = Add({NodeKind::kBuffer, nodes[target].content, {target}});
    Slot(SlotKind::kView, dst) = Add({NodeKind::kView, nodes[target].content, {buffer}});
  }

  // Reachable from the slots, the garbage cycles and the parked exports.
  std::vector<bool> Alive() const {
    std::vector<bool> alive(nodes.size(), false);
    std::vector<int> stack(cycles.begin(), cycles.end());
    stack.insert(stack.end(), parked.begin(), parked.end());
    for (const auto& row : slots)
      for (int s : row)
        if (s >= 0) stack.push_back(s);
    while (!stack.empty()) {
      int n = stack.back();
      stack.pop_back();
      if (alive[n]) continue;
      alive[n] = true;
      for (int r : nodes[n].refs) stack.push_back(r);
    }
    return alive;
  }

  // Applies `op` (operands already chosen) and returns the Python exception type it must raise, or "".
  std::string Apply(const Op& op);
};

int64_t StorageBytes(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  LIFELINE_PRECONDITION(placed.ok(), "the decoder made an invalid shape: " + placed.status().message());
  return placed->storage_elements * static_cast<int64_t>(interop::ItemSize(dtype));
}

bool ProducerContiguous(DType dtype, const std::vector<int64_t>& shape, Layout layout) {
  auto placed = interop::PlaceTensor(dtype, shape, layout);
  return placed.ok() && placed->desc.contiguous() && placed->desc.offset == 0;
}

std::string Model::Apply(const Op& op) {
  auto src = [&](SlotKind k) { return Slot(k, op.src); };
  switch (op.kind) {
    case OpKind::kCreateTensor: {
      int64_t numel = 1;
      for (int64_t d : op.shape) numel *= d;
      Content c{op.dtype, op.seed, numel};
      int storage = AddStorage(StorageBytes(op.dtype, op.shape, op.layout), c);
      Node t{NodeKind::kTensor, c, {storage}};
      t.contiguous = ProducerContiguous(op.dtype, op.shape, op.layout);
      t.shape = op.shape;
      Slot(SlotKind::kTensor, op.dst) = Add(std::move(t));
      return "";
    }
    case OpKind::kCreateArray: {
      int64_t numel = 1;
      for (int64_t d : op.shape) numel *= d;
      Slot(SlotKind::kArray, op.dst) =
          AddArray({op.dtype, op.seed, numel}, {}, op.dtype != DType::kBool && !op.readonly);
      return "";
    }
    case OpKind::kExportTensor: {
      const Node& t = nodes[src(SlotKind::kTensor)];
      int e = Add({NodeKind::kExport, t.content, {t.refs[0]}});
      Slot(SlotKind::kCapsule, op.dst) = Add({NodeKind::kCapsule, nodes[e].content, {e}});
      return "";
    }
    case OpKind::kExportArray: {
      int a = src(SlotKind::kArray);
      if (!nodes[a].exportable) return "BufferError";
      int e = Add({NodeKind::kExport, nodes[a].content, {a}});
      Slot(SlotKind::kCapsule, op.dst) = Add({NodeKind::kCapsule, nodes[e].content, {e}});
      return "";
    }
    case OpKind::kImportCapsule: {
      Node& c = nodes[src(SlotKind::kCapsule)];
      if (c.consumed) return "BufferError";
      c.consumed = true;
      int target = c.refs[0];
      c.refs.clear();
      AddImport(target, op.dst);
      return "";
    }
    case OpKind::kImportFromTensor: {
      const Node t = nodes[src(SlotKind::kTensor)];
      int storage = t.refs[0];
      if (op.contiguous && !t.contiguous)  // a temporary copy that only the import keeps
        storage = AddStorage(StorageBytes(t.content.dtype, t.shape, Layout::kContiguous), t.content);
      AddImport(Add({NodeKind::kExport, t.content, {storage}}), op.dst);
      return "";
    }
    case OpKind::kImportFromArray: {
      int a = src(SlotKind::kArray);
      if (!nodes[a].exportable) return "BufferError";
      AddImport(Add({NodeKind::kExport, nodes[a].content, {a}}), op.dst);
      return "";
    }
    case OpKind::kNumpyFromTensor: {
      const Node& t = nodes[src(SlotKind::kTensor)];
      if (t.content.dtype == DType::kBool) return "RuntimeError";  // NumPy 1.24: "Unsupported dtype"
      Content c = t.content;
      int e = Add({NodeKind::kExport, c, {t.refs[0]}});
      Slot(SlotKind::kArray, op.dst) = AddArray(c, {e}, false);  // from_dlpack arrays are read-only
      return "";
    }
    case OpKind::kNumpyFromCapsule: {
      Node& c = nodes[src(SlotKind::kCapsule)];
      if (c.consumed) return "ValueError";  // PyCapsule_GetPointer: incorrect name
      if (c.content.dtype == DType::kBool) return "RuntimeError";
      c.consumed = true;
      int target = c.refs[0];
      c.refs.clear();
      Slot(SlotKind::kArray, op.dst) = AddArray(c.content, {target}, false);
      return "";
    }
    case OpKind::kViewBuffer: {
      const Node& v = nodes[src(SlotKind::kView)];
      Slot(SlotKind::kBuffer, op.dst) = Add({NodeKind::kHandle, v.content, {v.refs[0]}});
      return "";
    }
    case OpKind::kRead:
    case OpKind::kCollect:
      if (op.kind == OpKind::kCollect) cycles.clear();
      return "";
    case OpKind::kDrop:
      Slot(op.slot_kind, op.src) = -1;
      return "";
    case OpKind::kMakeCycle:
      cycles.push_back(src(SlotKind::kView));
      Slot(SlotKind::kView, op.src) = -1;
      return "";
    case OpKind::kMalformed: {
      const Node& t = nodes[src(SlotKind::kTensor)];
      bool accepted = !interop::MustBeRefused(op.malformed) ||
                      (op.malformed == Malformed::kNullData && t.content.numel == 0) ||
                      (op.malformed == Malformed::kNullShape && t.shape.empty());
      if (!accepted) return "BufferError";
      int e = Add({NodeKind::kExport, t.content, {t.refs[0]}});
      if (op.malformed == Malformed::kNullDeleter) parked.push_back(e);
      AddImport(e, op.dst);
      return "";
    }
  }
  return "";
}

// ---- decoding ---------------------------------------------------------------------------------------

bool Legal(Model& m, OpKind k) {
  auto has = [&](SlotKind s) { return !m.Filled(s).empty(); };
  auto room = [&](SlotKind s) { return m.FreeSlot(s) >= 0; };
  switch (k) {
    case OpKind::kCreateTensor: return room(SlotKind::kTensor);
    case OpKind::kCreateArray: return room(SlotKind::kArray);
    case OpKind::kExportTensor: return has(SlotKind::kTensor) && room(SlotKind::kCapsule);
    case OpKind::kExportArray: return has(SlotKind::kArray) && room(SlotKind::kCapsule);
    case OpKind::kImportCapsule: return has(SlotKind::kCapsule) && room(SlotKind::kView);
    case OpKind::kImportFromTensor:
    case OpKind::kMalformed: return has(SlotKind::kTensor) && room(SlotKind::kView);
    case OpKind::kImportFromArray: return has(SlotKind::kArray) && room(SlotKind::kView);
    case OpKind::kNumpyFromTensor: return has(SlotKind::kTensor) && room(SlotKind::kArray);
    case OpKind::kNumpyFromCapsule: return has(SlotKind::kCapsule) && room(SlotKind::kArray);
    case OpKind::kViewBuffer: return has(SlotKind::kView) && room(SlotKind::kBuffer);
    case OpKind::kRead: return has(SlotKind::kTensor) || has(SlotKind::kArray) || has(SlotKind::kView);
    case OpKind::kDrop:
      for (int s = 0; s <= static_cast<int>(SlotKind::kMaxValue); ++s)
        if (has(static_cast<SlotKind>(s))) return true;
      return false;
    case OpKind::kMakeCycle: return has(SlotKind::kView);
    case OpKind::kCollect: return true;
  }
  return false;
}

// The slot kind a op reads from, for the ops with one fixed source kind.
SlotKind SourceKind(OpKind k) {
  switch (k) {
    case OpKind::kExportArray:
    case OpKind::kImportFromArray: return SlotKind::kArray;
    case OpKind::kImportCapsule:
    case OpKind::kNumpyFromCapsule: return SlotKind::kCapsule;
    case OpKind::kViewBuffer:
    case OpKind::kMakeCycle: return SlotKind::kView;
    default: return SlotKind::kTensor;
  }
}

SlotKind DestKind(OpKind k) {
  switch (k) {
    case OpKind::kCreateTensor: return SlotKind::kTensor;
    case OpKind::kCreateArray:
    case OpKind::kNumpyFromTensor:
    case OpKind::kNumpyFromCapsule: return SlotKind::kArray;
    case OpKind::kExportTensor:
    case OpKind::kExportArray: return SlotKind::kCapsule;
    case OpKind::kViewBuffer: return SlotKind::kBuffer;
    default: return SlotKind::kView;
  }
}

bool HasDest(OpKind k) {
  return k != OpKind::kRead && k != OpKind::kDrop && k != OpKind::kMakeCycle && k != OpKind::kCollect;
}
bool HasSource(OpKind k) { return k != OpKind::kCreateTensor && k != OpKind::kCreateArray && k != OpKind::kCollect; }

uint8_t Pick(FuzzedDataProvider& fdp, const std::vector<int>& from) {
  return static_cast<uint8_t>(from[fdp.ConsumeIntegralInRange<size_t>(0, from.size() - 1)]);
}

}  // namespace

Program Decode(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  Model m;
  Program program;
  for (size_t i = 0; i < kMaxOps && fdp.remaining_bytes() > 0; ++i) {
    std::vector<OpKind> legal;
    for (int k = 0; k <= static_cast<int>(OpKind::kMaxValue); ++k)
      if (Legal(m, static_cast<OpKind>(k))) legal.push_back(static_cast<OpKind>(k));
    Op op;
    op.kind = legal[fdp.ConsumeIntegralInRange<size_t>(0, legal.size() - 1)];
    switch (op.kind) {
      case OpKind::kCreateTensor:
      case OpKind::kCreateArray: {
        op.dtype = static_cast<DType>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(DType::kMaxValue)));
        int ndim = fdp.ConsumeIntegralInRange<int>(0, interop::kMaxProducerNdim);
        for (int d = 0; d < ndim; ++d) op.shape.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, kMaxDim));
        op.layout = static_cast<Layout>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(Layout::kMaxValue)));
        op.seed = fdp.ConsumeIntegral<uint8_t>();
        op.readonly = fdp.ConsumeBool();
        break;
      }
      case OpKind::kRead:
      case OpKind::kDrop: {
        std::vector<SlotKind> kinds;
        for (int s = 0; s <= static_cast<int>(SlotKind::kMaxValue); ++s) {
          auto k = static_cast<SlotKind>(s);
          bool readable = k == SlotKind::kTensor || k == SlotKind::kArray || k == SlotKind::kView;
          if (!m.Filled(k).empty() && (op.kind == OpKind::kDrop || readable)) kinds.push_back(k);
        }
        op.slot_kind = kinds[fdp.ConsumeIntegralInRange<size_t>(0, kinds.size() - 1)];
        op.src = Pick(fdp, m.Filled(op.slot_kind));
        break;
      }
      case OpKind::kImportFromTensor:
        op.src = Pick(fdp, m.Filled(SlotKind::kTensor));
        op.contiguous = fdp.ConsumeBool();
        break;
      case OpKind::kMalformed: {
        op.src = Pick(fdp, m.Filled(SlotKind::kTensor));
        op.malformed =
            static_cast<Malformed>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(Malformed::kMaxValue)));
        // The two kinds that rewrite shape entries need them to exist.
        size_t ndim = m.nodes[m.Slot(SlotKind::kTensor, op.src)].shape.size();
        if ((op.malformed == Malformed::kOverflow && ndim < 2) || (op.malformed == Malformed::kNegativeDim && ndim < 1))
          op.malformed = Malformed::kNegativeNdim;
        break;
      }
      default:
        if (HasSource(op.kind)) op.src = Pick(fdp, m.Filled(SourceKind(op.kind)));
        break;
    }
    if (HasDest(op.kind)) op.dst = static_cast<uint8_t>(m.FreeSlot(DestKind(op.kind)));
    op.expect_error = m.Apply(op);
    program.push_back(std::move(op));
  }
  return program;
}

std::string Describe(const Op& op) {
  auto slot = [](SlotKind k, int i) { return std::string(1, kSlotPrefix[static_cast<int>(k)]) + std::to_string(i); };
  std::string s = kOpNames[static_cast<int>(op.kind)];
  switch (op.kind) {
    case OpKind::kCreateTensor:
    case OpKind::kCreateArray: {
      s += " " + std::string(interop::DTypeName(op.dtype)) + "[";
      for (size_t i = 0; i < op.shape.size(); ++i) s += (i ? "," : "") + std::to_string(op.shape[i]);
      s += "] " + std::string(interop::LayoutName(op.layout)) + " seed=" + std::to_string(op.seed);
      if (op.readonly) s += " readonly";
      break;
    }
    case OpKind::kRead:
    case OpKind::kDrop: s += " " + slot(op.slot_kind, op.src); break;
    case OpKind::kMalformed:
      s += " " + std::string(interop::MalformedName(op.malformed)) + " of " + slot(SlotKind::kTensor, op.src);
      break;
    case OpKind::kCollect: break;
    default:
      s += " " + slot(SourceKind(op.kind), op.src);
      if (op.kind == OpKind::kImportFromTensor && op.contiguous) s += " contiguous";
      break;
  }
  if (HasDest(op.kind)) s += " -> " + slot(DestKind(op.kind), op.dst);
  if (!op.expect_error.empty()) s += "  (raises " + op.expect_error + ")";
  return s;
}

std::string Describe(const Program& program) {
  return DescribeNumbered(program);
}

// ---- execution ----------------------------------------------------------------------------------------

namespace {

using py::Ref;

// NumPy-side helpers, run in the embedded interpreter. `make_array` builds a NumPy-owned array whose
// logical values are the producer's pattern, in the same four layouts.
constexpr const char* kHelpers = R"PY(
import gc, weakref
import numpy as np
import _lifeline_interop as li

_NP = {"float32": np.float32, "float16": np.float16, "int8": np.int8, "bool": np.bool_}

def make_array(dtype, shape, layout, seed, readonly):
    shape = tuple(shape)
    n = 1
    for d in shape:
        n *= d
    base = np.array(li.expected_values(dtype, n, seed), dtype=_NP[dtype]).reshape(shape)
    if layout == "transposed":
        a = np.ascontiguousarray(base.T).T
    elif layout == "strided" and shape:
        a = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype=_NP[dtype])[..., ::2]
        a[...] = base
    elif layout == "offset":
        a = np.zeros(n + 3, dtype=_NP[dtype])[3:].reshape(shape)
        a[...] = base
    else:
        a = base
    if readonly:
        a.flags.writeable = False
    return a

def values(a):
    return a.reshape(-1).tolist()

def make_cycle(view):
    cycle = [view]
    cycle.append(cycle)
    return cycle
)PY";

struct Python {
  Ref tensor_type, import_capsule, import_from, holder_type, malformed;
  Ref from_dlpack, make_array, values, make_cycle, weakref, collect, referrers;
};

const Python& Py() {
  static const Python* p = [] {
    py::EnsureInterpreter();
    auto* out = new Python;
    Ref globals = Ref::Steal(PyDict_New());
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    Ref done = Ref::Steal(PyRun_String(kHelpers, Py_file_input, globals.get(), globals.get()));
    LIFELINE_PRECONDITION(done, "the capsule program's Python helpers failed: " + py::TakeError());
    auto get = [&](const char* name) { return Ref::Borrow(PyDict_GetItemString(globals.get(), name)); };
    out->make_array = get("make_array");
    out->values = get("values");
    out->make_cycle = get("make_cycle");
    out->tensor_type = py::Attr("_lifeline_interop", "Tensor");
    out->import_capsule = py::Attr("_lifeline_interop", "import_capsule");
    out->import_from = py::Attr("_lifeline_interop", "import_from");
    out->holder_type = py::Attr("_lifeline_interop", "CapsuleHolder");
    out->malformed = py::Attr("_lifeline_interop", "malformed_capsule");
    out->from_dlpack = py::Attr("numpy", "from_dlpack");
    out->weakref = py::Attr("weakref", "ref");
    out->collect = py::Attr("gc", "collect");
    out->referrers = py::Attr("gc", "get_referrers");
    return out;
  }();
  return *p;
}

Ref Call(const Ref& fn, std::initializer_list<PyObject*> args) {
  Ref tuple = Ref::Steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  Py_ssize_t i = 0;
  for (PyObject* a : args) PyTuple_SET_ITEM(tuple.get(), i++, Py_NewRef(a));
  return Ref::Steal(PyObject_Call(fn.get(), tuple.get(), nullptr));
}

Ref Str(std::string_view s) { return Ref::Steal(PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()))); }

Ref ShapeTuple(const std::vector<int64_t>& shape) {
  Ref t = Ref::Steal(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(t.get(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  return t;
}

class Executor {
 public:
  explicit Executor(const Program& program) : program_(program) {}
  void Run();

 private:
  Ref& Slot(SlotKind k, int i) { return slots_[static_cast<int>(k)][i]; }
  void Step(const Op& op);
  void CheckOutcome(const Op& op, const Ref& result);
  void CheckValues(const Ref& obj, const Content& c, const std::string& what);
  void CheckAccounting(const char* when);
  void TrackArray(const Ref& array);
  std::string Where() const { return "op " + std::to_string(index_) + " (" + Describe(program_[index_]) + "): "; }

  const Program& program_;
  Model model_;
  size_t index_ = 0;
  Ref slots_[static_cast<int>(SlotKind::kMaxValue) + 1][kMaxSlots];
  std::vector<Ref> cycles_;
  std::vector<Ref> array_refs_;  // weak references, by model array id
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

// `list` is what values() returned for `what`: it must be exactly the producer's pattern.
void Executor::CheckValues(const Ref& list, const Content& c, const std::string& what) {
  LIFELINE_CHECK(list, Where() + "reading " + what + " raised " + py::TakeError());
  LIFELINE_CHECK(PyList_Check(list.get()) && PyList_GET_SIZE(list.get()) == c.numel,
                 Where() + "value oracle: " + what + " has " + std::to_string(PyList_Size(list.get())) +
                     " elements, the producer made " + std::to_string(c.numel));
  for (Py_ssize_t i = 0; i < c.numel; ++i) {
    PyObject* item = PyList_GET_ITEM(list.get(), i);
    double got = PyFloat_Check(item) ? PyFloat_AS_DOUBLE(item) : static_cast<double>(PyLong_AsLong(item));
    double want = interop::PatternValue(c.dtype, c.seed, static_cast<uint64_t>(i));
    LIFELINE_CHECK(got == want, Where() + "value oracle: " + what + " element " + std::to_string(i) + " reads " +
                                    std::to_string(got) + ", the producer wrote " + std::to_string(want) + " (" +
                                    std::string(interop::DTypeName(c.dtype)) + ", seed " +
                                    std::to_string(c.seed) + ")");
  }
}

Ref ReadList(SlotKind kind, const Ref& obj) {
  if (kind == SlotKind::kArray) return Call(Py().values, {obj.get()});
  return Ref::Steal(PyObject_CallMethod(obj.get(), "values", nullptr));
}

// "held by: tuple, dict" — what the collector knows refers to `obj`, for the leak message.
std::string Holders(PyObject* obj) {
  Ref referrers = Call(Py().referrers, {obj});
  std::string out = "refcount " + std::to_string(Py_REFCNT(obj)) + "; referrers known to gc:";
  if (!referrers) return out + " unknown (" + py::TakeError() + ")";
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(referrers.get()); ++i)
    out += std::string(" ") + Py_TYPE(PyList_GET_ITEM(referrers.get(), i))->tp_name;
  return out;
}

void Executor::TrackArray(const Ref& array) {
  Ref weak = Call(Py().weakref, {array.get()});
  LIFELINE_PRECONDITION(weak, "weakref to a NumPy array failed: " + py::TakeError());
  array_refs_.push_back(std::move(weak));
}

// After every op: what the model says is alive is exactly what is alive. Producer bytes held with no
// user left is the leak of iree-dlpack-import-leak; storage freed under a user is a premature release.
void Executor::CheckAccounting(const char* when) {
  std::vector<bool> alive = model_.Alive();
  interop::ProducerStats p = interop::GetProducerStats();
  uint64_t storages = 0, bytes = 0, buffers = 0, views = 0;
  for (size_t n = 0; n < model_.nodes.size(); ++n) {
    const Node& node = model_.nodes[n];
    switch (node.kind) {
      case NodeKind::kStorage: {
        bool real = interop::StorageAlive(node.storage_id);
        std::string name = "storage #" + std::to_string(node.storage_id) + " (" + std::to_string(node.bytes) + " B)";
        LIFELINE_CHECK(!real || alive[n], std::string(when) + "accounting oracle: producer bytes still held after every "
                                              "user is gone: " + name + " is alive, nothing the program holds "
                                              "refers to it (live: " + interop::DescribeLiveStorages() + ")");
        LIFELINE_CHECK(real || !alive[n], std::string(when) + "accounting oracle: " + name +
                                              " was freed while the program still holds a user of it");
        storages += alive[n];
        bytes += alive[n] ? static_cast<uint64_t>(node.bytes) : 0;
        break;
      }
      case NodeKind::kArray: {
        PyObject* target = PyWeakref_GetObject(array_refs_[node.array_id].get());
        bool real = target != Py_None;
        std::string name = "NumPy array #" + std::to_string(node.array_id);
        LIFELINE_CHECK(!real || alive[n], std::string(when) + "accounting oracle: producer bytes still held after "
                                              "every user is gone: " + name + " is alive (" + Holders(target) + ")");
        LIFELINE_CHECK(real || !alive[n], std::string(when) + "accounting oracle: " + name +
                                              " was freed while the program still holds a user of it");
        break;
      }
      case NodeKind::kBuffer: buffers += alive[n]; break;
      case NodeKind::kView: views += alive[n]; break;
      default: break;
    }
  }
  LIFELINE_CHECK(p.storages_live == storages && p.bytes_live == bytes,
                 std::string(when) + "accounting oracle: the producer holds " + std::to_string(p.storages_live) +
                     " storages / " + std::to_string(p.bytes_live) + " B, the model " + std::to_string(storages) +
                     " / " + std::to_string(bytes) + " B (live: " + interop::DescribeLiveStorages() + ")");
  interop::ConsumerStats c = interop::GetConsumerStats();
  LIFELINE_CHECK(c.buffers_live <= buffers && c.views_live <= views,
                 std::string(when) + "accounting oracle: consumer buffers still held after every user is gone: " +
                     std::to_string(c.buffers_live) + " imported buffers / " + std::to_string(c.views_live) +
                     " views alive, the model expects " + std::to_string(buffers) + " / " + std::to_string(views));
  LIFELINE_CHECK(c.buffers_live == buffers && c.views_live == views,
                 std::string(when) + "accounting oracle: consumer buffers or views were freed while the program "
                     "still holds them: " + std::to_string(c.buffers_live) + " imported buffers / " +
                     std::to_string(c.views_live) + " views alive, the model expects " + std::to_string(buffers) +
                     " / " + std::to_string(views));
}

void Executor::Step(const Op& op) {
  const Python& P = Py();
  auto src = [&](SlotKind k) -> Ref& { return Slot(k, op.src); };
  auto content_of = [&](SlotKind k, int i) { return model_.nodes[model_.Slot(k, i)].content; };
  Ref result;
  switch (op.kind) {
    case OpKind::kCreateTensor:
    case OpKind::kCreateArray: {
      Ref dtype = Str(interop::DTypeName(op.dtype));
      Ref shape = ShapeTuple(op.shape);
      Ref layout = Str(interop::LayoutName(op.layout));
      Ref seed = Ref::Steal(PyLong_FromLong(op.seed));
      Ref readonly = Ref::Borrow(op.readonly ? Py_True : Py_False);
      result = Call(op.kind == OpKind::kCreateTensor ? P.tensor_type : P.make_array,
                    {dtype.get(), shape.get(), layout.get(), seed.get(), readonly.get()});
      break;
    }
    case OpKind::kExportTensor:
    case OpKind::kExportArray:
      result = Ref::Steal(PyObject_CallMethod(src(SourceKind(op.kind)).get(), "__dlpack__", nullptr));
      break;
    case OpKind::kImportCapsule: result = Call(P.import_capsule, {src(SlotKind::kCapsule).get()}); break;
    case OpKind::kImportFromTensor:
    case OpKind::kImportFromArray: {
      Ref contiguous = Ref::Borrow(op.contiguous ? Py_True : Py_False);
      result = Call(P.import_from, {src(SourceKind(op.kind)).get(), contiguous.get()});
      break;
    }
    case OpKind::kNumpyFromTensor: result = Call(P.from_dlpack, {src(SlotKind::kTensor).get()}); break;
    case OpKind::kNumpyFromCapsule: {
      Ref holder = Call(P.holder_type, {src(SlotKind::kCapsule).get()});
      LIFELINE_PRECONDITION(holder, "CapsuleHolder failed: " + py::TakeError());
      result = Call(P.from_dlpack, {holder.get()});
      break;
    }
    case OpKind::kViewBuffer: result = Ref::Steal(PyObject_CallMethod(src(SlotKind::kView).get(), "buffer", nullptr)); break;
    case OpKind::kRead:
      CheckValues(ReadList(op.slot_kind, src(op.slot_kind)), content_of(op.slot_kind, op.src), Describe(op).substr(5));
      break;
    case OpKind::kDrop: src(op.slot_kind).reset(); break;
    case OpKind::kMakeCycle: {
      Ref cycle = Call(P.make_cycle, {src(SlotKind::kView).get()});
      LIFELINE_PRECONDITION(cycle, "make_cycle failed: " + py::TakeError());
      cycles_.push_back(std::move(cycle));
      src(SlotKind::kView).reset();
      break;
    }
    case OpKind::kCollect: {
      cycles_.clear();  // the lists are now garbage, each a cycle: only the collector frees them
      Ref n = Call(P.collect, {});
      LIFELINE_PRECONDITION(n, "gc.collect failed: " + py::TakeError());
      break;
    }
    case OpKind::kMalformed: {
      Ref kind = Str(interop::MalformedName(op.malformed));
      Ref capsule = Call(P.malformed, {kind.get(), src(SlotKind::kTensor).get()});
      LIFELINE_PRECONDITION(capsule, "malformed_capsule failed: " + py::TakeError());
      result = Call(P.import_capsule, {capsule.get()});
      break;  // the capsule dies here: a refused one must release its export by itself
    }
  }
  bool makes_object = HasDest(op.kind);
  if (makes_object) CheckOutcome(op, result);
  std::string expect = model_.Apply(op);
  LIFELINE_PRECONDITION(expect == op.expect_error, Where() + "the model replayed differently than it decoded");
  if (!makes_object || !result) return;
  SlotKind dst = DestKind(op.kind);
  Slot(dst, op.dst) = result;
  if (dst == SlotKind::kArray) TrackArray(result);
  // A new view or array is used at once, as a caller would: its memory must hold the producer's values.
  if (dst == SlotKind::kView || dst == SlotKind::kArray)
    CheckValues(ReadList(dst, result), content_of(dst, op.dst), "the new " + std::string(dst == SlotKind::kView ? "view" : "array"));
}

void Executor::Run() {
  LIFELINE_PRECONDITION(interop::GetProducerStats().storages_live == 0 && interop::GetConsumerStats().buffers_live == 0,
                        "an earlier iteration left producer storages or imported buffers alive");
  interop::ResetProducerLedger();
  interop::ResetConsumerCounters();
  OpTraceScope trace(&program_, program_.size(), &RenderOps<Program>);
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
  for (auto& row : model_.slots)
    for (int& s : row) s = -1;
  cycles_.clear();
  model_.cycles.clear();
  Ref n = Call(Py().collect, {});
  LIFELINE_PRECONDITION(n, "gc.collect failed: " + py::TakeError());
  CheckAccounting("after dropping everything: ");
  model_.parked.clear();
  interop::ResetProducerLedger();
  CheckAccounting("after the ledger reset: ");
  interop::ProducerStats p = interop::GetProducerStats();
  LIFELINE_CHECK(p.exports_live == 0, "DLPack ownership: " + std::to_string(p.exports_live) +
                                          " exports were never released (their deleter never ran)");
}

}  // namespace

void Execute(const Program& program) {
  if (TraceRequested()) RenderOps<Program>(&program, program.size(), stderr);
  Executor(program).Run();
}

}  // namespace lifeline::capsule
