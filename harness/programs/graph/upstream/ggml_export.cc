// ExportGgmlC (see ggml_export.h): a graph program as a standalone C reproducer on upstream ggml.
//
// The program's graphs are kept in a GraphBook, as the adapters keep them, so shapes, outputs, rewired
// sources and view chains are exactly the adapter's. What the C does at run time is decided here, step by
// step, from the same state GgmlAdapter would be in: which graphs a build of graph g pulls in (a leaf view
// of a tensor of graph h that h never placed builds h afresh, as GgmlGraphAdapter::Source does) and which
// tensors have a latest placement to view.
#include "harness/programs/graph/upstream/ggml_export.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/programs/graph/graph_book.h"

namespace lifeline::graphs {
namespace {

using alloc::Tensor;

constexpr int kGraphSize = 4 * kMaxTensorsPerGraph + 16;  // as in ggml_graph_adapter.h: tensors, ggml_cpy destinations
constexpr int kMaxBufferIds = 2 * kGraphSize;             // node/leaf buffer id arrays for reserve_n

// Everything the C file needs besides the steps: ggml's headers, the build record, leaf contents, the
// placement and the fresh-gallocr check. Written for a reader who knows ggml and not lifeline.
constexpr const char kPrelude[] = R"C(#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#define MAX_GRAPHS @MAX_GRAPHS@
#define MAX_TENSORS @MAX_TENSORS@   /* per graph */
#define GRAPH_SIZE @GRAPH_SIZE@     /* ggml graph capacity: the tensors and ggml_cpy's destinations */
#define N_BUFFER_IDS @N_BUFFER_IDS@ /* entries of the node and leaf buffer id arrays for ggml_gallocr_reserve_n */
#define MAX_THREADS @MAX_THREADS@   /* the CPU backend's threads: 1 to MAX_THREADS */

static ggml_backend_t cpu;
static ggml_gallocr_t galloc[2];
static int buffer_ids[2][N_BUFFER_IDS];            /* position i -> buffer i % n_buffers, per allocator */
static void * leaf_memory[MAX_GRAPHS][MAX_TENSORS]; /* pre-allocated leafs: memory from outside every gallocr */
static struct ggml_tensor * placed[MAX_GRAPHS][MAX_TENSORS]; /* each graph's tensors as last placed and computed */

/* One build of a graph: a fresh ggml context (no_alloc) holding the graph and its tensors. Builds are kept
   until the end, because a later graph may view a tensor of an earlier one (ggml_view_tensor). */
struct build {
    struct ggml_context * ctx;
    struct ggml_cgraph * graph;
    int g;                              /* which graph of the program */
    struct ggml_tensor * t[MAX_TENSORS]; /* t[i]: the graph's tensor i, NULL when no output depends on it */
    struct build * next;
};
static struct build * builds;

/* Which step runs now, so that a report below names it. */
static void step(const char * what) {
    fprintf(stderr, "repro: %s\n", what);
}

static void unexpected(const char * what) {
    /* Not the finding: ggml refused something the generating program expected to work. */
    fprintf(stderr, "repro: unexpected: %s\n", what);
    exit(2);
}

static struct build * new_build(int g) {
    struct build * b = calloc(1, sizeof(*b));
    struct ggml_init_params params = {
        /*.mem_size   =*/ ggml_tensor_overhead() * GRAPH_SIZE + ggml_graph_overhead_custom(GRAPH_SIZE, false),
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ true,
    };
    if (b == NULL) unexpected("out of memory");
    b->ctx = ggml_init(params);
    if (b->ctx == NULL) unexpected("ggml_init failed");
    b->graph = ggml_new_graph_custom(b->ctx, GRAPH_SIZE, false);
    b->g = g;
    b->next = builds;
    builds = b;
    return b;
}

static void free_build(struct build * b) {
    ggml_free(b->ctx);
    free(b);
}

/* Deterministic leaf contents: small multiples of 1/4, exact in F16. */
static float leaf_value(int g, int i, int64_t e) {
    return (float)((((int64_t)g * 31 + (int64_t)i * 7 + e * 3) % 17) - 8) / 4.0f;
}

static void fill(void * data, enum ggml_type type, int64_t n, int g, int i) {
    for (int64_t e = 0; e < n; ++e) {
        if (type == GGML_TYPE_F16) {
            ((ggml_fp16_t *)data)[e] = ggml_fp32_to_fp16(leaf_value(g, i, e));
        } else {
            ((float *)data)[e] = leaf_value(g, i, e);
        }
    }
}

@BEGIN leaf_memory_on@
/* Graph g's leaf i gets memory of its own, filled like every leaf: the next build sets t->data to it. */
static void leaf_memory_on(int g, int i, enum ggml_type type, int64_t n) {
    void * old = leaf_memory[g][i];
    leaf_memory[g][i] = malloc((size_t)n * ggml_type_size(type));
    if (leaf_memory[g][i] == NULL) unexpected("out of memory");
    fill(leaf_memory[g][i], type, n, g, i);
    free(old);
}
@END@
@BEGIN leaf_memory_off@
/* ... or loses it: the next build leaves it to the gallocr. */
static void leaf_memory_off(int g, int i) {
    free(leaf_memory[g][i]);
    leaf_memory[g][i] = NULL;
}
@END@
/* The caller's part after a placement: fill the leafs the gallocr placed (inputs, weights). */
static void fill_leafs(const struct build * b) {
    for (int i = 0; i < MAX_TENSORS; ++i) {
        struct ggml_tensor * t = b->t[i];
        if (t != NULL && t->op == GGML_OP_NONE && t->view_src == NULL && t->buffer != NULL) {
            fill(t->data, t->type, ggml_nelements(t), b->g, i);
        }
    }
}

static void compute(const struct build * b) {
    enum ggml_status st = ggml_backend_graph_compute(cpu, b->graph);
    if (st != GGML_STATUS_SUCCESS) {
        fprintf(stderr, "repro: ggml_backend_graph_compute of g%d returned %s\n", b->g, ggml_status_to_string(st));
        abort();
    }
}

@BEGIN reserve@
static void reserve(int k, struct build * b) {
    if (!ggml_gallocr_reserve_n(galloc[k], b->graph, buffer_ids[k], buffer_ids[k])) {
        unexpected("ggml_gallocr_reserve_n failed");
    }
}
@END@
static void alloc_graph(int k, struct build * b) {
    if (!ggml_gallocr_alloc_graph(galloc[k], b->graph)) unexpected("ggml_gallocr_alloc_graph returned false");
}

static void remember_placement(const struct build * b) {
    for (int i = 0; i < MAX_TENSORS; ++i) {
        if (b->t[i] != NULL) placed[b->g][i] = b->t[i];
    }
}

/* The check: `b` was placed by galloc[k] and computed. The same graph, built again (`build_again`) and
   placed by a fresh gallocr with one CPU buffer, must compute the same bytes in every output: where the
   two differ, galloc[k] placed tensors that are live at the same time in the same bytes. */
static void check_same_outputs(int k, const struct build * b, struct build * (*build_again)(void)) {
    ggml_gallocr_t fresh = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    struct build * again = build_again();
    int outputs_equal = 1;
    if (!ggml_gallocr_alloc_graph(fresh, again->graph)) unexpected("a fresh gallocr could not place the graph");
    fill_leafs(again);
    compute(again);
    for (int i = 0; i < MAX_TENSORS && outputs_equal; ++i) {
        const struct ggml_tensor * t = b->t[i];
        if (t == NULL || !(t->flags & GGML_TENSOR_FLAG_OUTPUT)) continue;
        if (memcmp(t->data, again->t[i]->data, ggml_nbytes(t)) == 0) continue;
        for (int64_t e = 0; e < ggml_nelements(t); ++e) {
            float placed_value = t->type == GGML_TYPE_F16 ? ggml_fp16_to_fp32(((const ggml_fp16_t *)t->data)[e])
                                                          : ((const float *)t->data)[e];
            const void * d = again->t[i]->data;
            float fresh_value = t->type == GGML_TYPE_F16 ? ggml_fp16_to_fp32(((const ggml_fp16_t *)d)[e])
                                                         : ((const float *)d)[e];
            if (memcmp(&placed_value, &fresh_value, sizeof(float)) != 0) {
                fprintf(stderr, "repro: output %s element %lld is %g as placed by galloc[%d] but %g as placed by "
                        "a fresh gallocr\n", t->name, (long long)e, placed_value, k, fresh_value);
                break;
            }
        }
        outputs_equal = 0;
    }
    ggml_gallocr_free(fresh);
    builds = again->next; /* the last build: nothing views it */
    free_build(again);
    assert(outputs_equal && "the outputs differ from those of the same graph placed by a fresh gallocr");
}

@BEGIN threads@
/* The CPU backend's threads, as lifeline's harness sets them: above 1, a ggml thread pool of that many
   threads (poll 0: the workers sleep between computes), one per count, made on first use and kept to the end,
   as llama.cpp keeps its pools. With LIFELINE_GGML_POOL_COMPUTES=<n> in the environment, a pool first computes
   a one-node graph n times when it is made: the graphs a long-lived process has computed on its pool. */
static struct ggml_threadpool * pools[MAX_THREADS + 1];

static void age_pool(int n, long computes) {
    struct ggml_init_params params = {
        /*.mem_size   =*/ ggml_tensor_overhead() * 2 + ggml_graph_overhead_custom(1, false) + 256,
        /*.mem_buffer =*/ NULL,
        /*.no_alloc   =*/ false, /* the tensors' bytes in the context */
    };
    struct ggml_context * ctx = ggml_init(params);
    struct ggml_tensor * x;
    struct ggml_cgraph * graph;
    if (ctx == NULL) unexpected("ggml_init failed");
    x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 4);
    memset(x->data, 0, ggml_nbytes(x));
    graph = ggml_new_graph_custom(ctx, 1, false);
    ggml_build_forward_expand(graph, ggml_scale(ctx, x, 0.5f));
    fprintf(stderr, "repro: the %d-thread pool first computes a one-node graph %ld times\n", n, computes);
    for (long i = 0; i < computes; ++i) {
        if (ggml_backend_graph_compute(cpu, graph) != GGML_STATUS_SUCCESS) unexpected("computing the one-node graph failed");
    }
    ggml_free(ctx);
}

static void set_threads(int n) {
    const char * computes = getenv("LIFELINE_GGML_POOL_COMPUTES");
    int made = 0;
    if (n > 1 && pools[n] == NULL) {
        struct ggml_threadpool_params params = ggml_threadpool_params_default(n);
        params.poll = 0;
        pools[n] = ggml_threadpool_new(&params);
        if (pools[n] == NULL) unexpected("ggml_threadpool_new failed");
        made = 1;
    }
    ggml_backend_cpu_set_threadpool(cpu, n > 1 ? pools[n] : NULL);
    ggml_backend_cpu_set_n_threads(cpu, n);
    if (made && computes != NULL && *computes != '\0') age_pool(n, atol(computes));
}

static void free_pools(void) {
    for (int n = 0; n <= MAX_THREADS; ++n) ggml_threadpool_free(pools[n]);
}
@END@
static void setup(void) {
    cpu = ggml_backend_cpu_init();
    if (cpu == NULL) unexpected("ggml_backend_cpu_init failed");
    ggml_backend_cpu_set_n_threads(cpu, 1);
}

static void teardown(void) {
    for (int k = 0; k < 2; ++k) ggml_gallocr_free(galloc[k]);
    while (builds != NULL) {
        struct build * next = builds->next;
        free_build(builds);
        builds = next;
    }
    for (int g = 0; g < MAX_GRAPHS; ++g) {
        for (int i = 0; i < MAX_TENSORS; ++i) free(leaf_memory[g][i]);
    }
    ggml_backend_free(cpu);
}
)C";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// `text` with each "@BEGIN name@\n ... @END@\n" section kept (markers removed, a blank line after it) when `used` holds name, else
// dropped: the prelude's helpers that a program does not call are left out (no unused static functions).
std::string Sections(const std::string& text, const std::set<std::string>& used) {
  std::string out;
  size_t at = 0;
  for (size_t begin = text.find("@BEGIN "); begin != std::string::npos; begin = text.find("@BEGIN ", at)) {
    out += text.substr(at, begin - at);
    const size_t name_end = text.find("@\n", begin + 7);
    const size_t end = text.find("@END@\n", name_end);
    const std::string name = text.substr(begin + 7, name_end - begin - 7);
    if (used.count(name)) out += text.substr(name_end + 2, end - name_end - 2) + "\n";
    at = end + 6;
  }
  return out + text.substr(at);
}

