#include "layers/alloc/eval.h"

#include <cstring>

namespace lifeline::alloc {

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf/nan
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);                                          // overflow
  if (exp <= 0) {                                                                                       // subnormal
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | static_cast<uint32_t>(exp) << 10 | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | mant << 13;
  } else {
    x = sign | (exp - 15 + 127) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

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
