// ggml_graph_topology_export [--label TEXT] INPUT [OUTPUT]: the graph program in INPUT (an input of
// ggml_graph_topology, e.g. repro/<bug-id>/<file>) as a standalone C reproducer on upstream ggml
// (ggml_export.h), written to OUTPUT or stdout. `lifeline export` runs it, and the asan lane's build runs
// it for every upstream-open reproducer of ggml_graph_topology (cmake/LifelineExports.cmake).
// Exit status: 0 written; 1 the input cannot be read or exported, or OUTPUT cannot be written; 2 usage.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/programs/graph/format.h"
#include "harness/programs/graph/upstream/ggml_export.h"

namespace {

int Usage() {
  std::fputs("usage: ggml_graph_topology_export [--label TEXT] INPUT [OUTPUT]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  lifeline::graphs::ExportOptions options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--label") {
      if (++i == argc) return Usage();
      options.label = argv[i];
    } else if (arg == "--") {
      for (++i; i < argc; ++i) files.push_back(argv[i]);
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Usage();
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty() || files.size() > 2) return Usage();
  std::ifstream in(files[0], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "ggml_graph_topology_export: cannot read %s\n", files[0].c_str());
    return 1;
  }
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) {
    std::fprintf(stderr, "ggml_graph_topology_export: cannot read %s\n", files[0].c_str());
    return 1;
  }
  lifeline::StatusOr<std::string> c = lifeline::graphs::ExportGgmlC(lifeline::graphs::Decode(bytes.data(), bytes.size()), options);
  if (!c.ok()) {
    std::fprintf(stderr, "ggml_graph_topology_export: %s: %s\n", files[0].c_str(), c.status().ToString().c_str());
    return 1;
  }
  if (files.size() == 1) {
    std::fwrite(c.value().data(), 1, c.value().size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
  }
  std::ofstream out(files[1], std::ios::binary | std::ios::trunc);
  out << c.value();
  out.close();
  if (!out) {
    std::fprintf(stderr, "ggml_graph_topology_export: cannot write %s\n", files[1].c_str());
    return 1;
  }
  return 0;
}
