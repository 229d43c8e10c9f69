// How op programs show themselves, one format for every family:
//   NameOf(kNames, kind)  each family's op names: one table per enum, indexed by the enumerator
//   Describe(program)  "#0 <op>\n#1 <op>\n..."  what the decoders' golden tests pin
//   the op trace       "  => #3 <op>" for the op that was running, "     #i <op>" for the rest: what a
//                      failing LIFELINE_CHECK prints (OpTraceScope's render callback)
//   LIFELINE_TRACE=1   "lifeline: program of N ops", a preamble (e.g. the allocators), then the trace:
//                      printed before the program runs, so a minimized input reads like a written test
// `Describe(op)` of each family is found by argument-dependent lookup.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lifeline::programs {

// The name of `kind` in `names`, a table with one entry per enumerator of `Kind` (contiguous up to
// `Kind::kMaxValue`), in enum order.
template <typename Kind, size_t N>
const char* NameOf(const char* const (&names)[N], Kind kind) {
  static_assert(N == static_cast<size_t>(Kind::kMaxValue) + 1, "one name per enumerator");
  return names[static_cast<size_t>(kind)];
}

// `bytes` as a double-quoted string: printable ASCII as it is (quote and backslash escaped), every other
// byte as \xNN, so an op's text shows exactly the bytes a program hands over.
inline std::string Quote(const std::string& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out + "\"";
}

// OpTraceScope::Render for a vector-like of ops.
template <typename Ops>
void RenderOps(const void* ops, size_t current, std::FILE* out) {
  const auto& v = *static_cast<const Ops*>(ops);
  for (size_t i = 0; i < v.size(); ++i)
    std::fprintf(out, "  %s #%zu %s\n", i == current ? "=>" : "  ", i, Describe(v[i]).c_str());
}

// "#0 <op>\n#1 <op>\n...".
template <typename Ops>
std::string DescribeNumbered(const Ops& ops) {
  std::string out;
  for (size_t i = 0; i < ops.size(); ++i) out += "#" + std::to_string(i) + " " + Describe(ops[i]) + "\n";
  return out;
}

// LIFELINE_TRACE set (to anything): print each decoded program before it runs. Read once per process;
// fuzz iterations do not call getenv.
inline bool TraceRequested() {
  static const bool on = std::getenv("LIFELINE_TRACE") != nullptr;
  return on;
}

// With LIFELINE_TRACE: the program's header line, `preamble` (lines that are part of the program but not
// ops), and every op.
template <typename Ops>
void MaybePrintProgram(const Ops& ops, const std::string& preamble = "") {
  if (!TraceRequested()) return;
  std::fprintf(stderr, "lifeline: program of %zu ops\n%s", ops.size(), preamble.c_str());
  RenderOps<Ops>(&ops, ops.size(), stderr);
}

}  // namespace lifeline::programs
