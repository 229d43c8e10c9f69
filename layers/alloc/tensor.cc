#include "layers/alloc/tensor.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace lifeline::alloc {

size_t DTypeSize(DType type) { return type == DType::kF32 ? 4 : 2; }

const char* OpName(Op op) {
  switch (op) {
    case Op::kNone: return "none";
    case Op::kAdd: return "add";
    case Op::kMul: return "mul";
    case Op::kScale: return "scale";
    case Op::kNeg: return "neg";
    case Op::kCopy: return "copy";
    case Op::kConcat: return "concat";
    case Op::kView: return "view";
    case Op::kReshape: return "reshape";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kSoftMax: return "soft_max";
    case Op::kMulMat: return "mul_mat";
    case Op::kTranspose: return "transpose";
    case Op::kGetRows: return "get_rows";
    case Op::kRope: return "rope";
    case Op::kSetRows: return "set_rows";
    case Op::kConvDw: return "conv_2d_dw";
  }
  return "?";
}

// As ggml_op_can_inplace (ggml-alloc.c) lists them: the row ops too (each reads its whole row before writing it), and
// rope (each pair is read before it is written).
bool OpCanInplace(Op op) {
  return op == Op::kAdd || op == Op::kMul || op == Op::kScale || op == Op::kNeg || op == Op::kRmsNorm ||
         op == Op::kSoftMax || op == Op::kRope;
}

const Tensor* Tensor::root() const {
  const Tensor* t = this;
  while (t->view_src != nullptr) t = t->view_src;
  return t;
}

namespace {

std::string Shape(const int64_t* ne) {
  return "[" + std::to_string(ne[0]) + "," + std::to_string(ne[1]) + "," + std::to_string(ne[2]) + "," +
         std::to_string(ne[3]) + "]";
}

bool SameShape(const Tensor* a, const Tensor* b) {
  for (int d = 0; d < kMaxDims; ++d) {
    if (a->ne[d] != b->ne[d]) return false;
  }
  return true;
}

Status FillShape(const int64_t* ne, int ndims, DType type, int64_t out[kMaxDims]) {
  if (ndims < 1 || ndims > kMaxDims) {
    return InvalidArgument("ndims must be in [1, 4], got " + std::to_string(ndims));
  }
  uint64_t bytes = DTypeSize(type);
  for (int d = 0; d < kMaxDims; ++d) {
    out[d] = d < ndims ? ne[d] : 1;
    if (out[d] < 1) return InvalidArgument("dimension " + std::to_string(d) + " is " + std::to_string(out[d]));
    if (static_cast<uint64_t>(out[d]) > kMaxTensorBytes || bytes * static_cast<uint64_t>(out[d]) > kMaxTensorBytes) {
      return InvalidArgument("tensor of shape " + Shape(out) + " overflows the " +
                             std::to_string(kMaxTensorBytes) + "-byte limit");
    }
    bytes *= static_cast<uint64_t>(out[d]);
  }
  return Status::Ok();
}

}  // namespace

Status Context::Check(const Tensor* t, const char* what) const {
  if (t == nullptr) return InvalidArgument(std::string(what) + " is null");
  if (t->ctx != this) return NotFound(std::string(what) + " (tensor " + t->name + ") belongs to another context");
  return Status::Ok();
}

Tensor* Context::Add(std::unique_ptr<Tensor> t) {
  t->id = static_cast<int>(tensors_.size());
  t->ctx = this;
  if (t->name.empty()) t->name = "t" + std::to_string(t->id);
  tensors_.push_back(std::move(t));
  return tensors_.back().get();
}

StatusOr<Tensor*> Context::NewTensor(DType type, const int64_t* ne, int ndims) {
  auto t = std::make_unique<Tensor>();
  t->type = type;
  LIFELINE_RETURN_IF_ERROR(FillShape(ne, ndims, type, t->ne));
  return Add(std::move(t));
}

StatusOr<Tensor*> Context::Unary(Op op, Tensor* a, float param, bool inplace) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "source"));
  if (op != Op::kScale && op != Op::kNeg) return InvalidArgument(std::string(OpName(op)) + " is not a unary op");
  auto t = std::make_unique<Tensor>(*a);
  t->op = op;
  t->src[0] = a;
  t->src[1] = nullptr;
  t->param = param;
  t->view_src = inplace ? a : nullptr;
  t->view_offs = 0;
  t->input = t->output = false;
  t->data = nullptr;
  t->owner = nullptr;
  t->name.clear();
  return Add(std::move(t));
}

