// What the graph format's sources share and nothing else sees: the two-way decode loop (format.cc), which
// the encoder runs too (format_encode.cc), and the per-step decoders it calls (format_steps.cc).
//
// Every decoder here is part of the file format (format.h): how many bytes a choice consumes and how a
// byte maps to a choice must never change.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

#include "harness/programs/common/source.h"
#include "harness/programs/graph/format.h"
#include "harness/programs/graph/model.h"

namespace lifeline::graphs::internal {

// Encoding: where the objects the target names by step (its id form, format.h) are now. Decoding: unused.
struct Refs {
  std::map<int, std::pair<int, int>> tensor;  // step that added it -> (graph, index)
  std::map<int, int> graph;                   // step that sealed it -> graph

  std::pair<int, int> Tensor(int step) const {
    auto it = tensor.find(step);
    if (it == tensor.end()) throw programs::Unencodable("names tensor of step #" + std::to_string(step) + ", which adds none before it");
    return it->second;
  }
  // The index of the tensor added by `step` in graph `gi`.
  int TensorIn(int gi, int step) const {
    auto [g, t] = Tensor(step);
    if (g != gi) throw programs::Unencodable("tensor of step #" + std::to_string(step) + " is in another graph");
    return t;
  }
  int Graph(int step) const {
    auto it = graph.find(step);
    if (it == graph.end()) throw programs::Unencodable("names the graph sealed by step #" + std::to_string(step) + ", which seals none before it");
    return it->second;
  }
};

// Both directions: decoding when `target` is null, else encoding it (its id form) into `src` (format.cc).
Program Run(programs::Source& src, const AllocatorRules& rules, const Program* target);

// ---- the per-step decoders (format_steps.cc) ----------------------------------------------------------
// Each decodes one step of its kind into `step` (the model `m` applying it), `want` the step to encode and
// `refs` where its operands are when encoding; `open` is the open graph, `gi` the sealed graph acted on.

// An index in [0, `n`); encoding: `want_index`.
int PickInt(programs::Source& src, size_t n, int want_index);
// A sealed graph to mutate (the step's graph from now on), or -1 when the pick is frozen and the step became
// a Reserve of it instead.
int PickMutable(programs::Source& src, Model& m, Step& step, const Step& want, const Refs& refs);

ModelTensor DecodeLeaf(programs::Source& src, const Step& want);
void DecodeSetRows(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeConvDw(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeRowOp(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeMatMul(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeTranspose(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeGetRows(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeRope(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
// Unary, binary, copy, concat and view steps (step.kind says which).
void DecodeDerived(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeViewExternal(programs::Source& src, Model& m, int open, Step& step, const Step& want, const Refs& refs);
void DecodeSeal(Model& m, int open, Step& step);
void DecodeRewire(programs::Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs);
void DecodeGrow(programs::Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs);
void DecodeTogglePrealloc(programs::Source& src, Model& m, int gi, Step& step, const Step& want, const Refs& refs);

}  // namespace lifeline::graphs::internal