// Text safe inside a /* */ comment.
std::string CommentText(std::string s) { return Replace(std::move(s), "*/", "* /"); }

// Text safe inside a C string literal.
std::string CStringText(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += (ch < 0x20 || ch == 0x7f) ? ' ' : ch;
  }
  return out;
}

std::string FloatLiteral(float v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  std::string s = buf;
  if (s.find_first_of(".einf") == std::string::npos) s += ".0";
  return s + "f";
}

const char* GgmlType(alloc::DType t) { return t == alloc::DType::kF16 ? "GGML_TYPE_F16" : "GGML_TYPE_F32"; }

class Exporter {
 public:
  explicit Exporter(const Program& p) : p_(p) {}

  StatusOr<std::string> Run(const ExportOptions& options) {
    for (char c : options.label) {
      if (c < 0x20 || c == 0x7f) return InvalidArgument("the label must be one line of printable text");
    }
    if (options.label.find("*/") != std::string::npos) return InvalidArgument("the label must not hold \"*/\"");
    std::string main_body;
    for (int k = 0; k < kAllocators; ++k) main_body += CreateAllocator(k);
    bool previous_had_code = false;
    for (size_t i = 0; i < p_.steps.size(); ++i) {
      StatusOr<std::string> s = StepCode(i, p_.steps[i]);
      if (!s.ok()) return s.status();
      // Steps that only edit a graph are one comment line each, kept together; steps with code stand apart.
      const bool has_code = std::count(s.value().begin(), s.value().end(), '\n') > 1;
      if (has_code || i == 0 || previous_had_code) main_body += "\n";
      previous_had_code = has_code;
      main_body += s.value();
    }
    std::string out = Header(options);
    out += Replace(Replace(Replace(Replace(Sections(kPrelude, used_), "@MAX_GRAPHS@", std::to_string(kMaxGraphs)), "@MAX_TENSORS@",
                                       std::to_string(kMaxTensorsPerGraph)),
                               "@GRAPH_SIZE@", std::to_string(kGraphSize)),
                       "@N_BUFFER_IDS@", std::to_string(kMaxBufferIds));
    out = Replace(std::move(out), "@MAX_THREADS@", std::to_string(kMaxCpuThreads));
    for (const std::string& f : functions_) out += "\n" + f;
    out += "\nint main(void) {\n    struct build * b;\n\n    setup();\n";
    out += main_body;
    out += "\n    teardown();\n";
    if (used_.count("threads")) out += "    free_pools();\n";
    out += "    printf(\"repro: the program ran to its end: no assert, abort or sanitizer report\\n\");\n"
           "    return 0;\n}\n";
    return out;
  }

