// Graph fixtures shared by the allocator tests (tests/alloc/) and the oracle tests (tests/oracles/):
// construction helpers that end a test with the explaining status when a step it relies on fails,
// value and placement queries, memory the test owns, and the mixed test graphs both families build
// (`MixedGraph`, `PlacedInplaceGraph`, on one `MixedGraphBase`).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "harness/oracles/alloc_oracles.h"
#include "layers/alloc/eval.h"
#include "layers/alloc/gallocr.h"
#include "layers/alloc/tensor.h"
#include "tests/testing/status_matchers.h"

namespace lifeline::testing_util {

// ---- construction -------------------------------------------------------------------------------------

// The value of a construction step the test relies on; a failure ends the test (gtest reports the
// exception) with the status that explains it.
template <typename T>
T Must(StatusOr<T> r) {
  if (!r.ok()) throw std::runtime_error("unexpected status: " + r.status().ToString());
  return std::move(r).value();
}

inline alloc::Tensor* NewTensor(alloc::Context& ctx, alloc::DType type, std::vector<int64_t> ne,
                                const std::string& name) {
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

// A GraphAllocator over `specs` (one default buffer unless given).
inline std::unique_ptr<alloc::GraphAllocator> MakeAllocator(
    std::vector<alloc::BufferSpec> specs = {alloc::BufferSpec{}}) {
  return Must(alloc::GraphAllocator::Create(std::move(specs)));
}

// ---- values and placement -----------------------------------------------------------------------------

// Element i of `t` becomes first + step * i.
inline void Fill(alloc::Tensor* t, float first, float step) {
  for (int64_t i = 0; i < t->nelements(); ++i) {
    alloc::StoreElement(t->type, t->data, i, first + step * static_cast<float>(i));
  }
}

// Every element of `t`, as floats.
inline std::vector<float> Values(const alloc::Tensor* t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t->nelements(); ++i) v.push_back(alloc::LoadElement(t->type, t->data, i));
  return v;
}

// `a` and `b` share at least one byte.
inline bool Overlap(const alloc::Tensor* a, const alloc::Tensor* b) {
  auto a0 = reinterpret_cast<uintptr_t>(a->data);
  auto b0 = reinterpret_cast<uintptr_t>(b->data);
  return a0 < b0 + b->nbytes() && b0 < a0 + a->nbytes();
}

// All of `t` lies inside buffer `id` of `alloc`.
inline bool InsideBuffer(const alloc::GraphAllocator& alloc, int id, const alloc::Tensor* t) {
  auto p = reinterpret_cast<uintptr_t>(t->data);
  auto base = reinterpret_cast<uintptr_t>(alloc.buffer_base(id));
  return base != 0 && p >= base && p + t->nbytes() <= base + alloc.buffer_size(id);
}

// The oracle's view of `alloc`'s buffers, with the alignments of the `specs` it was made from.
inline std::vector<oracles::BufferExtent> Extents(const alloc::GraphAllocator& alloc,
                                                  std::vector<alloc::BufferSpec> specs) {
  std::vector<oracles::BufferExtent> out;
  for (size_t i = 0; i < alloc.buffer_count(); ++i) {
    out.push_back({alloc.buffer_base(static_cast<int>(i)), alloc.buffer_size(static_cast<int>(i)), specs[i].alignment});
  }
  return out;
}

// Tensor storage owned by the test, for tensors with external memory (owner null).
struct Storage {
  std::vector<float> bytes;  // float-sized words: aligned for any element type here
  explicit Storage(const alloc::Tensor* t) : bytes((t->nbytes() + 3) / 4, 0.0f) {}
  void* data() { return bytes.data(); }
};

// ---- the mixed test graphs ----------------------------------------------------------------------------

// What both mixed graphs share. The head: input x and leaf w (f32 4x4), their sum s, and two 8-element
// views of s at offsets, lo (bytes 0..31) and hi (bytes 32..63). The end (EndWithOutputs): two outputs,
// h, a float16 copy, and out, an op on cat, a concat. Each graph builds its middle in between.
struct MixedGraphBase {
  alloc::Context ctx;
  alloc::Tensor *x, *w, *s, *lo, *hi;
  alloc::Tensor *h = nullptr, *cat = nullptr, *out = nullptr;
  alloc::Graph g;

