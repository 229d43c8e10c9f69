#include "harness/programs/graph/mutator.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "harness/programs/common/source.h"

namespace lifeline::graphs {
namespace {

using alloc::Op;

// Every operand of a program in id form that names a step (format.h, ToIds), at or after `at`, moved by one:
// what inserting a step at `at` asks of the steps around it.
void MakeRoomAt(Program& p, int at) {
  auto move = [at](int& id) {
    if (id >= at) ++id;
  };
  for (Step& s : p.steps) {
    move(s.graph);
    move(s.tensor_index);
    move(s.new_src);
    move(s.tensor.src[0]);
    move(s.tensor.src[1]);
    move(s.tensor.external_tensor);
    move(s.tensor.external_graph);
  }
}

bool Derived(StepKind k) { return k == StepKind::kUnary || k == StepKind::kBinary || k == StepKind::kCopy; }

// The steps `take` holds for, by position.
template <typename Pred>
std::vector<int> StepsWhere(const Program& p, Pred take) {
  std::vector<int> out;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (take(p.steps[i], static_cast<int>(i))) out.push_back(static_cast<int>(i));
  }
  return out;
}

// The position of the seal of the graph whose build steps carry `graph` (id form), or the end while it is open.
int GraphEnd(const Program& p, int graph) { return graph >= 0 ? graph : static_cast<int>(p.steps.size()); }

class Editor {
 public:
  Editor(Program& p, uint32_t seed) : p_(p), rng_(seed) {}

  // One edit of the kind drawn; false when the program has nothing that kind of edit applies to.
  bool Edit() {
    switch (Below(13)) {
      case 0: return ToggleFlag();
      case 1: return FlipFunction();
      case 2: return MoveSource();
      case 3: return AddReader();
      case 4: return Duplicate();
      case 5: return ToggleOption();
      case 6: return AddReshape();
      case 7: return AddBinary();
      case 8: return AddInPlaceUpdate();
      case 9: return ToggleLeaf();
      case 10: return AddViewProduct();
      case 11: return AddReplacement();
      default: return ChangeThreads();
    }
  }

 private:
  int Below(size_t n) { return static_cast<int>(std::uniform_int_distribution<size_t>(0, n - 1)(rng_)); }
  bool Coin() { return Below(2) == 0; }
  int PickOf(const std::vector<int>& from) { return from[static_cast<size_t>(Below(from.size()))]; }

  // The steps that add a tensor a later step of its graph may read: a grow's tensor is made after its graph is
  // sealed, so nothing may read it.
  std::vector<int> Readable() const {
    return StepsWhere(p_, [](const Step& s, int) { return AddsTensor(s.kind) && s.kind != StepKind::kGrow; });
  }

  // The CPU mark of a unary, binary or copy op that is not in place (an in-place op computes where its memory
  // is), or the in-place flag of a unary or binary one (which then loses its mark).
  bool ToggleFlag() {
    const bool cpu = Coin();
    std::vector<int> ops = StepsWhere(p_, [&](const Step& s, int) {
      return cpu ? Derived(s.kind) && !s.tensor.inplace : (s.kind == StepKind::kUnary || s.kind == StepKind::kBinary);
    });
    if (ops.empty()) return false;
    TensorSpec& t = p_.steps[static_cast<size_t>(PickOf(ops))].tensor;
    if (cpu) {
      t.cpu = !t.cpu;
    } else {
      t.inplace = !t.inplace;
      t.cpu = t.cpu && !t.inplace;
    }
    return true;
  }

  // A leaf's input flag or its memory from outside toggled: where a scheduler places a leaf's readers follows
  // from them (ggml_backend_sched gives an input the CPU and a leaf with memory its buffer's backend, and the
  // readers go where their sources are).
  bool ToggleLeaf() {
    std::vector<int> leafs = StepsWhere(p_, [](const Step& s, int) { return s.kind == StepKind::kLeaf; });
    if (leafs.empty()) return false;
    TensorSpec& t = p_.steps[static_cast<size_t>(PickOf(leafs))].tensor;
    bool& flag = Coin() ? t.input : t.preallocated;
    flag = !flag;
    return true;
  }

