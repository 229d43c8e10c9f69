// GgmlGraphAdapter's builds (ggml_graph_adapter.h): a program graph made into a ggml graph in a fresh context,
// op by op, with the guard of the finding that reaches ggml_set_output, and what a view of another graph reads.
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

namespace lifeline::graphs::internal {

using alloc::Tensor;

// The ggml tensor another graph's leaf view of (h, i) views: the one of h's latest placement, or, when
// h was never placed (or that tensor lost its memory since), one of a build that was not placed.
// `detached`: a stand-in in `ctx` holding (h, i)'s bytes at their host address, with no backend buffer (as
// ggml allows for memory from outside), so that the CPU backend can read them whatever holds the original.
ggml_tensor* GgmlGraphAdapter::Source(int h, int i, bool detached, ggml_context* ctx) {
  if (detached) {
    const Tensor* m = book_.tensor(h, i);
    ggml_tensor* s = ggml_new_tensor_4d(ctx, m->type == alloc::DType::kF16 ? GGML_TYPE_F16 : GGML_TYPE_F32, m->ne[0],
                                        m->ne[1], m->ne[2], m->ne[3]);
    s->data = m->data;
    return s;
  }
  auto it = placed_.find({h, i});
  if (it != placed_.end() && it->second != nullptr) return it->second;
  Instance* inst = Build(h);
  return inst->t[i];
}

// Builds graph g of the book afresh in a new ggml context (kept until teardown: later graphs may view
// its tensors). `detached`: every tensor from outside the graph is a stand-in on host memory (Source).
Instance* GgmlGraphAdapter::Build(int g, bool detached) {
  auto inst = std::make_unique<Instance>();
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * 2 * kGraphSize + ggml_graph_overhead_custom(kGraphSize, false);
  params.no_alloc = true;
  inst->ctx = ggml_init(params);
  LIFELINE_CHECK(inst->ctx != nullptr, "ggml_init failed");
  inst->t.assign(book_.size(g), nullptr);
  inst->graph = ggml_new_graph_custom(inst->ctx, kGraphSize, false);
  for (Tensor* out : book_.Outputs(g)) {
    ggml_build_forward_expand(inst->graph, Make(*inst, g, book_.IndexOf(g, out), detached));
  }
  if (inst->weights_ctx != nullptr) PlaceWeights(*inst, g);
  instances_.push_back(std::move(inst));
  return instances_.back().get();
}

ggml_tensor* GgmlGraphAdapter::Make(Instance& inst, int g, int i, bool detached) {
  if (inst.t[i] != nullptr) return inst.t[i];
  const TensorSpec& spec = book_.spec(g, i);
  const Tensor* m = book_.tensor(g, i);
  ggml_context* ctx = inst.ctx;
  auto src = [&](int j) { return Make(inst, g, spec.src[j], detached); };
  const ggml_type type = m->type == alloc::DType::kF16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
  const bool inplace = spec.inplace;
  ggml_tensor* t = nullptr;
  switch (spec.op) {
    case alloc::Op::kNone:
      if (spec.external_graph >= 0) {
        t = ggml_view_tensor(ctx, Source(spec.external_graph, spec.external_tensor, detached, ctx));
      } else {
        const bool weight = book_.preallocated(g, i) && !detached && weights_;
        auto placed_weight = weights_placed_.find({g, i});
        if (weight && placed_weight != weights_placed_.end() && placed_weight->second->data == m->data) {
          // Placed once, as llama.cpp's weights are: every later build reads the same tensor, until the leaf
          // gets memory of another kind (a toggle gives the book a new block).
          t = placed_weight->second;
          if (m->input) ggml_set_input(t);
          break;
        }
        if (weight && inst.weights_ctx == nullptr) {
          ggml_init_params params{};
          params.mem_size = ggml_tensor_overhead() * kMaxTensorsPerGraph;
          params.no_alloc = true;
          inst.weights_ctx = ggml_init(params);
          LIFELINE_CHECK(inst.weights_ctx != nullptr, "ggml_init of a weights context failed");
        }
        // A weight lives in the weights context, as llama.cpp's model tensors do, and the graph reads it there.
        t = ggml_new_tensor_4d(weight ? inst.weights_ctx : ctx, type, m->ne[0], m->ne[1], m->ne[2], m->ne[3]);
        if (weight) {
          inst.weight_index.push_back(i);  // placed with the others once the graph is built (PlaceWeights)
        } else if (book_.preallocated(g, i)) {
          if (detached) {
            t->data = m->data;  // memory from outside, no backend buffer
          } else {
            BindPreallocated(t, g, i);
          }
        }
        if (m->input) ggml_set_input(t);
      }
      break;
    case alloc::Op::kScale:
      t = inplace ? ggml_scale_inplace(ctx, src(0), m->param) : ggml_scale(ctx, src(0), m->param);
      break;
    case alloc::Op::kNeg:
      t = inplace ? ggml_neg_inplace(ctx, src(0)) : ggml_neg(ctx, src(0));
      break;
    case alloc::Op::kAdd:
      t = inplace ? ggml_add_inplace(ctx, src(0), src(1)) : ggml_add(ctx, src(0), src(1));
      break;
    case alloc::Op::kMul:
      t = inplace ? ggml_mul_inplace(ctx, src(0), src(1)) : ggml_mul(ctx, src(0), src(1));
      break;
    case alloc::Op::kCopy: {
      ggml_tensor* a = src(0);
      t = ggml_cpy(ctx, a, ggml_new_tensor(ctx, type, GGML_MAX_DIMS, a->ne));
      break;
    }
    case alloc::Op::kConcat:
      t = ggml_concat(ctx, src(0), src(1), 3);
      break;
    case alloc::Op::kView:
      t = ggml_view_1d(ctx, src(0), m->ne[0], static_cast<size_t>(spec.view_offset) * ggml_type_size(src(0)->type));
      break;
    case alloc::Op::kReshape:
      t = ggml_reshape_1d(ctx, src(0), m->ne[0]);
      break;
    case alloc::Op::kRmsNorm:
      t = ggml_rms_norm(ctx, src(0), alloc::kRmsNormEps);
      break;
    case alloc::Op::kSoftMax:
      t = ggml_soft_max(ctx, src(0));
      break;
    case alloc::Op::kMulMat: {
      // The program's [ne0, ne1] tensors are ggml's [ne0, 1, 1, ne1]: multiplied as the 2-D matrices they are, and
      // the [M, N] product given the program's layout back (reshapes: views, nothing placed of their own).
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
      ggml_tensor* mm = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, a, a->ne[0], ggml_nelements(a) / a->ne[0]),
                                     ggml_reshape_2d(ctx, b, b->ne[0], ggml_nelements(b) / b->ne[0]));
      t = ggml_reshape_4d(ctx, mm, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(mm);  // the product's own bytes are the output (ggml frees a view's source)
      break;
    }
    case alloc::Op::kTranspose: {
      // ggml_permute swaps dimensions 0 and 3 of the program's [ne0, 1, 1, ne1] as it stands; ggml_transpose swaps
      // the two of its 2-D reshape. Either is a view that is not contiguous, which ggml_cont copies out in order
      // (the 2-D copy is given the program's layout back by a reshape).
      ggml_tensor* a = src(0);
      ggml_tensor* c =
          ggml_cont(ctx, spec.permute ? ggml_permute(ctx, a, 3, 1, 2, 0)
                                      : ggml_transpose(ctx, ggml_reshape_2d(ctx, a, a->ne[0], ggml_nelements(a) / a->ne[0])));
      t = spec.permute ? c : ggml_reshape_4d(ctx, c, m->ne[0], 1, 1, m->ne[3]);
      if (m->output && t != c) ggml_set_output(c);  // as for mul_mat: the copy's own bytes are the output
      break;
    }
    case alloc::Op::kGetRows: {
      // ggml_get_rows picks rows of dimension 1, so the program's [ne0, 1, 1, ne1] is read as its 2-D [ne0, ne1];
      // the rows come from an int32 input, placed with the graph and set once it is placed (UploadRows), as
      // llama.cpp places and sets its token and KV-cache indices.
      ggml_tensor* a = src(0);
      std::vector<int32_t> rows(alloc::kMaxRows);
      RowsOf(spec, a->ne[3], rows.data());
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, m->ne[3]);
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.rows", g, i);
      inst.rows.emplace_back(idx, std::move(rows));
      ggml_tensor* got = ggml_get_rows(ctx, ggml_reshape_2d(ctx, a, a->ne[0], a->ne[3]), idx);
      t = ggml_reshape_4d(ctx, got, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(got);  // as for mul_mat: the rows' own bytes are the output
      break;
    }
    case alloc::Op::kRope: {
      // ggml_rope_ext reads the program's [ne0, 1, 1, ne1] as [ne0, heads, tokens] (head size, heads, tokens, as
      // llama.cpp's Q and K), one position per token from an int32 input placed with the graph and set once placed
      // (UploadRows, like get_rows' index); no YaRN (freq_scale 1, ext_factor 0, attn_factor 1), no frequency factors.
      ggml_tensor* a = src(0);
      const alloc::RopeParams& r = spec.rope;
      std::vector<int32_t> positions = PositionsOf(spec);
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, static_cast<int64_t>(positions.size()));
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.positions", g, i);
      inst.rows.emplace_back(idx, std::move(positions));
      ggml_tensor* turned = ggml_rope_ext(ctx, ggml_reshape_3d(ctx, a, a->ne[0], r.heads, ggml_nrows(a) / r.heads), idx,
                                          nullptr, r.n_dims, r.mode, 0, alloc::kRopeFreqBase, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
      ggml_format_name(turned, "g%d.t%d.rope", g, i);
      t = ggml_reshape_4d(ctx, turned, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(turned);  // as for mul_mat: the rope's own bytes are the output
      break;
    }
    case alloc::Op::kSetRows: {
      // ggml_set_rows writes rows of dimension 1, so the destination and the rows are read as their 2-D [ne0, ne1]
      // and [ne0, n]; the destination rows come from an index input placed with the graph and set once placed
      // (UploadRows). int32, which ggml.h allows beside llama.cpp's int64: the host buffer types align to 4 bytes
      // (HostTypeFor), and the kernel loads an int64 index in place (UBSan misaligned-address in
      // ggml_compute_forward_set_rows_impl at the first fuzzing of an int64 index, 2026-11-27). The result is a view of
      // the destination, as the program's is.
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
      if (!LIFELINE_GGML_HAS_SET_ROWS || !LIFELINE_GGML_SET_ROWS_I32 ||
          (b->type == GGML_TYPE_F16 && !LIFELINE_GGML_SET_ROWS_F16)) {
        // This tree's ggml_set_rows asserts against it (none at all, int64 indices only, float32 rows only): a view of
        // the destination stands in for the result, and the graph is refused before it is placed.
        inst.unsupported = std::string("this ggml's ggml_set_rows does not take ") +
                           (!LIFELINE_GGML_HAS_SET_ROWS ? "anything (it has none)"
                            : !LIFELINE_GGML_SET_ROWS_I32 ? "int32 row indices"
                                                           : "float16 source rows");
        t = ggml_view_tensor(ctx, a);
        break;
      }
      std::vector<int32_t> rows(alloc::kMaxRows);
      SetRowsOf(spec, b->ne[3], a->ne[3], rows.data());
      rows.resize(static_cast<size_t>(b->ne[3]));
      ggml_tensor* idx = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, b->ne[3]);
      ggml_set_input(idx);
      ggml_format_name(idx, "g%d.t%d.rows", g, i);
      inst.rows.emplace_back(idx, std::move(rows));
#if LIFELINE_GGML_HAS_SET_ROWS
      ggml_tensor* set = ggml_set_rows(ctx, ggml_reshape_2d(ctx, a, a->ne[0], a->ne[3]),
                                       ggml_reshape_2d(ctx, b, b->ne[0], b->ne[3]), idx);
#else
      ggml_tensor* set = nullptr;  // refused above
#endif
      ggml_format_name(set, "g%d.t%d.set_rows", g, i);
      t = ggml_reshape_4d(ctx, set, m->ne[0], 1, 1, m->ne[3]);
      break;
    }
    case alloc::Op::kConvDw: {
      // One channel, one image: the kernel [KW, 1, 1, KH] read as ggml's [KW, KH, 1, 1] and the input [W, 1, 1, H] as
      // [W, H, 1, 1]; dilation 1. The result [W_out, H_out, 1, 1], of the input's type, read back as the program's.
      ggml_tensor* a = src(0);
      ggml_tensor* b = src(1);
#if LIFELINE_GGML_HAS_CONV_2D_DW_DIRECT
      ggml_tensor* conv = ggml_conv_2d_dw_direct(ctx, ggml_reshape_4d(ctx, a, a->ne[0], a->ne[3], 1, 1),
                                                 ggml_reshape_4d(ctx, b, b->ne[0], b->ne[3], 1, 1), spec.conv.stride,
                                                 spec.conv.stride, spec.conv.pad, spec.conv.pad, 1, 1);
      ggml_format_name(conv, "g%d.t%d.conv_2d_dw", g, i);
      t = ggml_reshape_4d(ctx, conv, m->ne[0], 1, 1, m->ne[3]);
      if (m->output) ggml_set_output(conv);  // as for mul_mat: the convolution's own bytes are the output
#else
      // The tree lacks it (AllocatorRules::draws_conv is false there, so only a hand-written program gets here): a view
      // of the input stands in, and the graph is refused before it is placed.
      inst.unsupported = "this ggml has no ggml_conv_2d_dw_direct";
      t = ggml_view_tensor(ctx, b);
#endif
      break;
    }
  }
  ggml_format_name(t, "g%d.t%d", g, i);
  if (m->output) ggml_set_output(t);
  // Guard ggml-set-output-view-src-freed: ggml_set_output of a view marks the view alone in ggml before ggml-org/ggml
  // d727fbbd (whisper.cpp 1.9.1's copy among them), so gallocr frees the view's source after its last reader and
  // reuses its bytes under an output. The user's way out, and the fix: the source is marked an output too.
  if (m->output && t->view_src != nullptr && (t->view_src->flags & GGML_TENSOR_FLAG_OUTPUT) == 0 &&
      GuardHolds(Guard::kGgmlSetOutputViewSrcFreed, [&] {
        return std::string(t->name) + ", an output, views " + t->view_src->name + ", which ggml_set_output left " +
               "without the output flag; " + t->view_src->name + " is marked an output too";
      })) {
    ggml_set_output(t->view_src);
  }
  inst.t[i] = t;
  return t;
}

}  // namespace lifeline::graphs::internal
