// What each whisper_full call of the code under test was given, seen at the call: the executable links with
// -Wl,--wrap=whisper_full, so the calls whisper.wasm's emscripten.cpp makes (on its worker thread) reach
// __wrap_whisper_full (whisper_full_observer.cc), which runs upstream's whisper_full unchanged and records
// its arguments. The language is read after upstream's whisper_full returned (it is still the caller's then:
// the fixed binding frees its copy after that), so any invalid read of it is upstream's own first.
#pragma once

#include <optional>
#include <string>
#include <vector>

struct whisper_context;

namespace lifeline::handoff {

struct FullCall {
  whisper_context* ctx = nullptr;
  bool language_null = false;
  std::string language;  // the bytes up to the NUL
  int n_threads = 0;
  bool translate = false;
  std::vector<float> samples;
  int returned = 0;
  int state_lang_id = -1;  // whisper_full_lang_id(ctx) after the call
  int n_len = 0;           // whisper_n_len(ctx) after the call: mel frames (whisper_full decodes from 10)
};

// The page's call and its worker in the order a browser gives them: between HoldWorkers() and ReleaseWorkers()
// (the JavaScript call to full_default and its return, when embind's arguments are gone), a worker's
// whisper_full waits before it runs. A relaxed atomic flag and sched_yield, which TSan does not count as
// synchronization: only the time order is enforced, so the read of a dead argument stays a race to TSan, as
// it is in a browser (the stand-in's gate does the same, layers/interop/job_api.cc). Without it the order
// is the scheduler's: under valgrind's serialized threads the worker often read the string before the call
// returned.
void HoldWorkers();
void ReleaseWorkers();

// The oldest recorded call not yet taken (nullopt: none).
std::optional<FullCall> TakeFullCall();
// Forgets every recorded call (a new iteration).
void ClearFullCalls();

}  // namespace lifeline::handoff
