#include "harness/programs/handoff/upstream/whisper_full_observer.h"

#include <atomic>
#include <deque>
#include <mutex>

#include <sched.h>

#include "whisper.h"

namespace lifeline::handoff {
namespace {

std::mutex& Mu() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::deque<FullCall>& Calls() {
  static auto* calls = new std::deque<FullCall>();
  return *calls;
}

std::atomic<bool> g_hold{false};

}  // namespace

void HoldWorkers() { g_hold.store(true, std::memory_order_relaxed); }
void ReleaseWorkers() { g_hold.store(false, std::memory_order_relaxed); }

// The worker's side of HoldWorkers.
static void WaitForTheCaller() {
  while (g_hold.load(std::memory_order_relaxed)) sched_yield();
}

std::optional<FullCall> TakeFullCall() {
  std::lock_guard<std::mutex> lock(Mu());
  if (Calls().empty()) return std::nullopt;
  FullCall call = std::move(Calls().front());
  Calls().pop_front();
  return call;
}

void ClearFullCalls() {
  std::lock_guard<std::mutex> lock(Mu());
  Calls().clear();
}

}  // namespace lifeline::handoff

extern "C" int __real_whisper_full(whisper_context* ctx, whisper_full_params params, const float* samples,
                                   int n_samples);

extern "C" int __wrap_whisper_full(whisper_context* ctx, whisper_full_params params, const float* samples,
                                   int n_samples) {
  lifeline::handoff::WaitForTheCaller();
  lifeline::handoff::FullCall call;
  call.ctx = ctx;
  call.n_threads = params.n_threads;
  call.translate = params.translate;
  if (n_samples > 0) call.samples.assign(samples, samples + n_samples);
  call.returned = __real_whisper_full(ctx, params, samples, n_samples);
  call.language_null = params.language == nullptr;
  if (!call.language_null) call.language = params.language;
  call.state_lang_id = whisper_full_lang_id(ctx);
  call.n_len = whisper_n_len(ctx);
  const int returned = call.returned;
  std::lock_guard<std::mutex> lock(lifeline::handoff::Mu());
  lifeline::handoff::Calls().push_back(std::move(call));
  return returned;
}
