// Helpers shared by the allocator tests (alloc_test.cc, alloc_oracles_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/tensor.h"

namespace lifeline::alloc_test {

// The value of a construction step the test relies on; a failure ends the test (gtest reports the
// exception) with the status that explains it.
template <typename T>
T Must(StatusOr<T> r) {
  if (!r.ok()) throw std::runtime_error("unexpected status: " + r.status().ToString());
  return std::move(r).value();
}

inline testing::AssertionResult IsOk(const Status& s) {
  if (s.ok()) return testing::AssertionSuccess();
  return testing::AssertionFailure() << s.ToString();
}

inline alloc::Tensor* NewTensor(alloc::Context& ctx, alloc::DType type, std::vector<int64_t> ne, const std::string& name) {
  alloc::Tensor* t = Must(ctx.NewTensor(type, ne.data(), static_cast<int>(ne.size())));
  t->name = name;
  return t;
}

inline alloc::Tensor* F32(alloc::Context& ctx, std::vector<int64_t> ne, const std::string& name) {
  return NewTensor(ctx, alloc::DType::kF32, std::move(ne), name);
}

inline alloc::Tensor* Named(alloc::Tensor* t, const std::string& name) {
  t->name = name;
  return t;
}

// Element i of `t` becomes first + step * i.
inline void Fill(alloc::Tensor* t, float first, float step) {
  for (int64_t i = 0; i < t->nelements(); ++i) {
    alloc::StoreElement(t->type, t->data, i, first + step * static_cast<float>(i));
  }
}

}  // namespace lifeline::alloc_test
