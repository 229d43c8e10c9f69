// llama_models: what the tiny llama.cpp models of llama_memory_differential (harness/programs/llama/upstream/
// llama_models.h) cost in this lane: each model's parameters and bytes, its build time
// (llama_model_init_from_user, once per process in the target; the first also initializes the backend), a context's creation, and one llama_decode of 8
// tokens on one sequence (one ubatch, logits for the last), as medians of --runs N (default 11; the build is
// timed once, the first use). Prints a table and writes it as JSON to the path given with --json.
// A benchmark (bench/): it prints and never passes or fails.
// Run: build/<lane>/bench/llama_models [--runs N] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model_bench.h"

#include "harness/programs/llama/upstream/llama_models.h"
#include "harness/programs/llama/upstream/llama_runtime.h"

namespace {

using lifeline::bench::Median;
using lifeline::bench::Ms;

using lifeline::llama::ModelKind;

struct Row {
  std::string model;
  unsigned long long params = 0, bytes = 0;
  double build_ms = 0, context_ms = 0, decode8_ms = 0;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = 11;
  const char* json = nullptr;
  if (!lifeline::bench::ParseRunsJson(argc, argv, "llama_models", &runs, &json)) return 2;
  std::vector<Row> rows;
  for (int k = 0; k <= static_cast<int>(ModelKind::kMaxValue); ++k) {
    const auto kind = static_cast<ModelKind>(k);
    lifeline::llama::ContextParams p;
    p.model = kind;
    p.n_ubatch = p.n_batch = 8;
    std::string error;
    // The first runtime builds the model (and initializes the backend): timed as the build.
    auto t0 = std::chrono::steady_clock::now();
    auto first = lifeline::llama::MakeLlamaRuntime(p, &error);
    Row r;
    r.model = lifeline::llama::kModelNames[k];
    r.build_ms = Ms(t0);
    if (!first) {
      std::fprintf(stderr, "llama_models: %s: %s\n", r.model.c_str(), error.c_str());
      return 1;
    }
    first.reset();
    lifeline::llama::TinyModelSize(kind, &r.params, &r.bytes);
    std::vector<double> ctx_ms, dec_ms;
    for (int i = 0; i < runs; ++i) {
      t0 = std::chrono::steady_clock::now();
      auto rt = lifeline::llama::MakeLlamaRuntime(p, &error);
      ctx_ms.push_back(Ms(t0));
      std::vector<lifeline::llama::Runtime::Token> batch;
      for (int t = 0; t < 8; ++t) batch.push_back({(5 * t + 1) % lifeline::llama::kVocab, 1, t, t == 7});
      t0 = std::chrono::steady_clock::now();
      const int rc = rt->Decode(batch, lifeline::llama::Runtime::BatchForm::kFull);
      dec_ms.push_back(Ms(t0));
      if (rc != 0) {
        std::fprintf(stderr, "llama_models: llama_decode returned %d on %s\n", rc, r.model.c_str());
        return 1;
      }
    }
    r.build_ms -= Median(ctx_ms);  // the first runtime's own context is not the model's build
    r.context_ms = Median(ctx_ms);
    r.decode8_ms = Median(dec_ms);
    rows.push_back(r);
  }
  std::printf("%-8s %10s %10s %10s %12s %16s\n", "model", "params", "bytes", "build ms", "context ms",
              "decode 8 tok ms");
  for (const Row& r : rows)
    std::printf("%-8s %10llu %10llu %10.1f %12.1f %16.2f\n", r.model.c_str(), r.params, r.bytes, r.build_ms,
                r.context_ms, r.decode8_ms);
  if (json != nullptr) {
    FILE* f = std::fopen(json, "w");
    if (f == nullptr) {
      std::perror(json);
      return 1;
    }
    std::fprintf(f, "{\"lane\": \"%s\", \"runs\": %d, \"models\": [", LIFELINE_BENCH_LANE, runs);
    for (size_t i = 0; i < rows.size(); ++i)
      std::fprintf(f, "%s{\"model\": \"%s\", \"params\": %llu, \"bytes\": %llu, \"build_ms\": %.2f, "
                      "\"context_ms\": %.2f, \"decode8_ms\": %.3f}",
                   i ? ", " : "", rows[i].model.c_str(), rows[i].params, rows[i].bytes, rows[i].build_ms,
                   rows[i].context_ms, rows[i].decode8_ms);
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
