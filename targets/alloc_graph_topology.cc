// alloc_graph_topology: no two live tensors overlap, every view lies inside its source, every tensor is
// placed inside its buffer, external memory is never written, and results on allocator-placed memory
// equal results on separately allocated memory — across graphs built, planned, placed, computed and
// mutated in any order over two allocators.
//
// Property and oracles: harness/oracles/alloc_oracles.h, run after every placement by the LayerAdapter
// (harness/programs/layer_adapter.cc); statuses checked against the decoder's model
// (harness/programs/graph_program.cc); allocator buffers back to zero at the end. The allocator's own
// always-on checks (gallocr-view-leaf-offset) and ASan/valgrind on poisoned free buffer space add to that.
// Shapes it reaches: whisper's conv -> encoder (a leaf view of another graph's output), same counts with
// different edges after Reserve, grown graphs, leafs that gain or lose their own memory between Reserve
// and AllocGraph, views of graphs that were reserved but never placed.
// Out of scope: allocation failure (buffers are large; see tests/alloc_test.cc), multi-threading.
// Replay: build/<lane>/targets/alloc_graph_topology FILE|DIR   (LIFELINE_TRACE=1 prints the program).
//
// The op-level mutator works on whole steps: each step's bytes are one contiguous range (StepSpans), so
// it deletes, duplicates, swaps or re-rolls steps, and half the time defers to libFuzzer's byte
// mutations. It is off unless LIFELINE_STEP_MUTATOR=1: on gallocr-view-leaf-offset (bench/tte.py, 10
// seeds per run, three runs each, all 10/10) byte mutation alone had medians of 3.0, 4.3 and 2.0 s and
// the step mutator 5.1, 4.1 and 9.6 s, so plain libFuzzer mutation is what runs by default.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "harness/programs/graph_program.h"

// Provided by libFuzzer; absent (null) when linked with the replay driver, which never mutates.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  lifeline::graphs::Program program = lifeline::graphs::Decode(data, size);
  std::unique_ptr<lifeline::graphs::AllocatorAdapter> adapter = lifeline::graphs::MakeLayerAdapter();
  lifeline::graphs::Execute(program, *adapter);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  static const bool default_only = std::getenv("LIFELINE_STEP_MUTATOR") == nullptr;
  if (default_only) return LLVMFuzzerMutate(data, size, max_size);
  std::minstd_rand rng(seed);
  if (rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  auto spans = lifeline::graphs::StepSpans(data, size);  // decodes the input: only when it is used
  if (spans.size() < 2) return LLVMFuzzerMutate(data, size, max_size);

  // spans[0] is the allocator header; steps are spans[1..].
  std::vector<uint8_t> bytes(data, data + size);
  auto step = [&](size_t i) { return spans[1 + i]; };
  const size_t n = spans.size() - 1;
  auto cut = [&](std::pair<size_t, size_t> s) {
    return std::vector<uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(s.first),
                                bytes.begin() + static_cast<std::ptrdiff_t>(s.second));
  };
  switch (rng() % 4) {
    case 0: {  // delete a step
      auto s = step(rng() % n);
      bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(s.first), bytes.begin() + static_cast<std::ptrdiff_t>(s.second));
      break;
    }
    case 1: {  // duplicate a step next to itself
      auto s = step(rng() % n);
      std::vector<uint8_t> copy = cut(s);
      bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(s.first), copy.begin(), copy.end());
      break;
    }
    case 2: {  // swap two steps
      size_t a = rng() % n, b = rng() % n;
      if (a == b) break;
      auto sa = step(std::max(a, b));  // lower offsets: the later step
      auto sb = step(std::min(a, b));
      std::vector<uint8_t> late = cut(sa), early = cut(sb);
      std::vector<uint8_t> out(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(sa.first));
      out.insert(out.end(), early.begin(), early.end());
      out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(sa.second), bytes.begin() + static_cast<std::ptrdiff_t>(sb.first));
      out.insert(out.end(), late.begin(), late.end());
      out.insert(out.end(), bytes.begin() + static_cast<std::ptrdiff_t>(sb.second), bytes.end());
      bytes.swap(out);
      break;
    }
    default: {  // re-roll one step's bytes
      auto s = step(rng() % n);
      for (size_t i = s.first; i < s.second; ++i) bytes[i] = static_cast<uint8_t>(rng());
      break;
    }
  }
  if (bytes.size() > max_size || bytes.empty()) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
