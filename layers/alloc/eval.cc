#include "layers/alloc/eval.h"

#include <cstring>

namespace lifeline::alloc {

float LoadElement(DType type, const void* base, int64_t i) {
  if (type == DType::kF32) {
    float f;
    std::memcpy(&f, static_cast<const uint8_t*>(base) + i * 4, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, static_cast<const uint8_t*>(base) + i * 2, 2);
  return HalfToFloat(h);
}

void StoreElement(DType type, void* base, int64_t i, float value) {
  if (type == DType::kF32) {
    std::memcpy(static_cast<uint8_t*>(base) + i * 4, &value, 4);
    return;
  }
  uint16_t h = FloatToHalf(value);
  std::memcpy(static_cast<uint8_t*>(base) + i * 2, &h, 2);
}

Status Evaluate(const Graph& graph, const DataOf& data_of) {
  // Every tensor the run touches must have memory before anything is written.
  for (const Tensor* node : graph.nodes) {
    if (node->op == Op::kView || node->op == Op::kReshape) continue;
    if (data_of(node) == nullptr) return FailedPrecondition("node " + node->name + " has no memory");
    for (const Tensor* s : node->src) {
      if (s != nullptr && data_of(s) == nullptr) {
        return FailedPrecondition("source " + s->name + " of " + node->name + " has no memory");
      }
    }
  }
  for (const Tensor* node : graph.nodes) {
    if (node->op == Op::kView || node->op == Op::kReshape) continue;
    void* dst = data_of(node);
    const void* src[kMaxSrc] = {nullptr, nullptr};
    for (int j = 0; j < kMaxSrc; ++j) {
      if (node->src[j] != nullptr) src[j] = data_of(node->src[j]);
    }
    const int64_t n = node->nelements();
    const DType t = node->type;
    switch (node->op) {
      case Op::kAdd:
      case Op::kMul:
        for (int64_t i = 0; i < n; ++i) {
          float a = LoadElement(t, src[0], i);
          float b = LoadElement(t, src[1], i);
          StoreElement(t, dst, i, node->op == Op::kAdd ? a + b : a * b);
        }
        break;
      case Op::kScale:
      case Op::kNeg:
        for (int64_t i = 0; i < n; ++i) {
          float a = LoadElement(t, src[0], i);
          StoreElement(t, dst, i, node->op == Op::kScale ? a * node->param : -a);
        }
        break;
      case Op::kCopy:
        for (int64_t i = 0; i < n; ++i) StoreElement(t, dst, i, LoadElement(node->src[0]->type, src[0], i));
        break;
      case Op::kConcat: {
        int64_t na = node->src[0]->nelements();
        for (int64_t i = 0; i < n; ++i) {
          float v = i < na ? LoadElement(t, src[0], i) : LoadElement(t, src[1], i - na);
          StoreElement(t, dst, i, v);
        }
        break;
      }
      case Op::kNone:
      case Op::kView:
      case Op::kReshape:
        break;
    }
  }
  return Status::Ok();
}

Status Evaluate(const Graph& graph) {
  return Evaluate(graph, [](const Tensor* t) { return t->data; });
}

}  // namespace lifeline::alloc
