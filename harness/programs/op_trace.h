// How op programs show themselves: the trace a failing LIFELINE_CHECK prints (OpTraceScope's render
// callback) and the program LIFELINE_TRACE prints before it runs. One line per op, the current one
// marked: "  => #3 <Describe(op)>". Shared by every program in harness/programs/.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lifeline {

// OpTraceScope::Render for a vector-like of ops whose `Describe(op)` is found by argument-dependent lookup.
template <typename Ops>
void RenderOps(const void* ops, size_t current, std::FILE* out) {
  const auto& v = *static_cast<const Ops*>(ops);
  for (size_t i = 0; i < v.size(); ++i)
    std::fprintf(out, "  %s #%zu %s\n", i == current ? "=>" : "  ", i, Describe(v[i]).c_str());
}

// "0: <op>\n1: <op>\n...": the text the decoders' golden tests pin.
template <typename Ops>
std::string DescribeNumbered(const Ops& ops) {
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) out += std::to_string(i) + ": " + Describe(ops[i]) + "\n";
  return out;
}

// LIFELINE_TRACE set (to anything): print each decoded program before it runs. Read once per process;
// fuzz iterations do not call getenv.
inline bool TraceRequested() {
  static const bool on = std::getenv("LIFELINE_TRACE") != nullptr;
  return on;
}

}  // namespace lifeline
