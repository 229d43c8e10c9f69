#include "layers/alloc/eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

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

namespace {

// The row ops in plain float arithmetic with double sums; ggml's kernels (SIMD exp, other summation orders)
// may differ in the last bits, which is why outputs of graphs holding one compare with a tolerance
// (harness/oracles/alloc_oracles.h, Equality::kClose). Elements are loaded and stored one by one (LoadElement):
// the stand-in's buffers may be aligned below a float's 4 bytes. `x` and `y` may be the same memory (in place):
// each row is read whole before it is written, and soft_max's sum reads only what it wrote.
void EvaluateRows(Op op, const void* x, void* y, int64_t width, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * width;
    auto in = [&](int64_t i) { return LoadElement(DType::kF32, x, base + i); };
    auto out = [&](int64_t i, float v) { StoreElement(DType::kF32, y, base + i, v); };
    if (op == Op::kRmsNorm) {
      double sum = 0.0;
      for (int64_t i = 0; i < width; ++i) sum += static_cast<double>(in(i)) * in(i);
      const float mean = static_cast<float>(sum / static_cast<double>(width));
      const float scale = 1.0f / std::sqrt(mean + kRmsNormEps);
      for (int64_t i = 0; i < width; ++i) out(i, in(i) * scale);
      continue;
    }
    float max = -std::numeric_limits<float>::infinity();
    bool conditioned = true;
    for (int64_t i = 0; i < width; ++i) {
      max = std::max(max, in(i));
      conditioned = conditioned && std::fabs(in(i)) <= kSoftMaxConditioned;
    }
    if (!conditioned) {  // ill-conditioned (tensor.h): not compared
      for (int64_t i = 0; i < width; ++i) out(i, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < width; ++i) {
      const float e = std::exp(in(i) - max);
      out(i, e);
      sum += e;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < width; ++i) out(i, LoadElement(DType::kF32, y, base + i) * inv);
  }
}

// Rope as ggml's CPU kernel computes it (ggml-cpu/ops.cpp, ggml_rope_cache_init and rotate_pairs, without YaRN): the
// angle of pair k of a row at position p is p * theta_scale^k, multiplied up in float from p, each pair turned in
// float. ggml may contract the products into fused multiply-adds, so outputs compare within the tolerance of
// Equality::kClose; an element whose two products nearly cancel (their magnitudes' rounding, kRopeRounding of them,
// past half its tolerance) or pass float's range is ill-conditioned (tensor.h): NaN, not compared. In place is fine:
// each pair is read before it is written.
void EvaluateRope(const Tensor& node, DType type, const void* x, void* y) {
  const RopeParams& r = node.rope;
  const int64_t width = node.ne[0];
  const int64_t rows = node.nelements() / width;
  const float theta_scale = std::pow(kRopeFreqBase, -2.0f / static_cast<float>(r.n_dims));
  const int64_t half = r.n_dims / 2;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t token = row / r.heads;
    const int64_t base = row * width;
    float theta = static_cast<float>(r.pos_first + token * r.pos_step);
    for (int64_t k = 0; k < half; ++k) {
      const float cos_theta = std::cos(theta);
      const float sin_theta = std::sin(theta);
      theta *= theta_scale;
      const int64_t i = r.mode == kRopeNeox ? k : 2 * k;
      const int64_t j = r.mode == kRopeNeox ? k + half : 2 * k + 1;
      const float x0 = LoadElement(type, x, base + i);
      const float x1 = LoadElement(type, x, base + j);
      const float y0 = x0 * cos_theta - x1 * sin_theta;
      const float y1 = x0 * sin_theta + x1 * cos_theta;
      const double magnitude = std::fabs(static_cast<double>(x0)) + std::fabs(static_cast<double>(x1));
      auto conditioned = [&](float v) {
        return kRopeRounding * magnitude <= 0.005 * std::max(1.0, std::fabs(static_cast<double>(v))) &&
               magnitude <= std::numeric_limits<float>::max();
      };
      const float nan = std::numeric_limits<float>::quiet_NaN();
      StoreElement(type, y, base + i, conditioned(y0) ? y0 : nan);
      StoreElement(type, y, base + j, conditioned(y1) ? y1 : nan);
    }
    for (int64_t i = r.n_dims; i < width; ++i) StoreElement(type, y, base + i, LoadElement(type, x, base + i));
  }
}