  // add <-> mul, scale <-> neg.
  bool FlipFunction() {
    std::vector<int> ops = StepsWhere(p_, [](const Step& s, int) {
      return s.kind == StepKind::kUnary || s.kind == StepKind::kBinary;
    });
    if (ops.empty()) return false;
    TensorSpec& t = p_.steps[static_cast<size_t>(PickOf(ops))].tensor;
    switch (t.op) {
      case Op::kAdd: t.op = Op::kMul; break;
      case Op::kMul: t.op = Op::kAdd; break;
      case Op::kScale: t.op = Op::kNeg; break;
      default:
        t.op = Op::kScale;
        t.param = 2.0f;  // one of the format's factors
        break;
    }
    return true;
  }

  // A source of an op that adds a tensor, moved to another tensor of the same graph made before the op.
  bool MoveSource() {
    std::vector<int> ops =
        StepsWhere(p_, [](const Step& s, int) { return AddsTensor(s.kind) && s.tensor.src[0] >= 0; });
    if (ops.empty()) return false;
    const int i = PickOf(ops);
    Step& s = p_.steps[static_cast<size_t>(i)];
    const int slot = s.tensor.src[1] >= 0 && Coin() ? 1 : 0;
    std::vector<int> others = StepsWhere(p_, [&](const Step& o, int j) {
      return j < i && AddsTensor(o.kind) && o.graph == s.graph && j != s.tensor.src[slot];
    });
    if (others.empty()) return false;
    s.tensor.src[slot] = PickOf(others);
    return true;
  }

  // A unary op reading a tensor, inserted anywhere after it while its graph is open, and marked an output half
  // the time (so that something reads it).
  bool AddReader() {
    std::vector<int> tensors = Readable();
    if (tensors.empty()) return false;
    const int j = PickOf(tensors);
    const int at = j + 1 + Below(static_cast<size_t>(GraphEnd(p_, p_.steps[static_cast<size_t>(j)].graph) - j));
    Step reader = UnaryOf(j);
    reader.tensor.cpu = Coin();
    Insert(at, reader);
    if (Coin()) MarkOutput(at);
    return true;
  }

  // A tensor x updated in place and read around the update, the steps inserted right after x: x's value
  // through a state that changes (a residual or a cache updated in place, then read). Half the time a read after
  // the write (w = f(x); x = x op w in place; r = g(x)), half the time a write after a read that waits on another
  // op (w = f(x); r = w op x; x = h(x) in place). Both the write and r are outputs, in that order: a graph holds
  // only what its outputs reach, and llama.cpp expands a cache's writes into its graph the same way. In both, one
  // op of the pair waits on w and the other does not: an executor that reorders nodes by their sources alone may
  // run them the wrong way round.
  bool AddInPlaceUpdate() {
    std::vector<int> tensors = Readable();
    if (tensors.empty()) return false;
    const int x = PickOf(tensors);
    const int w = x + 1;
    Insert(w, UnaryOf(x));
    Step binary;
    binary.kind = StepKind::kBinary;
    binary.tensor.op = Coin() ? Op::kAdd : Op::kMul;
    Step second = UnaryOf(x);
    if (Coin()) {
      binary.tensor.src[0] = x;
      binary.tensor.src[1] = w;
      binary.tensor.inplace = true;
    } else {
      binary.tensor.src[0] = w;
      binary.tensor.src[1] = x;
      second.tensor.inplace = true;
    }
    Insert(w + 1, binary);
    MarkOutput(w + 1);
    Insert(w + 3, second);
    MarkOutput(w + 3);
    return true;
  }

