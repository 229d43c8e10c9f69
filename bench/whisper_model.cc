// whisper_model: what the generated whisper.cpp models (scripts/make-whisper-model.py) cost in this lane, the
// figures whisper_string_handoff pays per input: each model's file size, its load time
// (whisper_init_from_file_with_params, as whisper.wasm's init calls it), and whisper_full's time per second
// of audio (greedy, one thread, language "de" on the multilingual model; a sine sweep), as medians of --runs N
// (default 11). Prints a table and writes it as JSON to the path given with --json.
// A benchmark (bench/): it prints and never passes or fails.
// Run: build/<lane>/bench/whisper_model [--runs N] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "model_bench.h"

#include "whisper.h"

namespace {

using lifeline::bench::Median;
using lifeline::bench::Ms;

void Quiet(enum ggml_log_level, const char*, void*) {}

struct Row {
  std::string model;
  long long bytes = 0;
  double load_ms = 0, full_ms_per_s = 0;
  int segments = 0;
};

Row Measure(const std::string& path, int runs) {
  Row row;
  row.model = path.substr(path.find_last_of('/') + 1);
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) row.bytes = st.st_size;
  whisper_context_params cparams = whisper_context_default_params();
  std::vector<double> loads, fulls;
  std::vector<float> audio(WHISPER_SAMPLE_RATE);
  for (size_t i = 0; i < audio.size(); ++i) {
    audio[i] = 0.3f * std::sin(0.05f * static_cast<float>(i) * (1.0f + static_cast<float>(i) / 16000.0f));
  }
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    whisper_context* ctx = whisper_init_from_file_with_params(path.c_str(), cparams);
    loads.push_back(Ms(t0));
    if (ctx == nullptr) {
      std::fprintf(stderr, "whisper_model: %s does not load\n", path.c_str());
      std::exit(1);
    }
    whisper_full_params params = whisper_full_default_params(WHISPER_SAMPLING_GREEDY);
    params.n_threads = 1;
    params.language = whisper_is_multilingual(ctx) ? "de" : "en";
    t0 = std::chrono::steady_clock::now();
    const int rc = whisper_full(ctx, params, audio.data(), static_cast<int>(audio.size()));
    fulls.push_back(Ms(t0));
    if (rc != 0) {
      std::fprintf(stderr, "whisper_model: whisper_full returned %d on %s\n", rc, path.c_str());
      std::exit(1);
    }
    row.segments = whisper_full_n_segments(ctx);
    whisper_free(ctx);
  }
  row.load_ms = Median(loads);
  row.full_ms_per_s = Median(fulls);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 11;
  const char* json = nullptr;
  if (!lifeline::bench::ParseRunsJson(argc, argv, "whisper_model", &runs, &json)) return 2;
  whisper_log_set(&Quiet, nullptr);
  const std::string dir = LIFELINE_WHISPER_MODEL_DIR;
  std::vector<Row> rows = {Measure(dir + "/tiny-multilingual.bin", runs), Measure(dir + "/tiny-en.bin", runs)};
  std::printf("%-24s %10s %10s %22s %9s\n", "model", "bytes", "load ms", "whisper_full ms per s", "segments");
  for (const Row& r : rows) {
    std::printf("%-24s %10lld %10.1f %22.1f %9d\n", r.model.c_str(), r.bytes, r.load_ms, r.full_ms_per_s, r.segments);
  }
  if (json != nullptr) {
    FILE* f = std::fopen(json, "w");
    if (f == nullptr) {
      std::perror(json);
      return 1;
    }
    std::fprintf(f, "{\"lane\": \"%s\", \"runs\": %d, \"models\": [", LIFELINE_BENCH_LANE, runs);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::fprintf(f, "%s{\"model\": \"%s\", \"bytes\": %lld, \"load_ms\": %.2f, \"whisper_full_ms_per_s\": %.2f, "
                   "\"segments\": %d}", i ? ", " : "", rows[i].model.c_str(), rows[i].bytes, rows[i].load_ms,
                   rows[i].full_ms_per_s, rows[i].segments);
    }
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