StatusOr<Tensor*> Context::RowOp(Op op, Tensor* a) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "source"));
  if (op != Op::kRmsNorm && op != Op::kSoftMax) return InvalidArgument(std::string(OpName(op)) + " is not a row op");
  if (a->type != DType::kF32) return InvalidArgument(std::string(OpName(op)) + " of " + a->name + ": float32 only");
  StatusOr<Tensor*> t = Unary(Op::kNeg, a, 0.0f, /*inplace=*/false);  // a derived tensor like a's, as Binary makes
  t.value()->op = op;
  return t;
}

StatusOr<Tensor*> Context::Binary(Op op, Tensor* a, Tensor* b, bool inplace) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "first source"));
  LIFELINE_RETURN_IF_ERROR(Check(b, "second source"));
  if (op != Op::kAdd && op != Op::kMul) return InvalidArgument(std::string(OpName(op)) + " is not a binary op");
  if (!SameShape(a, b)) return InvalidArgument("shapes " + Shape(a->ne) + " and " + Shape(b->ne) + " differ");
  if (a->type != b->type) return InvalidArgument("element types of " + a->name + " and " + b->name + " differ");
  StatusOr<Tensor*> t = Unary(Op::kNeg, a, 0.0f, inplace);
  t.value()->op = op;
  t.value()->src[1] = b;
  return t;
}

StatusOr<Tensor*> Context::Copy(Tensor* a, DType type) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "source"));
  int64_t ne[kMaxDims] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(type, ne, kMaxDims));
  t->op = Op::kCopy;
  t->src[0] = a;
  return t;
}

StatusOr<Tensor*> Context::Concat(Tensor* a, Tensor* b) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "first source"));
  LIFELINE_RETURN_IF_ERROR(Check(b, "second source"));
  if (a->type != b->type || a->ne[0] != b->ne[0] || a->ne[1] != b->ne[1] || a->ne[2] != b->ne[2]) {
    return InvalidArgument("concat needs equal types and inner dimensions, got " + Shape(a->ne) + " and " + Shape(b->ne));
  }
  int64_t ne[kMaxDims] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3] + b->ne[3]};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(a->type, ne, kMaxDims));
  t->op = Op::kConcat;
  t->src[0] = a;
  t->src[1] = b;
  return t;
}

StatusOr<Tensor*> Context::MulMat(Tensor* a, Tensor* b) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "first source"));
  LIFELINE_RETURN_IF_ERROR(Check(b, "second source"));
  if (b->type != DType::kF32 || a->ne[0] != b->ne[0]) {
    return InvalidArgument("mul_mat needs a float32 second source with the first's rows, got " + Shape(a->ne) +
                           " and " + Shape(b->ne));
  }
  const int64_t k = a->ne[0];
  int64_t ne[kMaxDims] = {a->nelements() / k, 1, 1, b->nelements() / k};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(DType::kF32, ne, kMaxDims));
  t->op = Op::kMulMat;
  t->src[0] = a;
  t->src[1] = b;
  return t;
}

StatusOr<Tensor*> Context::Transpose(Tensor* a) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "transpose source"));
  if (a->ne[1] != 1 || a->ne[2] != 1) {
    return InvalidArgument("transpose swaps the outermost and innermost dimensions of a [ne0, 1, 1, ne1] tensor, got " +
                           Shape(a->ne));
  }
  int64_t ne[kMaxDims] = {a->ne[3], 1, 1, a->ne[0]};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(a->type, ne, kMaxDims));
  t->op = Op::kTranspose;
  t->src[0] = a;
  return t;
}

StatusOr<Tensor*> Context::GetRows(Tensor* a, const int32_t* rows, int n) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "get_rows source"));
  if (a->ne[1] != 1 || a->ne[2] != 1) {
    return InvalidArgument("get_rows reads rows of a [ne0, 1, 1, ne1] tensor, got " + Shape(a->ne));
  }
  if (n < 1 || n > kMaxRows) return InvalidArgument("get_rows takes 1 to 4 rows, got " + std::to_string(n));
  for (int j = 0; j < n; ++j) {
    if (rows[j] < 0 || rows[j] >= a->ne[3]) {
      return InvalidArgument("get_rows: row " + std::to_string(rows[j]) + " of a tensor of " + std::to_string(a->ne[3]));
    }
  }
  int64_t ne[kMaxDims] = {a->ne[0], 1, 1, n};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(DType::kF32, ne, kMaxDims));
  t->op = Op::kGetRows;
  t->src[0] = a;
  std::copy(rows, rows + n, t->rows);
  return t;
}

