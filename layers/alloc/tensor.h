// Tensors and graphs in the shape of ggml's: a Context owns tensors; ops record their sources; views
// alias another tensor's bytes; BuildGraph orders the tensors an output depends on into nodes (tensors
// with an op) and leafs (tensors without one).
//
// Two kinds of view, as in ggml:
//   ViewTensor(a)      op kNone, view_src = a: a *leaf* of any graph that uses it, and `a` is not pulled
//                      into that graph (ggml_view_tensor; whisper's view of the conv result).
//   View/Reshape(a)    op kView/kReshape, src[0] = a: a node, and `a` is part of the graph.
// In-place ops (Binary/Unary with `inplace`) return a view of their first source that carries the op, so
// they write into that source's bytes (ggml_add_inplace).
//
// Bad requests (unknown tensor, mismatched shapes, out-of-bounds view, size overflow, cycles) come back
// as statuses; nothing here aborts on input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace lifeline::alloc {

enum class DType : uint8_t { kF32, kF16 };
size_t DTypeSize(DType type);

enum class Op : uint8_t {
  kNone,     // leaf: data comes from outside the graph (an input, a weight, a view of another graph)
  kAdd,      // dst = src0 + src1 (same shapes)
  kMul,      // dst = src0 * src1
  kScale,    // dst = src0 * param
  kNeg,      // dst = -src0
  kCopy,     // dst = src0 (may change type)
  kConcat,   // dst = src0 followed by src1 along the outermost dimension
  kView,     // no computation: a byte range of src0
  kReshape,  // no computation: src0 with another shape
  // Row ops (float32 only): over each row of ne[0] elements, as ggml's GGML_OP_RMS_NORM and GGML_OP_SOFT_MAX.
  kRmsNorm,  // dst = src0 / sqrt(mean(src0^2) + kRmsNormEps)
  kSoftMax,  // dst = exp(src0 - max) / sum(exp(src0 - max))
  // dst[n][m] = sum over k of src0[m][k] * src1[n][k] (ggml_mul_mat of the two as 2-D [K, M] and [K, N]
  // matrices): src0 [K, M] float32 or float16 (a model's weights), src1 [K, N] float32, give a float32 [M, N]. Shapes
  // here are [ne0, 1, 1, ne1]. With a float16 src0, src1's elements are rounded to float16 first, as ggml's CPU
  // backend converts src1 to the type src0's dot product takes (its vec_dot_type).
  kMulMat,
  // dst = src0 with its outermost and innermost dimensions swapped, contiguous: [ne0, 1, 1, ne1] gives
  // [ne1, 1, 1, ne0], element (i, j) of the result element (j, i) of the source. Any type, kept. ggml builds it as
  // a transposed or permuted view (not contiguous) made contiguous by ggml_cont.
  kTranspose,
  // dst row j = src0 row rows[j] (ggml_get_rows: an embedding lookup, a read of a KV cache): src0 [ne0, 1, 1, ne1]
  // of any type, rows[] (at most kMaxRows, each below ne1; repeats allowed) give a float32 [ne0, 1, 1, n].
  kGetRows,
  // Rotary position embedding (ggml_rope_ext, GGML_OP_ROPE) of src0 of either type, seen as [ne0, heads, tokens]
  // with heads = rope.heads rows per token: each row of token j turns pairs of its first rope.n_dims elements (an even
  // count, at most ne0) by angles position(j) * kRopeFreqBase^(-2i/n_dims), position(j) = rope.pos_first + j *
  // rope.pos_step; the pairs are adjacent elements (GGML_ROPE_TYPE_NORMAL, llama) or i and i + n_dims/2 (NEOX);
  // the elements past n_dims are copied. Same type and shape as the source.
  kRope,
  // dst = src0 with row rows[j] replaced by row j of src1 (ggml_set_rows: how llama.cpp writes a KV cache), written
  // into src0's own bytes: the result is a view of src0 that carries the op, as an in-place result is. src0 is
  // [ne0, 1, 1, ne1] of either type; src1 float32 [ne0, 1, 1, n] (converted to src0's type), n at most kMaxRows;
  // rows[] n distinct rows of src0 (ggml.h: "undefined behavior if destination rows overlap"), and src1 must not
  // share src0's bytes.
  kSetRows,
  // Depthwise 2-D convolution of one channel (ggml_conv_2d_dw_direct, GGML_OP_CONV_2D_DW): src0 the kernel
  // [KW, 1, 1, KH] (float32 or float16), src1 the input [W, 1, 1, H] of either type; dst [W_out, 1, 1, H_out] of
  // src1's type, W_out = (W + 2 * pad - KW) / stride + 1 (H likewise), dst(x, y) = the sum over the kernel of
  // kernel(kx, ky) * input(x * stride + kx - pad, y * stride + ky - pad), the input's places outside it skipped (zero
  // padding), summed in float in ggml's order (ky, then kx).
  kConvDw,
};
inline constexpr int kMaxRows = 4;
struct ConvParams {
  int stride = 1;  // 1 or 2, both directions
  int pad = 0;     // 0 or 1, both directions
};
inline constexpr float kRopeFreqBase = 10000.0f;
// ggml's rope modes (ggml.h GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX).
inline constexpr int kRopeNormal = 0;
inline constexpr int kRopeNeox = 2;
struct RopeParams {
  int n_dims = 2;
  int mode = kRopeNormal;
  int heads = 1;      // rows per token: a divisor of the source's rows
  int pos_first = 0;
  int pos_step = 0;
};
inline constexpr float kRmsNormEps = 1e-6f;
// Where the reference evaluator (eval.h) finds a result ill-conditioned, so that any backend's rounding of the
// same math may move it past the comparison's 1% (Equality::kClose), it writes NaN: not compared. A soft_max row
// holding an input of magnitude above kSoftMaxConditioned (inputs computed by other ops carry their rounding,
// about 1e-5 of their magnitude, into exp's argument); a mul_mat element whose rounding bound,
// kMulMatRounding times the sum of its terms' magnitudes, exceeds half the tolerance of its value.
inline constexpr float kSoftMaxConditioned = 64.0f;
inline constexpr double kMulMatRounding = 1e-6;
inline constexpr double kRopeRounding = 1e-6;  // a rope element's bound, of its two products' magnitudes (eval.cc)
const char* OpName(Op op);
// Ops whose result may take a source's memory (allocator in-place reuse): the elementwise ones and the row ops.
bool OpCanInplace(Op op);

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 2;
inline constexpr size_t kMaxTensorBytes = size_t{1} << 30;