 protected:
  MixedGraphBase() {
    x = F32(ctx, {4, 4}, "x");
    x->input = true;
    w = F32(ctx, {4, 4}, "w");
    s = Named(Must(ctx.Binary(alloc::Op::kAdd, x, w, false)), "s");
    const int64_t eight[] = {8};
    lo = Named(Must(ctx.View(s, eight, 1, 0)), "lo");
    hi = Named(Must(ctx.View(s, eight, 1, 32)), "hi");
  }
  // h = f16(`to_half`) and out = `out_op`(cat, `value`) with cat = concat(`first`, `second`); h and out
  // are outputs, and `g` is the graph of both.
  void EndWithOutputs(alloc::Tensor* to_half, alloc::Tensor* first, alloc::Tensor* second, alloc::Op out_op,
                      float value) {
    h = Named(Must(ctx.Copy(to_half, alloc::DType::kF16)), "h");
    h->output = true;
    cat = Named(Must(ctx.Concat(first, second)), "cat");
    out = Named(Must(ctx.Unary(out_op, cat, value, false)), "out");
    out->output = true;
    g = Must(alloc::BuildGraph({h, out}));
  }
};

// A graph with a bit of everything, left unplaced: the head, a reshape r of s, n = -r, h = f16(n),
// cat = concat(hi, lo), out = cat / 2. Seven tensors own memory.
struct MixedGraph : MixedGraphBase {
  alloc::Tensor *r, *n;
  MixedGraph() {
    const int64_t sixteen[] = {16};
    r = Named(Must(ctx.Reshape(s, sixteen, 1)), "r");
    n = Named(Must(ctx.Unary(alloc::Op::kNeg, r, 0.0f, false)), "n");
    EndWithOutputs(n, hi, lo, alloc::Op::kScale, 0.5f);
  }
  // x = 0..15, w = 100.
  void FillLeafs() {
    Fill(x, 0.0f, 1.0f);
    Fill(w, 100.0f, 0.0f);
  }
  // The outputs after Evaluate on the leafs of FillLeafs.
  void ExpectValues() {
    std::vector<float> want_h, want_out;
    for (int i = 0; i < 16; ++i) want_h.push_back(-(100.0f + i));
    for (int i = 0; i < 8; ++i) want_out.push_back((100.0f + 8 + i) / 2);
    for (int i = 0; i < 8; ++i) want_out.push_back((100.0f + i) / 2);
    EXPECT_EQ(Values(h), want_h);
    EXPECT_EQ(Values(out), want_out);
  }
};

// The head with in-place chains, placed by a real GraphAllocator (one buffer, 32-byte alignment):
// n = -hi, m = 2n (in place of n), h = f16(m), cat = concat(lo, m), out = -cat (in place of cat).
struct PlacedInplaceGraph : MixedGraphBase {
  alloc::Tensor *n, *m;
  std::unique_ptr<alloc::GraphAllocator> alloc = MakeAllocator({alloc::BufferSpec{32, 1 << 20}});
  PlacedInplaceGraph() {
    n = Named(Must(ctx.Unary(alloc::Op::kNeg, hi, 0.0f, false)), "n");
    m = Named(Must(ctx.Unary(alloc::Op::kScale, n, 2.0f, false)), "m");
    EndWithOutputs(m, lo, m, alloc::Op::kNeg, 0.0f);
  }
  void Allocate() {
    ASSERT_TRUE(IsOk(alloc->Reserve(g)));
    ASSERT_TRUE(IsOk(alloc->AllocGraph(g)));
    // The placement exercises in-place reuse, or the "passes" tests of the oracles prove less.
    ASSERT_EQ(m->data, n->data);
    ASSERT_EQ(out->data, cat->data);
  }
  // x = 1..16, w = 0.5.
  void FillLeafs() {
    Fill(x, 1.0f, 1.0f);
    Fill(w, 0.5f, 0.0f);
  }
  std::vector<oracles::BufferExtent> Extents() const { return {{alloc->buffer_base(0), alloc->buffer_size(0), 32}}; }
};

}  // namespace lifeline::testing_util