// Depthwise convolution as ggml's CPU kernel sums it (ggml_compute_forward_conv_2d_dw_whcn: float, ky then kx; a
// float16 kernel element converted first). The kernel's and the input's elements are small multiples of a quarter
// in the programs, so the order matters little; outputs compare within kClose all the same.
void EvaluateConvDw(const Tensor& node, const void* kernel, const void* input, void* y) {
  const Tensor& k = *node.src[0];
  const Tensor& in = *node.src[1];
  const int64_t kw = k.ne[0], kh = k.ne[3], w = in.ne[0], h = in.ne[3];
  for (int64_t dy = 0; dy < node.ne[3]; ++dy) {
    for (int64_t dx = 0; dx < node.ne[0]; ++dx) {
      float sum = 0.0f;
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t sy = dy * node.conv.stride + ky - node.conv.pad;
        if (sy < 0 || sy >= h) continue;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t sx = dx * node.conv.stride + kx - node.conv.pad;
          if (sx < 0 || sx >= w) continue;
          sum += LoadElement(k.type, kernel, ky * kw + kx) * LoadElement(in.type, input, sy * w + sx);
        }
      }
      StoreElement(node.type, y, dy * node.ne[0] + dx, sum);
    }
  }
}

}  // namespace

Status Evaluate(const Graph& graph, const DataOf& data_of, bool* nonfinite_row_input) {
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
      case Op::kMulMat: {
        const int64_t k = node->src[0]->ne[0];
        const int64_t rows_a = node->src[0]->nelements() / k;
        const DType ta = node->src[0]->type;
        // A float16 src0 takes src1 rounded to float16 (tensor.h).
        auto b_at = [&](int64_t e) {
          const float v = LoadElement(DType::kF32, src[1], e);
          return ta == DType::kF16 ? HalfToFloat(FloatToHalf(v)) : v;
        };
        for (int64_t i = 0; i < n; ++i) {  // element i = (row n of b) * rows_a + (row m of a)
          const int64_t m = i % rows_a, nb = i / rows_a;
          double sum = 0.0, magnitude = 0.0;
          for (int64_t j = 0; j < k; ++j) {
            const double term = static_cast<double>(LoadElement(ta, src[0], m * k + j)) * b_at(nb * k + j);
            sum += term;
            magnitude += std::fabs(term);
          }
          const float v = static_cast<float>(sum);
          // ggml's float16 dot product (ggml_vec_dot_f16) sums in float and asserts the sum finite: an element whose
          // terms' magnitudes reach half of float's range (or are not finite) may overflow in some summation order.
          if (ta == DType::kF16 && nonfinite_row_input != nullptr &&
              !(magnitude < 0.5 * std::numeric_limits<float>::max())) {
            *nonfinite_row_input = true;
          }
          // Ill-conditioned (tensor.h), or past float's range in some summation order: not compared.
          const bool conditioned = kMulMatRounding * magnitude <= 0.005 * std::max(1.0, std::fabs(sum)) &&
                                   magnitude <= std::numeric_limits<float>::max();
          StoreElement(DType::kF32, dst, i, conditioned ? v : std::numeric_limits<float>::quiet_NaN());
        }
        break;
      }
      case Op::kTranspose: {
        const int64_t rows = node->ne[0];  // the source's ne1
        const int64_t cols = node->ne[3];  // the source's ne0
        for (int64_t j = 0; j < cols; ++j) {
          for (int64_t i = 0; i < rows; ++i) StoreElement(t, dst, j * rows + i, LoadElement(t, src[0], i * cols + j));
        }
        break;
      }
      case Op::kGetRows: {
        const int64_t width = node->ne[0];
        for (int64_t j = 0; j < node->ne[3]; ++j) {
          for (int64_t i = 0; i < width; ++i) {
            StoreElement(DType::kF32, dst, j * width + i,
                         LoadElement(node->src[0]->type, src[0], node->rows[j] * width + i));
          }
        }
        break;
      }
      case Op::kRope:
        EvaluateRope(*node, t, src[0], dst);
        break;
      case Op::kConvDw:
        EvaluateConvDw(*node, src[0], src[1], dst);
        break;
      case Op::kSetRows: {  // dst is src[0]'s bytes: only the rows written change
        const int64_t width = node->ne[0];
        for (int64_t j = 0; j < node->src[1]->ne[3]; ++j) {
          for (int64_t i = 0; i < width; ++i) {
            StoreElement(t, dst, node->rows[j] * width + i, LoadElement(DType::kF32, src[1], j * width + i));
          }
        }
        break;
      }
      case Op::kRmsNorm:
      case Op::kSoftMax:
        if (nonfinite_row_input != nullptr) {
          for (int64_t i = 0; i < n; ++i) {
            const float x = LoadElement(DType::kF32, src[0], i);
            // rms_norm: ggml squares in float; soft_max: any infinity or NaN (eval.h).
            if (!std::isfinite(node->op == Op::kRmsNorm ? x * x : x)) *nonfinite_row_input = true;
          }
        }
        EvaluateRows(node->op, src[0], dst, node->ne[0], n / node->ne[0]);
        break;
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
