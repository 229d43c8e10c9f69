#include "harness/oracles/alloc_oracles.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "layers/alloc/eval.h"

namespace lifeline::oracles {

using alloc::Graph;
using alloc::Tensor;

namespace {

bool Owned(const Tensor* t, const void* allocator) {
  return !t->is_view() && t->data != nullptr && t->owner == allocator;
}

std::string Range(const Tensor* t) {
  return t->name + " [" + std::to_string(reinterpret_cast<uintptr_t>(t->data)) + ", +" +
         std::to_string(t->nbytes()) + ")";
}

}  // namespace

Status CheckNoLiveOverlap(const Graph& graph, const void* allocator, const ReadAt& read_at) {
  const int n = static_cast<int>(graph.nodes.size());
  struct Life {
    int start;
    int end;
  };
  // In graph order (leafs, then nodes), so the pair reported first is the same on every run.
  std::vector<const Tensor*> order;
  std::unordered_map<const Tensor*, Life> life;
  std::unordered_map<const Tensor*, int> pos;
  for (int i = 0; i < n; ++i) pos[graph.nodes[i]] = i;
  auto track = [&](const Tensor* t, Life l) {
    if (life.emplace(t, l).second) order.push_back(t);
  };
  for (const Tensor* t : graph.leafs) {
    if (Owned(t, allocator)) track(t, {0, t->output ? n : 0});
  }
  for (int i = 0; i < n; ++i) {
    const Tensor* t = graph.nodes[i];
    if (Owned(t, allocator)) track(t, {t->input ? 0 : i, t->output ? n : i});
  }
  // An output that is a view keeps the bytes it views alive to the end.
  auto keep_to_end = [&](const Tensor* t) {
    if (!t->output || !t->is_view()) return;
    for (const Tensor* s = t->view_src; s != nullptr; s = s->view_src) {
      auto it = life.find(s);
      if (it != life.end()) it->second.end = n;
    }
  };
  for (const Tensor* t : graph.nodes) keep_to_end(t);
  for (const Tensor* t : graph.leafs) keep_to_end(t);
  // Every read (and in-place write) at node i extends the life of the tensor it reaches through views, to i or
  // to where read_at says node i reads it.
  for (int i = 0; i < n; ++i) {
    const Tensor* node = graph.nodes[i];
    auto touch = [&](const Tensor* s, int at) {
      for (; s != nullptr; s = s->view_src) {
        auto it = life.find(s);
        if (it != life.end() && it->second.end < at) it->second.end = at;
      }
    };
    for (const Tensor* s : node->src) {
      if (s != nullptr) touch(s, read_at ? std::min(i, read_at(i, s)) : i);
    }
    touch(node->view_src, i);
  }
  for (size_t ia = 0; ia < order.size(); ++ia) {
    for (size_t ib = ia + 1; ib < order.size(); ++ib) {
      const Tensor* ta = order[ia];
      const Tensor* tb = order[ib];
      const Life la = life.at(ta);
      const Life lb = life.at(tb);
      const uint8_t* a0 = static_cast<const uint8_t*>(ta->data);
      const uint8_t* b0 = static_cast<const uint8_t*>(tb->data);
      if (!(a0 < b0 + tb->nbytes() && b0 < a0 + ta->nbytes())) continue;  // disjoint bytes
      if (la.end < lb.start || lb.end < la.start) continue;  // disjoint lives
      // In-place reuse: the later one is an elementwise node defined where the earlier one's life ends,
      // reading it, in exactly the same bytes.
      auto inplace_ok = [&](const Tensor* early, Life le, const Tensor* late, Life ll) {
        if (le.end != ll.start || !alloc::OpCanInplace(late->op) || early->data != late->data ||
            early->nbytes() != late->nbytes() || pos.find(late) == pos.end()) {
          return false;
        }
        for (const Tensor* s : late->src) {
          for (; s != nullptr; s = s->view_src) {
            if (s == early) return true;
          }
        }
        return false;
      };
      if (inplace_ok(ta, la, tb, lb) || inplace_ok(tb, lb, ta, la)) continue;
      return Internal("no-overlap oracle: " + Range(ta) + " live at nodes [" + std::to_string(la.start) + ", " +
             std::to_string(la.end) + "] and " + Range(tb) + " live at nodes [" + std::to_string(lb.start) + ", " +
             std::to_string(lb.end) + "] share bytes");
    }
  }
  return Status::Ok();
}

Status CheckViewsInsideSources(const Graph& graph) {
  auto check = [](const Tensor* t) -> Status {
    if (!t->is_view() || t->data == nullptr) return Status::Ok();
    const Tensor* r = t->root();
    if (r->data == nullptr) {
      return Internal("view oracle: " + t->name + " has memory but its source " + r->name + " has none");
    }
    const uint8_t* v = static_cast<const uint8_t*>(t->data);
    const uint8_t* s = static_cast<const uint8_t*>(r->data);
    if (v < s || v + t->nbytes() > s + r->nbytes()) {
      return Internal("view oracle: " + Range(t) + " lies outside its source " + Range(r));
    }
    return Status::Ok();
  };
  for (const Tensor* t : graph.leafs) {
    if (Status e = check(t); !e.ok()) return e;
  }
  for (const Tensor* t : graph.nodes) {
    if (Status e = check(t); !e.ok()) return e;
  }
  return Status::Ok();
}

Status CheckPlacedInsideBuffers(const Graph& graph, const void* allocator, const std::vector<BufferExtent>& buffers) {
  auto check = [&](const Tensor* t) -> Status {
    if (!Owned(t, allocator)) return Status::Ok();
    const uint8_t* p = static_cast<const uint8_t*>(t->data);
    for (const BufferExtent& b : buffers) {
      if (b.base == nullptr || p < b.base || p >= b.base + b.size) continue;
      if (p + t->nbytes() > b.base + b.size) {
        return Internal("buffer oracle: " + Range(t) + " runs past the end of its " + std::to_string(b.size) +
                        "-byte buffer");
      }
      if ((p - b.base) % b.alignment != 0) {
        return Internal("buffer oracle: " + t->name + " at offset " + std::to_string(p - b.base) + " is not aligned to " +
               std::to_string(b.alignment));
      }
      return Status::Ok();
    }
    return Internal("buffer oracle: " + Range(t) + " is placed by the allocator but lies in none of its buffers");
  };
  for (const Tensor* t : graph.leafs) {
    if (Status e = check(t); !e.ok()) return e;
  }
  for (const Tensor* t : graph.nodes) {
    if (Status e = check(t); !e.ok()) return e;
  }
  return Status::Ok();
}

std::vector<const Tensor*> WrittenExternal(const Graph& graph, const void* allocator) {
  std::vector<const Tensor*> out;
  for (const Tensor* t : graph.nodes) {
    if (t->op != alloc::Op::kSetRows) continue;  // in-place ops never write external memory: the canary says so
    const Tensor* r = t->root();
    if (r->data != nullptr && r->owner != allocator && std::find(out.begin(), out.end(), r) == out.end()) {
      out.push_back(r);
    }
  }
  return out;
}

Canary::Canary(const Graph& graph, const void* allocator) {
  const std::vector<const Tensor*> written = WrittenExternal(graph, allocator);
  auto save = [&](const Tensor* t) {
    const Tensor* r = t->root();
    if (r->data == nullptr || r->owner == allocator) return;
    if (std::find(written.begin(), written.end(), r) != written.end()) return;
    const uint8_t* p = static_cast<const uint8_t*>(r->data);
    saved_.emplace_back(r, std::vector<uint8_t>(p, p + r->nbytes()));
  };
  for (const Tensor* t : graph.leafs) save(t);
}

Status Canary::Check() const {
  for (const auto& [t, bytes] : saved_) {
    if (std::memcmp(t->data, bytes.data(), bytes.size()) != 0) {
      return Internal("canary oracle: external tensor " + t->name + " (" + std::to_string(bytes.size()) +
             " bytes, not this graph's to write) changed");
    }
  }
  return Status::Ok();
}

Differential::Differential(const Graph& graph, const void* allocator, const std::vector<Tensor*>& outputs) {
  // Separate memory for every tensor the allocator placed; external tensors are read where they are, except those the
  // graph writes (WrittenExternal), which are copied as the leafs are.
  std::unordered_map<const Tensor*, std::unique_ptr<uint8_t[]>> shadow;
  auto own = [&](const Tensor* t) { return !t->is_view() && t->owner == allocator; };
  for (const Tensor* t : graph.leafs) {
    if (!own(t)) continue;
    auto copy = std::make_unique<uint8_t[]>(t->nbytes());
    std::memcpy(copy.get(), t->data, t->nbytes());
    shadow[t] = std::move(copy);
  }
  for (const Tensor* t : graph.nodes) {
    if (own(t)) shadow[t] = std::make_unique<uint8_t[]>(t->nbytes());
  }
  const std::vector<const Tensor*> written = WrittenExternal(graph, allocator);
  for (const Tensor* t : written) {
    auto copy = std::make_unique<uint8_t[]>(t->nbytes());
    std::memcpy(copy.get(), t->data, t->nbytes());
    shadow[t] = std::move(copy);
  }
  alloc::DataOf data_of = [&](const Tensor* t) -> void* {
    if (t->is_view()) {
      void* base = data_of(t->view_src);
      return base == nullptr ? nullptr : static_cast<uint8_t*>(base) + t->view_offs;
    }
    auto it = shadow.find(t);
    return it != shadow.end() ? it->second.get() : t->data;
  };
  if (Status s = alloc::Evaluate(graph, data_of, &nonfinite_row_input_); !s.ok()) {
    error_ = Internal("differential oracle: the reference run failed: " + s.ToString());
    return;
  }
  for (const Tensor* out : outputs) {
    const uint8_t* p = static_cast<const uint8_t*>(data_of(out));
    expected_.emplace_back(out, std::vector<uint8_t>(p, p + out->nbytes()));
  }
  outputs_ = expected_.size();
  for (const Tensor* t : written) {
    const uint8_t* p = shadow[t].get();
    expected_.emplace_back(t, std::vector<uint8_t>(p, p + t->nbytes()));
  }
}

bool SameElement(float got, float want, Equality eq) {
  if (std::memcmp(&got, &want, sizeof(float)) == 0) return true;
  if (eq == Equality::kClose) {
    if (std::isnan(want)) return true;  // undefined or ill-conditioned in the reference: not compared
    if (std::isnan(got)) return false;
    return std::fabs(got - want) <= 0.01f * std::max(1.0f, std::fabs(want));
  }
  return eq == Equality::kZeroSignFree && got == 0.0f && want == 0.0f;
}

Status Differential::Check(Equality eq) const {
  if (!error_.ok()) return error_;
  for (size_t k = 0; k < expected_.size(); ++k) {
    const auto& [t, bytes] = expected_[k];
    if (std::memcmp(t->data, bytes.data(), bytes.size()) == 0) continue;
    const std::string what = (k < outputs_ ? "output " : "written external tensor ") + t->name;
    size_t n = t->nelements();
    for (size_t i = 0; i < n; ++i) {
      float got = alloc::LoadElement(t->type, t->data, static_cast<int64_t>(i));
      float want = alloc::LoadElement(t->type, bytes.data(), static_cast<int64_t>(i));
      if (!SameElement(got, want, eq)) {
        return Internal("differential oracle: " + what + " element " + std::to_string(i) + " is " +
               std::to_string(got) + " on placed memory but " + std::to_string(want) + " on separate memory");
      }
    }
    if (eq == Equality::kBits) return Internal("differential oracle: " + what + " differs in its bytes");
  }
  return Status::Ok();
}

}  // namespace lifeline::oracles