 private:
  std::string Header(const ExportOptions& options) const {
    std::string h = "/*\n";
    if (!options.label.empty()) h += " * " + options.label + "\n *\n";
    h += " * A standalone reproducer on upstream ggml, generated by lifeline (ggml_graph_topology_export) from\n"
         " * a graph program of its fuzz target ggml_graph_topology. It uses only ggml's public headers.\n"
         " *\n"
         " * The program (lifeline's trace of it):\n";
    std::string described = Describe(p_);
    size_t start = 0;
    while (start < described.size()) {
      size_t end = described.find('\n', start);
      if (end == std::string::npos) end = described.size();
      h += " *   " + CommentText(described.substr(start, end - start)) + "\n";
      start = end + 1;
    }
    h += " *\n"
         " * Every allocator is ggml_gallocr_new_n over ggml_backend_cpu_buffer_type() (one per buffer; the\n"
         " * alignments above are lifeline's own buffer types and are not used here). Every reserve and every\n"
         " * placement builds its graph afresh in a new ggml context. After each compute, check_same_outputs()\n"
         " * places the same graph with a fresh gallocr and asserts that every output has the same bytes.\n"
         " * Steps marked \"not run\" were predicted to fail in lifeline's model and are left out.\n"
         " */\n";
    return h;
  }

