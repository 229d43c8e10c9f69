#include "harness/programs/graph/graph_book.h"

#include <cstdio>
#include <string>

#include "core/check.h"
#include "harness/programs/common/describe.h"
#include "layers/alloc/eval.h"

namespace lifeline::graphs {

using alloc::Tensor;

float LeafValue(int graph, int tensor, int64_t i) {
  return static_cast<float>(((graph * 31 + tensor * 7 + i * 3) % 17) - 8) / 4.0f;
}

void FillLeaf(Tensor* t, int graph, int index) {
  for (int64_t i = 0; i < t->nelements(); ++i) alloc::StoreElement(t->type, t->data, i, LeafValue(graph, index, i));
}

bool ComputeUnderOracles(const alloc::Graph& graph, const void* owner, const std::vector<oracles::BufferExtent>& buffers,
                         const std::vector<Tensor*>& outputs, const std::function<void()>& compute,
                         oracles::Equality eq, bool check_overlap, bool refuse_nonfinite_row_input) {
  LIFELINE_CHECK_OK(oracles::CheckPlacedInsideBuffers(graph, owner, buffers));
  LIFELINE_CHECK_OK(oracles::CheckViewsInsideSources(graph));
  if (check_overlap) LIFELINE_CHECK_OK(oracles::CheckNoLiveOverlap(graph, owner));
  oracles::Canary canary(graph, owner);
  oracles::Differential differential(graph, owner, outputs);
  if (refuse_nonfinite_row_input && differential.error().ok() && differential.nonfinite_row_input()) {
    if (programs::TraceRequested()) {
      std::fputs("lifeline: an op of this graph reads what ggml's kernel asserts against (an rms_norm a value whose "
                 "float square is not finite, a soft_max a value that is not finite, a float16 mul_mat a dot product "
                 "that may overflow float): not computed\n", stderr);
    }
    return false;
  }
  compute();
  LIFELINE_CHECK_OK(canary.Check());
  LIFELINE_CHECK_OK(differential.Check(eq));
  return true;
}

GraphBook::Graph& GraphBook::Get(int g) {
  if (graphs_.size() <= static_cast<size_t>(g)) graphs_.resize(g + 1);
  return graphs_[g];
}

Status GraphBook::AddTensor(int g, const TensorSpec& spec) {
  Graph& gr = Get(g);
  auto src = [&](int j) { return spec.src[j] >= 0 ? gr.t[spec.src[j]] : nullptr; };
  int64_t ne[alloc::kMaxDims] = {spec.ne[0], 1, 1, spec.ne[1]};
  StatusOr<Tensor*> t = InvalidArgument("unknown op");
  switch (spec.op) {
    case alloc::Op::kNone:
      t = spec.external_graph >= 0 ? ctx_.ViewTensor(graphs_[spec.external_graph].t[spec.external_tensor])
                                   : ctx_.NewTensor(spec.type, ne, alloc::kMaxDims);
      break;
    case alloc::Op::kScale:
    case alloc::Op::kNeg:
      t = ctx_.Unary(spec.op, src(0), spec.param, spec.inplace);
      break;
    case alloc::Op::kAdd:
    case alloc::Op::kMul:
      t = ctx_.Binary(spec.op, src(0), src(1), spec.inplace);
      break;
    case alloc::Op::kCopy:
      t = ctx_.Copy(src(0), spec.type);
      break;
    case alloc::Op::kConcat:
      t = ctx_.Concat(src(0), src(1));
      break;
    case alloc::Op::kView:
      t = ctx_.View(src(0), ne, 1, static_cast<size_t>(spec.view_offset) * alloc::DTypeSize(src(0)->type));
      break;
    case alloc::Op::kReshape:
      t = ctx_.Reshape(src(0), ne, 1);
      break;
    case alloc::Op::kRmsNorm:
    case alloc::Op::kSoftMax:
      t = ctx_.RowOp(spec.op, src(0));
      break;
    case alloc::Op::kMulMat:
      t = ctx_.MulMat(src(0), src(1));
      break;
    case alloc::Op::kTranspose:
      t = ctx_.Transpose(src(0));
      break;
    case alloc::Op::kGetRows: {
      int32_t rows[alloc::kMaxRows] = {};
      RowsOf(spec, src(0)->ne[3], rows);
      t = ctx_.GetRows(src(0), rows, static_cast<int>(spec.ne[1]));
      break;
    }
    case alloc::Op::kRope:
      t = ctx_.Rope(src(0), spec.rope);
      break;
    case alloc::Op::kSetRows: {
      int32_t rows[alloc::kMaxRows] = {};
      SetRowsOf(spec, src(1)->ne[3], src(0)->ne[3], rows);
      t = ctx_.SetRows(src(0), src(1), rows);
      break;
    }
    case alloc::Op::kConvDw:
      t = ctx_.ConvDw(src(0), src(1), spec.conv);
      break;
  }
  if (!t.ok()) return t.status();
  Tensor* tensor = t.value();
  tensor->name = "g" + std::to_string(g) + ".t" + std::to_string(gr.t.size());
  tensor->input = spec.input;
  tensor->output = spec.output;
  gr.t.push_back(tensor);
  gr.spec.push_back(spec);
  gr.spec.back().preallocated = false;  // until SetPreallocated gives it memory
  gr.external.emplace_back();
  if (spec.preallocated) return SetPreallocated(g, static_cast<int>(gr.t.size()) - 1, true);
  return Status::Ok();
}

Status GraphBook::SetOutput(int g, int t) {
  Graph& gr = Get(g);
  gr.t[t]->output = true;
  gr.spec[t].output = true;
  return Status::Ok();
}

Status GraphBook::Rewire(int g, int node, int slot, int new_src) {
  Graph& gr = Get(g);
  Tensor* n = gr.t[node];
  Tensor* old = n->src[slot];
  LIFELINE_RETURN_IF_ERROR(ctx_.SetSource(n, slot, gr.t[new_src]));
  StatusOr<alloc::Graph> built = alloc::BuildGraph(Outputs(g));
  if (!built.ok()) {
    n->src[slot] = old;  // leave the graph as it was
    return built.status();
  }
  gr.spec[node].src[slot] = new_src;
  return Status::Ok();
}

Status GraphBook::SetPreallocated(int g, int t, bool on) {
  Graph& gr = Get(g);
  Tensor* tensor = gr.t[t];
  std::unique_ptr<uint8_t[]> block = on ? std::make_unique<uint8_t[]>(tensor->nbytes()) : nullptr;
  LIFELINE_RETURN_IF_ERROR(ctx_.SetExternalData(tensor, block.get()));
  gr.external[t] = std::move(block);  // the old block goes only now that nothing points at it
  gr.spec[t].preallocated = on;
  if (on) FillLeaf(tensor, g, t);
  return Status::Ok();
}

std::vector<Tensor*> GraphBook::Outputs(int g) const {
  std::vector<Tensor*> out;
  if (g >= static_cast<int>(graphs_.size())) return out;
  out.reserve(graphs_[g].t.size());
  for (Tensor* t : graphs_[g].t) {
    if (t->output) out.push_back(t);
  }
  return out;
}

int GraphBook::IndexOf(int g, const Tensor* t) const {
  const auto& v = graphs_[g].t;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == t) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace lifeline::graphs
