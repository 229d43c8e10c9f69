// The capsule programs' decoder: how bytes become ops. Every choice goes through the lifetime model
// (model.h), which says what is legal now and predicts each op's exception.
#include "harness/programs/capsule/format.h"

#include <fuzzer/FuzzedDataProvider.h>

#include "harness/programs/capsule/model.h"
#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"

namespace lifeline::capsule {
namespace {

using interop::DType;
using interop::Layout;
using interop::Malformed;

constexpr const char* kSlotPrefix = "tacvb";  // tensor, array, capsule, view, buffer
constexpr const char* kOpNames[] = {
    "create-tensor", "create-array", "export-tensor", "export-array", "import-capsule",
    "import-from-tensor", "import-from-array", "numpy-from-tensor", "numpy-from-capsule", "view-buffer",
    "read", "drop", "make-cycle", "collect", "malformed"};

uint8_t PickSlot(FuzzedDataProvider& fdp, const std::vector<int>& from) {
  return static_cast<uint8_t>(programs::PickFrom(fdp, from));
}

}  // namespace

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

Program Decode(const uint8_t* data, size_t size, const PeerRules& peer) {
  FuzzedDataProvider fdp(data, size);
  Model m(peer);
  // Collect is always legal.
  return programs::DecodeOps<Op>(fdp, kMaxOps, m, [&](Op& op) {
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
          if (m.AnyFilled(k) && (op.kind == OpKind::kDrop || readable)) kinds.push_back(k);
        }
        op.slot_kind = programs::PickFrom(fdp, kinds);
        op.src = PickSlot(fdp, m.Filled(op.slot_kind));
        break;
      }
      case OpKind::kImportFromTensor:
        op.src = PickSlot(fdp, m.Filled(SlotKind::kTensor));
        op.contiguous = fdp.ConsumeBool();
        break;
      case OpKind::kMalformed: {
        op.src = PickSlot(fdp, m.Filled(SlotKind::kTensor));
        op.malformed =
            static_cast<Malformed>(fdp.ConsumeIntegralInRange<int>(0, static_cast<int>(Malformed::kMaxValue)));
        // The two kinds that rewrite shape entries need them to exist.
        size_t ndim = m.node(m.Slot(SlotKind::kTensor, op.src)).shape.size();
        if ((op.malformed == Malformed::kOverflow && ndim < 2) || (op.malformed == Malformed::kNegativeDim && ndim < 1))
          op.malformed = Malformed::kNegativeNdim;
        break;
      }
      default:
        if (HasSource(op.kind)) op.src = PickSlot(fdp, m.Filled(SourceKind(op.kind)));
        break;
    }
    if (HasDest(op.kind)) op.dst = static_cast<uint8_t>(m.FreeSlot(DestKind(op.kind)));
    op.expect_error = m.Predict(op);
    m.Apply(op, op.expect_error);
  });
}

std::string Describe(const Op& op) {
  auto slot = [](SlotKind k, int i) { return std::string(1, kSlotPrefix[static_cast<int>(k)]) + std::to_string(i); };
  std::string s = programs::NameOf(kOpNames, op.kind);
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

std::string Describe(const Program& program) { return programs::DescribeNumbered(program); }

}  // namespace lifeline::capsule