class Context;

struct Tensor {
  int id = 0;                  // position in its Context
  const Context* ctx = nullptr;
  DType type = DType::kF32;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};
  Op op = Op::kNone;
  Tensor* src[kMaxSrc] = {nullptr, nullptr};
  float param = 0.0f;          // kScale
  int32_t rows[kMaxRows] = {};  // kGetRows: the source rows, ne[3] of them; kSetRows: the rows src1's rows go to
  RopeParams rope;             // kRope
  ConvParams conv;             // kConvDw
  Tensor* view_src = nullptr;  // set for views (and in-place results): the tensor whose bytes this aliases
  size_t view_offs = 0;
  bool input = false;          // ggml_set_input: allocated before anything else, filled by the caller
  bool output = false;         // ggml_set_output: never freed or reused within a graph
  void* data = nullptr;        // placed bytes: by an allocator (owner != null) or from outside
  const void* owner = nullptr; // the allocator whose buffer holds `data`; null for external memory
  std::string name;

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  size_t nbytes() const { return static_cast<size_t>(nelements()) * DTypeSize(type); }
  bool is_view() const { return view_src != nullptr; }
  // The tensor that owns the bytes a view chain ends in.
  const Tensor* root() const;
};

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A tensor of `ndims` (1..4) dimensions, each >= 1, at most kMaxTensorBytes in all.
  StatusOr<Tensor*> NewTensor(DType type, const int64_t* ne, int ndims);
  StatusOr<Tensor*> Unary(Op op, Tensor* a, float param, bool inplace);     // kScale, kNeg
  StatusOr<Tensor*> Binary(Op op, Tensor* a, Tensor* b, bool inplace);      // kAdd, kMul
  StatusOr<Tensor*> Copy(Tensor* a, DType type);
  StatusOr<Tensor*> Concat(Tensor* a, Tensor* b);
  StatusOr<Tensor*> RowOp(Op op, Tensor* a);  // kRmsNorm, kSoftMax: float32 only, same shape, never in place
  StatusOr<Tensor*> MulMat(Tensor* a, Tensor* b);  // kMulMat: [K, M] (float32 or 16) and float32 [K, N] give [M, N]
  StatusOr<Tensor*> Transpose(Tensor* a);          // kTranspose: [ne0, 1, 1, ne1] gives [ne1, 1, 1, ne0]
  StatusOr<Tensor*> GetRows(Tensor* a, const int32_t* rows, int n);  // kGetRows: [ne0, 1, 1, n], float32
  StatusOr<Tensor*> Rope(Tensor* a, const RopeParams& rope);          // kRope: a's shape and type
  // kSetRows: b's ne[3] rows into rows[] of a; a view of a.
  StatusOr<Tensor*> SetRows(Tensor* a, Tensor* b, const int32_t* rows);
  // kConvDw: kernel a [KW, 1, 1, KH] over input b [W, 1, 1, H]; b's type.
  StatusOr<Tensor*> ConvDw(Tensor* a, Tensor* b, const ConvParams& conv);
  // Op kView: `ne` elements starting `offset` bytes into `a`; must lie inside a's bytes, and `offset`
  // must be a multiple of the element size.
  StatusOr<Tensor*> View(Tensor* a, const int64_t* ne, int ndims, size_t offset);
  StatusOr<Tensor*> Reshape(Tensor* a, const int64_t* ne, int ndims);
  // Op kNone, view_src = a: a leaf view of all of `a`.
  StatusOr<Tensor*> ViewTensor(Tensor* a);

  // Rewires source `i` of `node` (topology mutation). The new source must have the shape the op
  // needs; cycles this creates are reported by BuildGraph.
  Status SetSource(Tensor* node, int i, Tensor* src);

  // Gives leaf `leaf` memory from outside every allocator (`data`, or none when null). Views of it, in
  // any graph, lose their address until an allocator places their graph again: the old bytes may be gone.
  Status SetExternalData(Tensor* leaf, void* data);

  size_t size() const { return tensors_.size(); }
  Tensor* tensor(size_t i) const { return tensors_[i].get(); }

 private:
  Status Check(const Tensor* t, const char* what) const;
  Tensor* Add(std::unique_ptr<Tensor> t);
  std::vector<std::unique_ptr<Tensor>> tensors_;
};

// ggml_cgraph: the nodes in an order where every source comes first, and the leafs.
struct Graph {
  std::vector<Tensor*> nodes;
  std::vector<Tensor*> leafs;
};

// ggml_build_forward_expand over `outputs`: depth-first over src[] (not view_src). Fails on a cycle.
StatusOr<Graph> BuildGraph(const std::vector<Tensor*>& outputs);

}  // namespace lifeline::alloc