  std::string CreateAllocator(int k) {
    const size_t n = p_.allocators[k].buffers.size();
    std::string c = "\n    /* allocator " + std::to_string(k) + ": " + std::to_string(n) + " buffer(s) */\n";
    c += "    {\n        ggml_backend_buffer_type_t bufts[" + std::to_string(n) + "] = {";
    for (size_t b = 0; b < n; ++b) c += std::string(b ? ", " : "") + "ggml_backend_cpu_buffer_type()";
    c += "};\n";
    c += "        for (int i = 0; i < N_BUFFER_IDS; ++i) buffer_ids[" + std::to_string(k) + "][i] = i % " +
         std::to_string(n) + ";\n";
    c += "        galloc[" + std::to_string(k) + "] = ggml_gallocr_new_n(bufts, " + std::to_string(n) + ");\n    }\n";
    return c;
  }

  StatusOr<std::string> StepCode(size_t index, const Step& s) {
    std::string c = "    /* #" + std::to_string(index) + " " + CommentText(Describe(s));
    if (s.expect != StatusCode::kOk) return c + " (predicted to fail: not run) */\n";
    c += " */\n";
    const int g = s.graph;
    // The steps that call ggml say so when they start.
    const std::string announce = "    step(\"#" + std::to_string(index) + " " + CStringText(Describe(s)) + "\");\n";
    if (s.kind == StepKind::kReserve || s.kind == StepKind::kAlloc) c += announce;
    auto book_failed = [&](const Status& st) {
      return InvalidArgument("step #" + std::to_string(index) + " (" + Describe(s) +
                             ") was predicted OK but the program's graphs refuse it: " + st.ToString());
    };
    switch (s.kind) {
      case StepKind::kLeaf:
      case StepKind::kUnary:
      case StepKind::kBinary:
      case StepKind::kCopy:
      case StepKind::kConcat:
      case StepKind::kView:
      case StepKind::kViewExternal:
      case StepKind::kGrow: {
        Status st = book_.AddTensor(g, s.tensor);
        if (!st.ok()) return book_failed(st);
        const int t = book_.size(g) - 1;
        if (s.kind == StepKind::kGrow) st = book_.SetOutput(g, t);
        if (!st.ok()) return book_failed(st);
        if (s.kind == StepKind::kLeaf && s.tensor.preallocated) c += LeafMemoryOn(g, t);
        return c;
      }
      case StepKind::kMarkOutput:
      case StepKind::kSeal: {
        Status st = s.tensor_index >= 0 ? book_.SetOutput(g, s.tensor_index) : Status::Ok();
        if (!st.ok()) return book_failed(st);
        return c;
      }
      case StepKind::kRewire: {
        Status st = book_.Rewire(g, s.tensor_index, s.slot, s.new_src);
        if (!st.ok()) return book_failed(st);
        return c;
      }
      case StepKind::kTogglePrealloc: {
        const bool on = s.tensor.preallocated;
        Status st = book_.SetPreallocated(g, s.tensor_index, on);
        if (!st.ok()) return book_failed(st);
 if (!on) used_.insert("leaf_memory_off");
        c += on ? LeafMemoryOn(g, s.tensor_index)
                : "    leaf_memory_off(" + std::to_string(g) + ", " + std::to_string(s.tensor_index) + ");\n";
        // As GgmlGraphAdapter::SetPreallocated: the leaf and its views in this graph lose their latest placement.
        const Tensor* leaf = book_.tensor(g, s.tensor_index);
        for (int i = 0; i < book_.size(g); ++i) {
          if ((book_.tensor(g, i) == leaf || book_.tensor(g, i)->root() == leaf) && placed_[{g, i}]) {
            placed_[{g, i}] = false;
            c += "    placed[" + std::to_string(g) + "][" + std::to_string(i) + "] = NULL;\n";
          }
        }
        return c;
      }
      case StepKind::kReserve: {
        const std::string fn = BuildFunction(g);
        c += "    b = " + fn + "();\n";
        c += "    reserve(" + std::to_string(s.allocator) + ", b);\n";
        used_.insert("reserve");
        return c;
      }
      case StepKind::kAlloc: {
        const std::string fn = BuildFunction(g);
        const std::string k = std::to_string(s.allocator);
        c += "    b = " + fn + "();\n";
        c += "    alloc_graph(" + k + ", b);\n";
        c += "    fill_leafs(b);\n";
        if (p_.allocators[s.allocator].cpu_threads != threads_) {  // the program's threads for this allocator
          threads_ = p_.allocators[s.allocator].cpu_threads;
          c += "    set_threads(" + std::to_string(threads_) + ");\n";
          used_.insert("threads");
        }
        c += "    compute(b);\n";
        c += "    check_same_outputs(" + k + ", b, " + fn + ");\n";
        c += "    remember_placement(b);\n";
        std::vector<bool> made = Reachable(g);
        for (int i = 0; i < book_.size(g); ++i) {
          if (made[i]) placed_[{g, i}] = true;
        }
        return c;
      }
    }
    return c;
  }