  // A mul_mat reading a 1-D view of a float32 tensor x, as attention reads a slice of a cache (K times q), the
  // steps inserted right after x: v = view of k elements of x from element o; m = mul_mat(v, u), where u is v
  // itself or a second view of x of the same length at its own offset (a query read from the same buffer); m an
  // output. The length and offsets are any the format allows (format_steps.cc, kView), so most views start at an
  // element offset that is not a multiple of a device's storage-buffer alignment, as a sliding window does.
  bool AddViewProduct() {
    std::vector<int> tensors;
    for (int j : Readable()) {
      const TensorSpec& t = p_.steps[static_cast<size_t>(j)].tensor;
      if (t.type == alloc::DType::kF32 && t.ne[0] * t.ne[1] >= 2) tensors.push_back(j);
    }
    if (tensors.empty()) return false;
    const int x = PickOf(tensors);
    const int64_t n = p_.steps[static_cast<size_t>(x)].tensor.ne[0] * p_.steps[static_cast<size_t>(x)].tensor.ne[1];
    const int64_t k = 1 + Below(static_cast<size_t>(n - 1));  // at most n - 1: some offset is not 0
    auto view_of_x = [&] {
      Step v;
      v.kind = StepKind::kView;
      v.tensor.op = Op::kView;
      v.tensor.src[0] = x;
      v.tensor.ne[0] = k;
      v.tensor.view_offset = Below(static_cast<size_t>(n - k + 1));
      return v;
    };
    Insert(x + 1, view_of_x());
    int u = x + 1;
    if (Coin()) Insert(++u, view_of_x());
    Step product;
    product.kind = StepKind::kMatMul;
    product.tensor.op = Op::kMulMat;
    product.tensor.src[0] = x + 1;
    product.tensor.src[1] = u;
    Insert(u + 1, product);
    MarkOutput(u + 1);
    return true;
  }

  // A graph placed and computed once more right after one of its placements, one of its leafs given memory from
  // outside or taken it back in between: llama.cpp computes a graph of the same shape at every decode, and where a
  // leaf's bytes live (a weight, a cache) may change between computes. Where a scheduler places the graph, its
  // nodes then change backend from one placement to the next.
  bool AddReplacement() {
    std::vector<int> allocs = StepsWhere(p_, [](const Step& s, int) { return s.kind == StepKind::kAlloc; });
    if (allocs.empty()) return false;
    const int i = PickOf(allocs);
    const Step placed = p_.steps[static_cast<size_t>(i)];
    std::vector<int> leafs = StepsWhere(p_, [&](const Step& s, int) {
      return s.kind == StepKind::kLeaf && s.graph == placed.graph;
    });
    if (leafs.empty()) return false;
    Step toggle;
    toggle.kind = StepKind::kTogglePrealloc;
    toggle.graph = placed.graph;  // the seal's index, before i: the insertions do not move it
    toggle.tensor_index = PickOf(leafs);
    Step again;
    again.kind = StepKind::kAlloc;
    again.graph = placed.graph;
    again.allocator = placed.allocator;
    InsertStep(i + 1, toggle);
    InsertStep(i + 2, again);
    return true;
  }

  // A reshape of all of a tensor (a view of its memory), inserted right after it.
  bool AddReshape() {
    std::vector<int> tensors = Readable();
    if (tensors.empty()) return false;
    const int j = PickOf(tensors);
    Step view;
    view.kind = StepKind::kView;
    view.tensor.op = Op::kReshape;
    view.tensor.src[0] = j;
    Insert(j + 1, view);
    return true;
  }

  // An add or mul of a tensor and another of its graph (half the time a view of the first, as an op that
  // updates a tensor from a view of itself), in place half the time, inserted right after the later of the
  // two. The format declines a second operand of another shape or type.
  bool AddBinary() {
    std::vector<int> tensors = Readable();
    if (tensors.empty()) return false;
    const int j = PickOf(tensors);
    const int graph = p_.steps[static_cast<size_t>(j)].graph;
    std::vector<int> views = StepsWhere(p_, [&](const Step& s, int) {
      return s.kind == StepKind::kView && s.tensor.src[0] == j;
    });
    std::vector<int> others;
    for (int k : tensors) {
      if (k != j && p_.steps[static_cast<size_t>(k)].graph == graph) others.push_back(k);
    }
    if (views.empty() && others.empty()) return false;
    const int k = !views.empty() && (others.empty() || Coin()) ? PickOf(views) : PickOf(others);
    Step op;
    op.kind = StepKind::kBinary;
    op.tensor.op = Coin() ? Op::kAdd : Op::kMul;
    op.tensor.src[0] = j;
    op.tensor.src[1] = k;
    op.tensor.inplace = Coin();
    Insert(std::max(j, k) + 1, op);
    return true;
  }

