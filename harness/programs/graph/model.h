// The graph programs' model: the graphs as specs, which allocator each graph is bound to, and what is
// placed where. The decoder (format.cc) asks it which steps are legal now and where their operands may
// come from, and hands it each step it decodes; the model says what the step must return and keeps
// track of what it changed. It is simpler than any allocator: it knows graphs, not placements.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

struct ModelTensor {
  TensorSpec spec;
  int64_t ne0 = 1, ne1 = 1;  // logical shape [ne0, ne1]
  bool owned_root = true;    // its bytes (through views) belong to the graph's allocator
  bool has_memory = false;   // pre-allocated, or reachable when its graph was last placed
};

struct ModelGraph {
  std::vector<ModelTensor> t;
  bool sealed = false;
  int allocator = -1;          // bound at the first Reserve/Alloc
  int version = 0;             // bumped by every mutation
  bool placed = false;         // AllocAndCompute succeeded at least once
  uint64_t placed_epoch = 0;   // allocator epoch right after its last placement
  std::vector<std::pair<int, uint64_t>> bound;  // external graph -> its placed_epoch when first bound
  bool frozen = false;         // another graph views its outputs: no more mutations
  bool placed_split = false;   // its last placement was split between backends (AllocatorRules::splits_cpu_marks)

  // Indexes of the tensors for which `pred(tensor, index)` holds.
  template <typename Pred>
  std::vector<int> Where(Pred pred) const {
    std::vector<int> out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (pred(t[i], static_cast<int>(i))) out.push_back(static_cast<int>(i));
    }
    return out;
  }
  // Tensors reachable from the outputs over sources (as BuildGraph walks them).
  std::vector<bool> Reachable() const;
  // Whether tensor `from` reads `target`, directly or through other tensors.
  bool DependsOn(int from, int target) const;
  // The tensor whose bytes tensor `idx` uses (through views, reshapes and in-place results).
  int RootOf(int idx) const;
  // External graphs that the reachable leaf views read.
  std::vector<int> ExternalSources() const;
};

// A tensor derived from `a` by `op` with first source `src0`: same type and shape.
ModelTensor Derived(const ModelTensor& a, alloc::Op op, int src0);

struct Model {
  AllocatorRules rules;  // what the allocator under test refuses (format.h)
  bool measures = false;  // Program::measures: kMeasure may be drawn
  bool row_ops = false;   // Program::row_ops: kRowOp may be drawn
  bool mul_mats = false;  // Program::mul_mats: kMatMul may be drawn
  bool layout_ops = false;  // Program::layout_ops: kTranspose may be drawn
  bool get_rows = false;    // Program::get_rows: kGetRows may be drawn
  bool rope = false;        // Program::rope: kRope may be drawn
  bool set_rows = false;    // Program::set_rows: kSetRows may be drawn
  bool f16_mul_mat = false;  // Program::f16_mul_mat: a kMatMul's first source may be float16
  bool unplanned_allocs = false;  // Program::unplanned_allocs
  bool scheduled = false;         // Program::scheduled: every graph goes to the scheduler (where there is one)
  bool conv = false;              // Program::conv: kConvDw may be drawn (where rules.draws_conv)
  std::vector<ModelGraph> g;
  uint64_t epoch[kAllocators] = {};
  int buffers[kAllocators] = {};
  int reserved_graph[kAllocators] = {-1, -1};
  int reserved_version[kAllocators] = {};

  // The open graph (the last one, while not sealed), or -1.
  int open() const { return !g.empty() && !g.back().sealed ? static_cast<int>(g.size()) - 1 : -1; }
  std::vector<int> sealed() const;
  // Whether a step of kind `k` can be decoded now.
  bool Legal(StepKind k) const;

  // ---- steps: each fills `step` with what it does and what it must return, and updates the model ----

  // Adds `mt` to graph `gi` as the step's tensor.
  void AddTensor(int gi, Step& step, ModelTensor mt);
  // Turns `step` into a Reserve of graph `gi` (always legal): what a step does when it cannot act on gi.
  void FallBackToReserve(int gi, Step& step);
  // A Reserve, Measure or Alloc of graph `gi` by allocator `k`; an Alloc that is not legal now becomes a
  // Reserve. A Measure changes the model as a Reserve does: gallocr plans the graph either way (the plan its
  // next placement follows), and what it had placed before is no longer to be read.
  void ReserveOrAlloc(int gi, int k, Step& step);
  // The graph's outputs changed or a tensor was added to a sealed graph: its plans are stale.
  void Mutated(int gi) { g[gi].version += 1; }
  // Graph `h`'s tensor `t` is viewed by a later graph: `h` stays as it is from now on.
  void Freeze(int h) { g[h].frozen = true; }
  // Leaf `t` of graph `gi` gains or loses its memory from outside.
  void TogglePreallocated(int gi, int t, Step& step);
  // The earlier graphs whose bytes graph gi's reachable leaf views read: the graphs they view and, through a
  // view of a view, the graphs those view in turn (with two allocators, a graph viewing a view of another
  // graph's tensor can never be placed: one of the two would overwrite what it reads).
  std::vector<int> ViewedGraphs(int gi) const;
  // Whether graph gi goes to a scheduler that splits it between backends (AllocatorRules::splits_cpu_marks):
  // every graph does in a Program::scheduled program.
  bool Split(int gi) const;
  // The tensor whose bytes tensor `idx` of graph gi uses, across graphs: RootOf, then through leaf views of other
  // graphs' tensors to theirs. Two tensors share bytes when theirs are the same (graph, tensor).
  std::pair<int, int> MemoryOf(int gi, int idx) const;
  // Whether those bytes are a pre-allocated leaf's: memory from outside every allocator, which a set_rows may write as
  // llama.cpp writes its KV cache (a buffer of its own, persistent across graphs).
  bool FromOutside(int gi, int idx) const;
  // The state graph gi is in, as `lifeline coverage --states` counts them (states.txt beside this file):
  //   open        not sealed yet (every building step acts on it)
  //   unbound     sealed, never reserved, measured or placed
  //   planned     its allocator's plan is of this graph as it is now (placed before or not)
  //   placed      planned, and its placement is the allocator's last act: its tensors hold their bytes
  //   mutated     its allocator's plan is of this graph before a later edit
  //   placed-unplanned  placed last by a scheduler that split it (the gallocr's plan is another graph's)
  //   evicted     placed once; its allocator has planned or placed another graph since
  //   displaced   planned once, never placed, and its allocator has planned another graph since
  const char* StateOf(int gi) const;

 private:
  // Whether an Alloc of graph gi by allocator k is legal, and the status it must return.
  bool AllocLegal(int gi, int k, StatusCode* expect) const;
  // How many bytes past the start of the memory it lies in (a placed tensor's, which the allocator aligns) tensor
  // idx of graph gi begins: the view offsets on the way to its root, through leaf views of other graphs too.
  int64_t ByteOffset(int gi, int idx) const;
};

}  // namespace lifeline::graphs
