// ExportGgmlC: a graph program (format.h) as one standalone C file that replays it on upstream ggml with
// nothing of lifeline: only ggml's public headers (ggml.h, ggml-alloc.h, ggml-backend.h, ggml-cpu.h).
// It is what `lifeline export <bug-id>` attaches to an upstream issue, generated from the decoded program,
// never written by hand.
//
// The C mirrors what GgmlAdapter (ggml_adapter.cc) does for each step, with two differences it states in
// its header comment: every buffer of an allocator is ggml_backend_cpu_buffer_type() (the adapter's are
// host buffer types of its own with the program's alignments), and ggml's aborts are ggml's own (no abort
// callback). Per step:
//   graph-editing steps (leaf, unary, ..., rewire, grow)   a comment; the graph's build function has them
//   pre-allocated leafs (toggle on/off)                    malloc'd memory filled with LeafValue's formula
//   reserve                                                build afresh, ggml_gallocr_reserve_n
//   alloc+compute                                          build afresh, ggml_gallocr_alloc_graph, fill the
//                                                          allocator's leafs, ggml_backend_graph_compute on the
//                                                          CPU backend (1 thread), then check_same_outputs: the
//                                                          same graph placed by a fresh ggml_gallocr_new must
//                                                          compute the same output bytes (an assert())
// A step whose predicted status (Step::expect) is not OK is a comment only. Every graph is built in a new
// ggml context for every reserve and alloc (one C function per distinct build), as the adapter does.
#pragma once

#include <string>

#include "core/status.h"
#include "harness/programs/graph/format.h"

namespace lifeline::graphs {

struct ExportOptions {
  // One line naming what was exported (e.g. "<bug-id>/<input>"), printed in the file's header comment.
  std::string label;
};

// The C source text. Fails (INVALID_ARGUMENT) when a step predicted OK is refused by the program's
// graphs (the book), i.e. the program is not one the decoder produces, or when the label is not one line
// of printable text without "*/".
StatusOr<std::string> ExportGgmlC(const Program& program, const ExportOptions& options);

}  // namespace lifeline::graphs