  std::string LeafMemoryOn(int g, int t) {
    used_.insert("leaf_memory_on");
    const Tensor* m = book_.tensor(g, t);
    return "    leaf_memory_on(" + std::to_string(g) + ", " + std::to_string(t) + ", " + GgmlType(m->type) + ", " +
           std::to_string(m->nelements()) + ");\n";
  }

  // The tensors of graph g that a build creates: those an output depends on through its sources.
  std::vector<bool> Reachable(int g) const {
    std::vector<bool> made(book_.size(g), false);
    std::vector<int> stack;
    for (Tensor* out : book_.Outputs(g)) stack.push_back(book_.IndexOf(g, out));
    while (!stack.empty()) {
      int i = stack.back();
      stack.pop_back();
      if (made[i]) continue;
      made[i] = true;
      for (int src : book_.spec(g, i).src) {
        if (src >= 0) stack.push_back(src);
      }
    }
    return made;
  }

  // The name of a C function that builds graph g as it is now, in the state the program is in now (which
  // tensors of other graphs have a placement to view); functions with the same text are shared.
  std::string BuildFunction(int g) {
    std::string body;
    std::vector<bool> made(book_.size(g), false);
    std::string outputs;
    for (Tensor* out : book_.Outputs(g)) {
      const int i = book_.IndexOf(g, out);
      Make(g, i, made, body);
      body += "    ggml_build_forward_expand(b->graph, t[" + std::to_string(i) + "]);\n";
      outputs += " t" + std::to_string(i);
    }
    auto it = by_body_.find(body);
    if (it != by_body_.end()) return it->second;
    const std::string name = "build_g" + std::to_string(g) + "_" + std::to_string(count_[g]++);
    std::string f = "/* Graph g" + std::to_string(g) + " (outputs" + outputs + "), built afresh in a new context. */\n";
    f += "static struct build * " + name + "(void) {\n";
    f += "    struct build * b = new_build(" + std::to_string(g) + ");\n";
    f += "    struct ggml_context * ctx = b->ctx;\n";
    f += "    struct ggml_tensor ** t = b->t;\n\n";
    f += body;
    f += "    return b;\n}\n";
    functions_.push_back(f);
    by_body_[body] = name;
    return name;
  }

