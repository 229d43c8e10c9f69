// What the model benchmarks (whisper_model.cc, llama_models.cc) share: their command line
// (`[--runs N] [--json FILE]`), wall-clock milliseconds and medians.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace lifeline::bench {

inline double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Reads `--runs N` (1 or more) and `--json FILE` into *runs and *json. Returns false after printing the usage or
// the error, naming `name`.
inline bool ParseRunsJson(int argc, char** argv, const char* name, int* runs, const char** json) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      *runs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      *json = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--json FILE]\n", name);
      return false;
    }
  }
  if (*runs < 1) {
    std::fprintf(stderr, "%s: --runs must be 1 or more\n", name);
    return false;
  }
  return true;
}

}  // namespace lifeline::bench