StatusOr<Tensor*> Context::Rope(Tensor* a, const RopeParams& rope) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "rope source"));
  const int64_t rows = a->nelements() / a->ne[0];
  if (rope.n_dims < 2 || rope.n_dims % 2 != 0 || rope.n_dims > a->ne[0]) {
    return InvalidArgument("rope turns an even number of elements of each row, at most its " + std::to_string(a->ne[0]) +
                           ", not " + std::to_string(rope.n_dims));
  }
  if (rope.mode != kRopeNormal && rope.mode != kRopeNeox) {
    return InvalidArgument("rope mode " + std::to_string(rope.mode) + " is not normal (0) or neox (2)");
  }
  if (rope.heads < 1 || rows % rope.heads != 0) {
    return InvalidArgument("rope: " + std::to_string(rope.heads) + " heads do not divide " + std::to_string(rows) + " rows");
  }
  if (rope.pos_first < 0 || rope.pos_step < 0) return InvalidArgument("rope positions are not negative");
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(a->type, a->ne, kMaxDims));
  t->op = Op::kRope;
  t->src[0] = a;
  t->rope = rope;
  return t;
}

StatusOr<Tensor*> Context::SetRows(Tensor* a, Tensor* b, const int32_t* rows) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "set_rows destination"));
  LIFELINE_RETURN_IF_ERROR(Check(b, "set_rows source"));
  if (a->ne[1] != 1 || a->ne[2] != 1 || b->ne[1] != 1 || b->ne[2] != 1 || a->ne[0] != b->ne[0]) {
    return InvalidArgument("set_rows writes rows of a [ne0, 1, 1, n] tensor into a [ne0, 1, 1, ne1] one, got " +
                           Shape(b->ne) + " into " + Shape(a->ne));
  }
  if (b->type != DType::kF32) return InvalidArgument("set_rows: the rows of " + b->name + " must be float32");
  const int64_t n = b->ne[3];
  if (n > kMaxRows || n > a->ne[3]) {
    return InvalidArgument("set_rows: " + std::to_string(n) + " rows into a tensor of " + std::to_string(a->ne[3]) +
                           " (at most 4)");
  }
  for (int64_t j = 0; j < n; ++j) {
    if (rows[j] < 0 || rows[j] >= a->ne[3] || std::find(rows, rows + j, rows[j]) != rows + j) {
      return InvalidArgument("set_rows: row " + std::to_string(rows[j]) + " is not a distinct row of " + a->name);
    }
  }
  if (a->root() == b->root()) return InvalidArgument("set_rows: " + b->name + " shares the bytes of " + a->name);
  StatusOr<Tensor*> t = Unary(Op::kNeg, a, 0.0f, /*inplace=*/true);  // a view of a, as an in-place result
  t.value()->op = Op::kSetRows;
  t.value()->src[1] = b;
  std::copy(rows, rows + n, t.value()->rows);
  return t;
}

StatusOr<Tensor*> Context::ConvDw(Tensor* a, Tensor* b, const ConvParams& conv) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "conv_2d_dw kernel"));
  LIFELINE_RETURN_IF_ERROR(Check(b, "conv_2d_dw input"));
  if (a->ne[1] != 1 || a->ne[2] != 1 || b->ne[1] != 1 || b->ne[2] != 1) {
    return InvalidArgument("conv_2d_dw takes a [KW, 1, 1, KH] kernel and a [W, 1, 1, H] input, got " + Shape(a->ne) +
                           " and " + Shape(b->ne));
  }
  if (conv.stride < 1 || conv.stride > 2 || conv.pad < 0 || conv.pad > 1) {
    return InvalidArgument("conv_2d_dw: stride 1 or 2 and padding 0 or 1, not " + std::to_string(conv.stride) + " and " +
                           std::to_string(conv.pad));
  }
  const int64_t w = b->ne[0] + 2 * conv.pad - a->ne[0], h = b->ne[3] + 2 * conv.pad - a->ne[3];
  if (w < 0 || h < 0) {
    return InvalidArgument("conv_2d_dw: a kernel " + Shape(a->ne) + " larger than its padded input " + Shape(b->ne));
  }
  int64_t ne[kMaxDims] = {w / conv.stride + 1, 1, 1, h / conv.stride + 1};
  LIFELINE_ASSIGN_OR_RETURN(Tensor* t, NewTensor(b->type, ne, kMaxDims));
  t->op = Op::kConvDw;
  t->src[0] = a;
  t->src[1] = b;
  t->conv = conv;
  return t;
}

StatusOr<Tensor*> Context::View(Tensor* a, const int64_t* ne, int ndims, size_t offset) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "view source"));
  auto t = std::make_unique<Tensor>();
  t->type = a->type;
  LIFELINE_RETURN_IF_ERROR(FillShape(ne, ndims, a->type, t->ne));
  if (offset % DTypeSize(a->type) != 0) {
    return InvalidArgument("view offset " + std::to_string(offset) + " is not a multiple of the element size");
  }
  if (offset > a->nbytes() || t->nbytes() > a->nbytes() - offset) {
    return InvalidArgument("view of " + std::to_string(t->nbytes()) + " bytes at offset " + std::to_string(offset) +
                           " lies outside " + a->name + " (" + std::to_string(a->nbytes()) + " bytes)");
  }
  t->op = Op::kView;
  t->src[0] = a;
  t->view_src = a;
  t->view_offs = offset;
  return Add(std::move(t));
}

