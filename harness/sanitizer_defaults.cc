// Default sanitizer options, compiled into every executable of a lane so a binary behaves the same under
// ctest, the CLI, or a shell: findings are fatal, stack-use-after-return is detected, dedup tokens match
// the crash-state convention. An ASAN_OPTIONS (etc.) in the environment still overrides these.
// The option strings come from cmake/LifelineLane.cmake.
extern "C" {
__attribute__((used)) const char* __asan_default_options() { return LIFELINE_ASAN_OPTIONS; }
__attribute__((used)) const char* __ubsan_default_options() { return LIFELINE_UBSAN_OPTIONS; }
__attribute__((used)) const char* __tsan_default_options() { return LIFELINE_TSAN_OPTIONS; }
__attribute__((used)) const char* __lsan_default_options() { return LIFELINE_LSAN_OPTIONS; }
}
