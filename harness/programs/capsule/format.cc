// The capsule programs' decoder: how bytes become ops. Every choice goes through the lifetime model
// (model.h), which says what is legal now and predicts each op's exception.
#include "harness/programs/capsule/format.h"

#include "core/guards.h"
#include "harness/programs/capsule/model.h"
#include "harness/programs/common/decode.h"
#include "harness/programs/common/describe.h"

namespace lifeline::capsule {

const char* const kOpNames[] = {
    "create-tensor", "create-array", "export-tensor", "export-array", "import-capsule",
    "import-from-tensor", "import-from-array", "numpy-from-tensor", "numpy-from-capsule", "view-buffer",
    "read", "drop", "make-cycle", "collect", "malformed", "numpy-from-array", "numpy-malformed"};

namespace {

using interop::DType;
using programs::Source;
using programs::Unencodable;
using interop::Layout;
using interop::Malformed;

constexpr const char* kSlotPrefix = "tacvb";  // tensor, array, capsule, view, buffer
constexpr std::string_view kFlavorNames[] = {"plain", "conj", "neg", "requires-grad"};
constexpr std::string_view kExportArgsNames[] = {
    "", "stream=None", "stream=-1", "stream=1", "stream='1'", "max_version=(1, 0)", "dl_device=(1, 0)", "copy=False"};

// Encoding: which slot of each kind holds the object that op i made (the id form names objects by maker).
using Slots = programs::SlotBook[static_cast<int>(SlotKind::kMaxValue) + 1];

uint8_t PickSlot(Source& src, const std::vector<int>& from, const Slots& slots, SlotKind kind, uint8_t maker) {
  return static_cast<uint8_t>(
      programs::PickFrom(src, from, [&] { return slots[static_cast<int>(kind)].SlotOf(maker); }));
}

// One dtype a peer makes, from one byte: without bit 7, the k-th of `classic` (non-empty) for k the byte modulo
// its size, as the byte always read; with bit 7, the k-th of `wide` (`classic` when 0) for k the low seven bits
// modulo its size. Encoding writes a dtype of `classic` without bit 7. No allocation per op.
DType PickDType(Source& src, uint32_t classic, uint32_t wide, DType want) {
  if (wide == 0) wide = classic;
  auto index_in = [](uint32_t set, DType d) {
    return static_cast<uint8_t>(__builtin_popcount(set & (DTypeBit(d) - 1)));
  };
  const uint8_t b = src.Full<uint8_t>([&] {
    if (HasDType(classic, want)) return index_in(classic, want);
    if (!HasDType(wide, want)) throw Unencodable("a dtype this party does not make");
    return static_cast<uint8_t>(0x80 | index_in(wide, want));
  });
  const uint32_t set = (b & 0x80) != 0 ? wide : classic;
  int k = ((b & 0x80) != 0 ? b & 0x7f : b) % __builtin_popcount(set);
  for (int d = 0;; ++d)
    if (HasDType(set, static_cast<DType>(d)) && k-- == 0) return static_cast<DType>(d);
}

// The layout byte: without bit 7, one of the four classic layouts (its value modulo 4, as the byte always
// read) and exports without arguments; with bit 7, any layout (its low four bits modulo their number) and the
// export arguments its bits 4-6 name (ExportArgs). Encoding writes the classic layouts without arguments
// without bit 7, so every older input whose layout bytes lack bit 7 keeps its layouts.
Layout PickLayout(Source& src, const Op& want, ExportArgs* args) {
  constexpr int kClassic = static_cast<int>(interop::kMaxClassicLayout) + 1;
  constexpr int kAll = static_cast<int>(Layout::kMaxValue) + 1;
  static_assert(kAll <= 16 && static_cast<int>(ExportArgs::kMaxValue) < 8, "the layout byte's fields");
  const uint8_t b = src.Full<uint8_t>([&] {
    const int w = static_cast<int>(want.layout);
    const int a = static_cast<int>(want.export_args);
    return static_cast<uint8_t>(w < kClassic && a == 0 ? w : 0x80 | a << 4 | w);
  });
  if ((b & 0x80) == 0) {
    *args = ExportArgs::kNone;
    return static_cast<Layout>(b % kClassic);
  }
  *args = static_cast<ExportArgs>((b >> 4) & 7);
  return static_cast<Layout>((b & 0x0f) % kAll);
}

// The flavor a peer's tensor can have: conjugation only means something for complex, negation for signed
// numbers, grad for floating types; anything else is plain.
Flavor Applicable(Flavor f, DType d) {
  const uint8_t code = interop::ToDLDataType(d).code;  // the dtype's kind, from the one table of dtypes
  const bool complex = code == kDLComplex;
  const bool floating = complex || code == kDLFloat || code == kDLBfloat;
  const bool signed_int = code == kDLInt;
  switch (f) {
    case Flavor::kConj: return complex ? f : Flavor::kPlain;
    case Flavor::kNeg: return floating || signed_int ? f : Flavor::kPlain;
    case Flavor::kRequiresGrad: return floating ? f : Flavor::kPlain;
    case Flavor::kPlain: break;
  }
  return Flavor::kPlain;
}

bool ActsAsPeer(OpKind k) {
  return k == OpKind::kCreateArray || k == OpKind::kPeerFromTensor || k == OpKind::kPeerFromCapsule ||
         k == OpKind::kPeerFromArray || k == OpKind::kPeerMalformed;
}

// The broken exports a peer is handed: what any consumer can and must check (DLPack's Python
// specification), and the NULL deleter it must accept. A NULL data pointer, a negative or huge ndim, a NULL
// shape, negative extents and an overflowing size break the producer's side of the ABI, which a consumer
// cannot be asked to survive; this layer's consumer refuses them anyway (kMalformed).
const std::vector<Malformed> kPeerMalformedKinds = {Malformed::kWrongName, Malformed::kUsedName, Malformed::kDevice,
                                                    Malformed::kDType, Malformed::kNullDeleter,
                                                    Malformed::kLanes};

}  // namespace

SlotKind SourceKind(OpKind k) {
  switch (k) {
    case OpKind::kExportArray:
    case OpKind::kImportFromArray:
    case OpKind::kPeerFromArray: return SlotKind::kArray;
    case OpKind::kImportCapsule:
    case OpKind::kPeerFromCapsule: return SlotKind::kCapsule;
    case OpKind::kViewBuffer:
    case OpKind::kMakeCycle: return SlotKind::kView;
    default: return SlotKind::kTensor;
  }
}

SlotKind DestKind(OpKind k) {
  switch (k) {
    case OpKind::kCreateTensor: return SlotKind::kTensor;
    case OpKind::kCreateArray:
    case OpKind::kPeerFromTensor:
    case OpKind::kPeerFromCapsule:
    case OpKind::kPeerFromArray:
    case OpKind::kPeerMalformed: return SlotKind::kArray;
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

namespace {

// Which slot holds which op's object after op `i` (decoded, with the model's prediction): a request that
// succeeds fills its destination; a drop or a move into a garbage cycle empties its source.
void Track(const Op& op, size_t i, Slots& slots) {
  if (!op.expect_error.empty()) return;
  if (HasDest(op.kind)) slots[static_cast<int>(DestKind(op.kind))].Made(i, op.dst);
  if (op.kind == OpKind::kDrop) slots[static_cast<int>(op.slot_kind)].Freed(op.src);
  if (op.kind == OpKind::kMakeCycle) slots[static_cast<int>(SlotKind::kView)].Freed(op.src);
}

}  // namespace

namespace {

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src`.
Program Run(Source& src, const Peers& peers, const Program* target) {
  LIFELINE_PRECONDITION(!peers.empty() && peers.size() < 256, "capsule programs need one to 255 peers");
  Model m(peers);
  Slots slots;
  // One peer: no peer operand, no names (interop_capsule_lifecycle's format).
  auto pick_peer = [&](Op& op, const Op& want) {
    if (peers.size() < 2) return;
    op.peer = static_cast<uint8_t>(programs::Pick(src, peers.size(), [&] { return static_cast<size_t>(want.peer); }));
    op.party = peers[op.peer]->name;
  };
  // A guard hands an op to the first peer instead.
  auto hand_to_first_peer = [&](Op& op) {
    op.peer = 0;
    op.party = peers[0]->name;
  };
  auto owner = [&](const Op& op) -> const PeerRules& {
    return *peers[m.node(m.Slot(SlotKind::kArray, op.src)).peer];
  };
  auto pick_source = [&](SlotKind kind, const Op& want) {
    return PickSlot(src, m.Filled(kind), slots, kind, want.src);
  };
  // Collect is always legal.
  return programs::DecodeOps<Op>(src, kMaxOps, m, [&](Op& op, const Op& want, size_t i) {
    switch (op.kind) {
      case OpKind::kCreateTensor:
      case OpKind::kCreateArray: {
        if (op.kind == OpKind::kCreateTensor) {
          op.dtype = static_cast<DType>(src.Int<int>(0, static_cast<int>(interop::kMaxStandinDType),
                                                     [&] { return static_cast<int>(want.dtype); }));
        } else {
          pick_peer(op, want);
          op.dtype = PickDType(src, peers[op.peer]->creates, peers[op.peer]->creates_wide, want.dtype);
        }
        int ndim = src.Int<int>(0, interop::kMaxProducerNdim, [&] { return static_cast<int>(want.shape.size()); });
        for (int d = 0; d < ndim; ++d) op.shape.push_back(src.Int<int64_t>(0, kMaxDim, [&] { return want.shape[d]; }));
        op.layout = PickLayout(src, want, &op.export_args);
        // A peer makes the layouts it can (PyTorch has no negative strides, and no party but this layer's
        // producer exports NULL strides); the others contiguous.
        if (op.kind == OpKind::kCreateArray && (peers[op.peer]->layouts & LayoutBit(op.layout)) == 0)
          op.layout = Layout::kContiguous;
        op.seed = src.Full<uint8_t>([&] { return want.seed; });
        op.readonly = src.Bool([&] { return want.readonly; });
        if (op.kind == OpKind::kCreateArray) {
          const PeerRules& r = *peers[op.peer];  // the peer asked for; the guard below may hand the array on
          if (!r.read_only_arrays) op.readonly = false;
          // Guard torch-dlpack-refused-export-leaks: a torch tensor whose export torch refuses for its
          // dtype (bool) is leaked with its storage by the refusal (repro/torch-dlpack-refused-export-leaks).
          // The first peer makes that array instead.
          const uint32_t first_makes = peers[0]->creates | peers[0]->creates_wide;
          if (!HasDType(r.exports, op.dtype) && r.leaks_refused_exports && HasDType(first_makes, op.dtype) &&
              GuardHolds(Guard::kTorchDlpackRefusedExportLeaks,
                         [] { return "an array torch cannot export is made by the first peer"; })) {
            hand_to_first_peer(op);
          }
          if (peers[op.peer]->flavors) {
            op.flavor = Applicable(static_cast<Flavor>(src.Int<int>(0, static_cast<int>(Flavor::kMaxValue),
                                                                    [&] { return static_cast<int>(want.flavor); })),
                                   op.dtype);
            // Guard torch-dlpack-neg-bit-ignored: a negated view is exported as its memory, which holds
            // the negatives (repro/torch-dlpack-neg-bit-ignored). Made plain instead.
            if (op.flavor == Flavor::kNeg &&
                GuardHolds(Guard::kTorchDlpackNegBitIgnored, [] { return "a negated view is made plain"; }))
              op.flavor = Flavor::kPlain;
          }
        }
        break;
      }
      case OpKind::kExportArray: {
        op.src = pick_source(SlotKind::kArray, want);
        if (owner(op).export_ways > 1)
          op.via = static_cast<uint8_t>(programs::Pick(src, owner(op).export_ways, [&] { return static_cast<size_t>(want.via); }));
        // Guard torch-to-dlpack-conj-bit-ignored: to_dlpack exports a conjugate view's memory, which holds
        // the conjugates (repro/torch-to-dlpack-conj-bit-ignored). Exported through __dlpack__ instead.
        if (op.via != 0 && m.node(m.Slot(SlotKind::kArray, op.src)).flavor == Flavor::kConj &&
            GuardHolds(Guard::kTorchToDlpackConjBitIgnored, [] { return "a conjugate view exports via __dlpack__"; }))
          op.via = 0;
        if (op.via == 0) op.export_args = m.node(m.Slot(SlotKind::kArray, op.src)).export_args;
        break;
      }
      case OpKind::kExportTensor:
        op.src = pick_source(SlotKind::kTensor, want);
        op.export_args = m.node(m.Slot(SlotKind::kTensor, op.src)).export_args;
        break;
      case OpKind::kImportFromArray:
        op.src = pick_source(SlotKind::kArray, want);
        if (owner(op).contiguous_copies) op.contiguous = src.Bool([&] { return want.contiguous; });
        break;
      case OpKind::kPeerFromTensor:
      case OpKind::kPeerFromCapsule:
      case OpKind::kPeerFromArray:
      case OpKind::kPeerMalformed: {
        op.src = pick_source(SourceKind(op.kind), want);
        pick_peer(op, want);
        if (op.kind == OpKind::kPeerMalformed) op.malformed = programs::PickFrom(src, kPeerMalformedKinds, [&] { return want.malformed; });
        // Guard torch-from-dlpack-byte-offset-ignored: torch's from_dlpack reads from DLTensor.data and
        // drops byte_offset (repro/torch-from-dlpack-byte-offset-ignored). The first peer imports instead.
        const Node& source = m.node(m.Slot(SourceKind(op.kind), op.src));
        const Content c = op.kind == OpKind::kPeerFromArray ? m.ExportedContent(source) : source.content;
        if (!peers[op.peer]->reads_byte_offset && c.byte_offset && c.numel > 0 &&
            GuardHolds(Guard::kTorchFromDlpackByteOffsetIgnored,
                       [] { return "an export with a byte_offset is imported by the first peer"; })) {
          hand_to_first_peer(op);
        }
        // Guard torch-from-dlpack-empty-leaks: torch's from_dlpack of an export with NULL data (torch's own
        // exports without elements) never runs its deleter (repro/torch-from-dlpack-empty-leaks). The
        // first peer imports instead.
        if (peers[op.peer]->leaks_empty_imports && c.null_data &&
            GuardHolds(Guard::kTorchFromDlpackEmptyLeaks,
                       [] { return "an export with NULL data is imported by the first peer"; })) {
          hand_to_first_peer(op);
        }
        // Guard torch-from-dlpack-negative-strides-abort: torch's from_dlpack of an export with a negative
        // stride throws from a noexcept function, so the process aborts
        // (repro/torch-from-dlpack-negative-strides-abort). The first peer imports instead.
        if (!peers[op.peer]->imports_negative_strides && c.negative_strides &&
            GuardHolds(Guard::kTorchFromDlpackNegativeStridesAbort,
                       [] { return "an export with a negative stride is imported by the first peer"; })) {
          hand_to_first_peer(op);
        }
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
        op.slot_kind = programs::PickFrom(src, kinds, [&] { return want.slot_kind; });
        op.src = pick_source(op.slot_kind, want);
        break;
      }
      case OpKind::kImportFromTensor:
        op.src = pick_source(SlotKind::kTensor, want);
        op.contiguous = src.Bool([&] { return want.contiguous; });
        break;
      case OpKind::kMalformed: {
        op.src = pick_source(SlotKind::kTensor, want);
        op.malformed = static_cast<Malformed>(
            src.Int<int>(0, static_cast<int>(Malformed::kMaxValue), [&] { return static_cast<int>(want.malformed); }));
        // The two kinds that rewrite shape entries need them to exist.
        size_t ndim = m.node(m.Slot(SlotKind::kTensor, op.src)).shape.size();
        if ((op.malformed == Malformed::kOverflow && ndim < 2) || (op.malformed == Malformed::kNegativeDim && ndim < 1))
          op.malformed = Malformed::kNegativeNdim;
        break;
      }
      default:
        if (HasSource(op.kind)) op.src = pick_source(SourceKind(op.kind), want);
        break;
    }
    if (HasDest(op.kind)) op.dst = static_cast<uint8_t>(m.FreeSlot(DestKind(op.kind)));
    op.state = m.StateOf(op);
    op.expect_error = m.Predict(op);
    m.Apply(op, op.expect_error);
    if (src.encoding()) Track(op, i, slots);
  }, target);
}

}  // namespace

Program Decode(const uint8_t* data, size_t size, const Peers& peers) {
  Source src(data, size);
  return Run(src, peers, nullptr);
}

Program ToIds(const Program& program) {
  Program out = program;
  Slots slots;
  for (size_t i = 0; i < program.size(); ++i) {
    const Op& op = program[i];
    const SlotKind from = op.kind == OpKind::kRead || op.kind == OpKind::kDrop ? op.slot_kind : SourceKind(op.kind);
    if (HasSource(op.kind)) out[i].src = static_cast<uint8_t>(slots[static_cast<int>(from)].Maker(op.src));
    if (HasDest(op.kind)) out[i].dst = static_cast<uint8_t>(i);
    Track(op, i, slots);
  }
  return out;
}

bool SameOp(const Op& a, const Op& b) {
  if (a.kind != b.kind || a.peer != b.peer) return false;
  if (HasSource(a.kind) && a.src != b.src) return false;
  switch (a.kind) {
    case OpKind::kCreateTensor:
    case OpKind::kCreateArray:
      return a.dtype == b.dtype && a.shape == b.shape && a.layout == b.layout && a.seed == b.seed &&
             a.readonly == b.readonly && a.flavor == b.flavor && a.export_args == b.export_args;
    case OpKind::kExportArray: return a.via == b.via;
    case OpKind::kImportFromArray:
    case OpKind::kImportFromTensor: return a.contiguous == b.contiguous;
    case OpKind::kRead:
    case OpKind::kDrop: return a.slot_kind == b.slot_kind;
    case OpKind::kMalformed:
    case OpKind::kPeerMalformed: return a.malformed == b.malformed;
    default: return true;
  }
}

std::vector<uint8_t> Encode(const Program& target, const Peers& peers) {
  return programs::EncodeChecked(
      target, [&](Source& src) { Run(src, peers, &target); },
      [&](const std::vector<uint8_t>& b) { return ToIds(Decode(b.data(), b.size(), peers)); },
      [](const Op& a, const Op& b) { return SameOp(a, b); });
}

std::string_view FlavorName(Flavor f) { return kFlavorNames[static_cast<int>(f)]; }

std::string_view ExportArgsName(ExportArgs a) { return kExportArgsNames[static_cast<int>(a)]; }

std::optional<ExportArgs> ExportArgsFromName(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ExportArgs::kMaxValue); ++i)
    if (kExportArgsNames[i] == name) return static_cast<ExportArgs>(i);
  return std::nullopt;
}

std::string Describe(const Op& op) {
  auto slot = [](SlotKind k, int i) { return std::string(1, kSlotPrefix[static_cast<int>(k)]) + std::to_string(i); };
  std::string s = programs::NameOf(kOpNames, op.kind);
  if (op.party && ActsAsPeer(op.kind)) {  // several peers: "torch-from-capsule", "create-array (torch)"
    if (op.kind == OpKind::kCreateArray)
      s += std::string(" (") + op.party + ")";
    else
      s = op.party + s.substr(s.find('-'));
  }
  switch (op.kind) {
    case OpKind::kCreateTensor:
    case OpKind::kCreateArray: {
      s += " " + std::string(interop::DTypeName(op.dtype)) + "[";
      for (size_t i = 0; i < op.shape.size(); ++i) s += (i ? "," : "") + std::to_string(op.shape[i]);
      s += "] " + std::string(interop::LayoutName(op.layout)) + " seed=" + std::to_string(op.seed);
      if (op.readonly) s += " readonly";
      if (op.flavor != Flavor::kPlain) s += " " + std::string(FlavorName(op.flavor));
      if (op.export_args != ExportArgs::kNone)
        s += " exports __dlpack__(" + std::string(ExportArgsName(op.export_args)) + ")";
      break;
    }
    case OpKind::kRead:
    case OpKind::kDrop: s += " " + slot(op.slot_kind, op.src); break;
    case OpKind::kMalformed:
    case OpKind::kPeerMalformed:
      s += " " + std::string(interop::MalformedName(op.malformed)) + " of " + slot(SlotKind::kTensor, op.src);
      break;
    case OpKind::kCollect: break;
    default:
      s += " " + slot(SourceKind(op.kind), op.src);
      if (op.contiguous) s += " contiguous";
      if (op.via != 0) s += " via to_dlpack";
      if (op.export_args != ExportArgs::kNone) s += " __dlpack__(" + std::string(ExportArgsName(op.export_args)) + ")";
      break;
  }
  if (HasDest(op.kind)) s += " -> " + slot(DestKind(op.kind), op.dst);
  if (!op.expect_error.empty()) s += "  (raises " + op.expect_error + ")";
  return s;
}

std::string Describe(const Program& program) { return programs::DescribeNumbered(program); }

}  // namespace lifeline::capsule