StatusOr<Tensor*> Context::Reshape(Tensor* a, const int64_t* ne, int ndims) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "reshape source"));
  int64_t shape[kMaxDims] = {1, 1, 1, 1};
  LIFELINE_RETURN_IF_ERROR(FillShape(ne, ndims, a->type, shape));
  if (shape[0] * shape[1] * shape[2] * shape[3] != a->nelements()) {
    return InvalidArgument("reshape to " + Shape(shape) + " changes the element count of " + a->name);
  }
  StatusOr<Tensor*> t = View(a, shape, kMaxDims, 0);
  if (t.ok()) t.value()->op = Op::kReshape;
  return t;
}

StatusOr<Tensor*> Context::ViewTensor(Tensor* a) {
  LIFELINE_RETURN_IF_ERROR(Check(a, "view source"));
  auto t = std::make_unique<Tensor>();
  t->type = a->type;
  for (int d = 0; d < kMaxDims; ++d) t->ne[d] = a->ne[d];
  t->view_src = a;
  return Add(std::move(t));
}

Status Context::SetSource(Tensor* node, int i, Tensor* src) {
  LIFELINE_RETURN_IF_ERROR(Check(node, "node"));
  LIFELINE_RETURN_IF_ERROR(Check(src, "new source"));
  if (i < 0 || i >= kMaxSrc || node->src[i] == nullptr) {
    return InvalidArgument(node->name + " has no source " + std::to_string(i));
  }
  // A view's source, and an in-place result's first source (the tensor it writes into), are its memory.
  if (node->op == Op::kView || node->op == Op::kReshape || (node->view_src != nullptr && i == 0)) {
    return InvalidArgument("the source of view " + node->name + " is fixed");
  }
  const Tensor* old = node->src[i];
  bool ok = old->type == src->type && SameShape(old, src);
  if (!ok) return InvalidArgument("new source " + src->name + " " + Shape(src->ne) + " does not match " + Shape(old->ne));
  node->src[i] = src;
  return Status::Ok();
}

Status Context::SetExternalData(Tensor* leaf, void* data) {
  LIFELINE_RETURN_IF_ERROR(Check(leaf, "leaf"));
  if (leaf->op != Op::kNone || leaf->is_view()) return InvalidArgument(leaf->name + " is not a plain leaf");
  for (const auto& t : tensors_) {
    if (t.get() != leaf && t->is_view() && t->root() == leaf) {
      t->data = nullptr;
      t->owner = nullptr;
    }
  }
  leaf->data = data;
  leaf->owner = nullptr;
  return Status::Ok();
}

StatusOr<Graph> BuildGraph(const std::vector<Tensor*>& outputs) {
  Graph g;
  enum Mark : uint8_t { kUnseen, kOnStack, kDone };
  // The visited set, sorted by address (as ggml's is a preallocated hash set): one allocation per graph
  // rather than a node per tensor, which under ASan cost more than the walk itself (issue 15).
  std::vector<std::pair<const Tensor*, Mark>> marks;
  auto mark = [&marks](const Tensor* t) -> Mark& {
    auto it = std::lower_bound(marks.begin(), marks.end(), t,
                               [](const std::pair<const Tensor*, Mark>& e, const Tensor* k) { return e.first < k; });
    if (it == marks.end() || it->first != t) it = marks.insert(it, {t, kUnseen});
    return it->second;
  };
  // Iterative post-order DFS; a source met while on the stack closes a cycle.
  struct Frame {
    Tensor* t;
    int next_src;
  };
  std::vector<Frame> stack;
  for (Tensor* out : outputs) {
    if (out == nullptr) return InvalidArgument("graph output is null");
    if (mark(out) == kDone) continue;
    stack.push_back({out, 0});
    mark(out) = kOnStack;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_src < kMaxSrc) {
        Tensor* s = f.t->src[f.next_src++];
        if (s == nullptr) continue;
        Mark& m = mark(s);
        if (m == kOnStack) return InvalidArgument("cycle: " + s->name + " depends on itself through " + f.t->name);
        if (m == kUnseen) {
          m = kOnStack;
          stack.push_back({s, 0});
        }
        continue;
      }
      Tensor* t = f.t;
      stack.pop_back();
      mark(t) = kDone;
      (t->op == Op::kNone ? g.leafs : g.nodes).push_back(t);
    }
  }
  return g;
}

}  // namespace lifeline::alloc