  // `s`, whose graph is that of its first source, inserted as step `at` of a graph still open there.
  void Insert(int at, Step s) {
    const int graph = p_.steps[static_cast<size_t>(s.tensor.src[0])].graph;
    if (s.tensor.src[0] >= at) ++s.tensor.src[0];
    if (s.tensor.src[1] >= at) ++s.tensor.src[1];
    s.graph = graph >= at ? graph + 1 : graph;
    s.tensor_index = at;
    InsertStep(at, s);
  }

  // `s` as step `at`, every operand of the program's steps at or after `at` moved by one first; `s`'s own operands
  // name steps as they are numbered after the insertion. (MarkOutput and Duplicate read their operands from the
  // program once it has made room instead.)
  void InsertStep(int at, const Step& s) {
    MakeRoomAt(p_, at);
    p_.steps.insert(p_.steps.begin() + at, s);
  }

  // A scale by 0.5 or a neg of step `src` (not yet inserted).
  Step UnaryOf(int src) {
    Step s;
    s.kind = StepKind::kUnary;
    s.tensor.op = Coin() ? Op::kNeg : Op::kScale;
    s.tensor.param = s.tensor.op == Op::kScale ? 0.5f : 0.0f;
    s.tensor.src[0] = src;
    return s;
  }

  // An output mark of the tensor step `at` adds, inserted right after it.
  void MarkOutput(int at) {
    MakeRoomAt(p_, at + 1);
    Step mark;
    mark.kind = StepKind::kMarkOutput;
    mark.graph = p_.steps[static_cast<size_t>(at)].graph;  // the tensor's, moved past the mark
    mark.tensor_index = at;
    p_.steps.insert(p_.steps.begin() + at + 1, mark);
  }

  // An op that adds a tensor, once more right after itself.
  bool Duplicate() {
    std::vector<int> ops = StepsWhere(p_, [](const Step& s, int) { return AddsTensor(s.kind); });
    if (ops.empty()) return false;
    const int i = PickOf(ops);
    MakeRoomAt(p_, i + 1);
    Step copy = p_.steps[static_cast<size_t>(i)];  // its operands already moved
    copy.tensor_index = i + 1;
    p_.steps.insert(p_.steps.begin() + i + 1, copy);
    return true;
  }

  // One of the options that draw no step (format.h, Program).
  bool ToggleOption() {
    bool* options[] = {&p_.weights, &p_.shared_pool, &p_.reuse, &p_.chunked, &p_.unplanned_allocs, &p_.scheduled};
    bool& o = *options[Below(sizeof(options) / sizeof(options[0]))];
    o = !o;
    return true;
  }

  bool ChangeThreads() {
    AllocatorSpec& a = p_.allocators[Below(kAllocators)];
    const int was = a.cpu_threads;
    a.cpu_threads = 1 + Below(kMaxCpuThreads - 1);
    if (a.cpu_threads >= was) ++a.cpu_threads;
    return true;
  }

  Program& p_;
  std::mt19937 rng_;
};

}  // namespace

size_t MutateProgram(uint8_t* data, size_t size, size_t max_size, uint32_t seed, const AllocatorRules& rules) {
  Program p = ToIds(Decode(data, size, rules));
  Editor editor(p, seed);
  if (!editor.Edit()) return 0;
  std::vector<uint8_t> bytes;
  try {
    bytes = Encode(p, rules);
  } catch (const programs::Unencodable& e) {
    return 0;  // the format cannot write this edit (format.h, Encode)
  }
  if (bytes.empty() || bytes.size() > max_size) return 0;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace lifeline::graphs