  // Appends the statements creating tensor i of graph g (sources first, in the order GgmlGraphAdapter::Make
  // creates them) unless `made` says they are there.
  void Make(int g, int i, std::vector<bool>& made, std::string& body) {
    if (made[i]) return;
    const TensorSpec& spec = book_.spec(g, i);
    const Tensor* m = book_.tensor(g, i);
    const std::string ti = "t[" + std::to_string(i) + "]";
    auto src = [&](int j) {
      Make(g, spec.src[j], made, body);
      return "t[" + std::to_string(spec.src[j]) + "]";
    };
    const std::string ip = spec.inplace ? "_inplace" : "";
    std::string expr;
    std::string after;
    switch (spec.op) {
      case alloc::Op::kNone:
        if (spec.external_graph >= 0) {
          expr = "ggml_view_tensor(ctx, " + SourceExpr(spec.external_graph, spec.external_tensor) + ")";
        } else {
          expr = "ggml_new_tensor_4d(ctx, " + std::string(GgmlType(m->type)) + ", " + std::to_string(m->ne[0]) + ", " +
                 std::to_string(m->ne[1]) + ", " + std::to_string(m->ne[2]) + ", " + std::to_string(m->ne[3]) + ")";
          if (book_.preallocated(g, i)) {
            after += "    " + ti + "->data = leaf_memory[" + std::to_string(g) + "][" + std::to_string(i) +
                     "]; /* pre-allocated: no backend buffer */\n";
          }
          if (m->input) after += "    ggml_set_input(" + ti + ");\n";
        }
        break;
      case alloc::Op::kScale: {
        const std::string a = src(0);
        expr = "ggml_scale" + ip + "(ctx, " + a + ", " + FloatLiteral(m->param) + ")";
        break;
      }
      case alloc::Op::kNeg: {
        const std::string a = src(0);
        expr = "ggml_neg" + ip + "(ctx, " + a + ")";
        break;
      }
      case alloc::Op::kAdd:
      case alloc::Op::kMul: {
        const std::string a = src(0);
        const std::string b = src(1);
        expr = std::string(spec.op == alloc::Op::kAdd ? "ggml_add" : "ggml_mul") + ip + "(ctx, " + a + ", " + b + ")";
        break;
      }
      case alloc::Op::kCopy: {
        const std::string a = src(0);
        expr = "ggml_cpy(ctx, " + a + ", ggml_new_tensor(ctx, " + GgmlType(m->type) + ", GGML_MAX_DIMS, " + a + "->ne))";
        break;
      }
      case alloc::Op::kConcat: {
        const std::string a = src(0);
        const std::string b = src(1);
        expr = "ggml_concat(ctx, " + a + ", " + b + ", 3)";
        break;
      }
      case alloc::Op::kView: {
        const std::string a = src(0);
        const Tensor* s0 = book_.tensor(g, spec.src[0]);
        const size_t offset = static_cast<size_t>(spec.view_offset) * alloc::DTypeSize(s0->type);
        expr = "ggml_view_1d(ctx, " + a + ", " + std::to_string(m->ne[0]) + ", " + std::to_string(offset) + ")";
        break;
      }
      case alloc::Op::kReshape: {
        const std::string a = src(0);
        expr = "ggml_reshape_1d(ctx, " + a + ", " + std::to_string(m->ne[0]) + ")";
        break;
      }
    }
    body += "    " + ti + " = " + expr + ";\n" + after;
    body += "    ggml_format_name(" + ti + ", \"g%d.t%d\", " + std::to_string(g) + ", " + std::to_string(i) + ");\n";
    if (m->output) body += "    ggml_set_output(" + ti + ");\n";
    made[i] = true;
  }

  // What a leaf view of graph h's tensor i views: its latest placement, or, when h never placed it (or it
  // lost its memory since), the tensor of a build of h that is not placed (GgmlGraphAdapter::Source).
  std::string SourceExpr(int h, int i) {
    if (placed_[{h, i}]) return "placed[" + std::to_string(h) + "][" + std::to_string(i) + "]";
    return BuildFunction(h) + "()->t[" + std::to_string(i) + "]";
  }

  const Program& p_;
  GraphBook book_;
  int count_[kMaxGraphs] = {};
  std::map<std::pair<int, int>, bool> placed_;  // (graph, tensor): has a latest placement to view
  std::map<std::string, std::string> by_body_;  // build function body -> its name
  std::vector<std::string> functions_;          // in the order they are needed (callees first)
  std::set<std::string> used_;                  // the prelude's optional helpers the steps call
  int threads_ = 1;                             // the CPU backend's threads as the file left them (setup: 1)
};

}  // namespace

StatusOr<std::string> ExportGgmlC(const Program& program, const ExportOptions& options) {
  Exporter e(program);
  return e.Run(options);
}

}  // namespace lifeline::graphs
