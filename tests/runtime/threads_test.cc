// PositiveThreads: contexts of layers/runtime on several threads at once, sharing only the device;
// race-free by design, so the tsan lane runs it too.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"
#include "tests/runtime/runtime_fixture.h"

namespace lifeline::runtime {
namespace {

class PositiveThreads : public RuntimeTest {};

// Scenario: four threads, each with its own context (n_cb 1..4) and buffers, compute 20 frames at once;
// they share only the device, whose queue submission is locked. Race-free by design (the tsan lane).
TEST_F(PositiveThreads, ContextsOnSeveralThreadsComputeIndependently) {
  constexpr int kThreads = 4, kFrames = 20;
  constexpr uint32_t n = 257;
  struct Result {
    std::string error;  // the first failure, empty when none
    int frames_checked = 0;
  };
  std::vector<Result> results(kThreads);
  Device* device = device_;
  auto work = [device, &results](int t) {
    Result& r = results[t];
    StatusOr<std::unique_ptr<Context>> ctx = Context::Create(device, t + 1);
    StatusOr<std::unique_ptr<Buffer>> a = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> e = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> c = Buffer::Create(device, n * sizeof(float));
    StatusOr<std::unique_ptr<Buffer>> d = Buffer::Create(device, n * sizeof(float));
    for (const Status* s : {&ctx.status(), &a.status(), &e.status(), &c.status(), &d.status()}) {
      if (!s->ok()) {
        r.error = s->ToString();
        return;
      }
    }
    PatternHost(e.value().get(), static_cast<float>(t));
    for (int f = 0; f < kFrames; ++f) {
      FillHost(d.value().get(), kSentinel);
      const float fill = static_cast<float>(t + 1), scale = static_cast<float>(f + 1);
      Status s = ctx.value()->Compute({
          {Kernel::kFill, nullptr, nullptr, a.value().get(), n, fill},
          {Kernel::kAdd, a.value().get(), e.value().get(), c.value().get(), n, 0},
          {Kernel::kScale, c.value().get(), nullptr, d.value().get(), n, scale},
      });
      if (!s.ok()) {
        r.error = "frame " + std::to_string(f) + ": " + s.ToString();
        return;
      }
      for (uint32_t i = 0; i < n; ++i) {
        const float want = (fill + Pattern(i, static_cast<float>(t))) * scale;
        if (d.value()->data()[i] != want) {
          r.error = "frame " + std::to_string(f) + " d[" + std::to_string(i) + "] = " +
                    std::to_string(d.value()->data()[i]) + ", expected " + std::to_string(want);
          return;
        }
      }
      ++r.frames_checked;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t);
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t) + " (n_cb " + std::to_string(t + 1) + ")");
    EXPECT_EQ(results[t].error, "");
    EXPECT_EQ(results[t].frames_checked, kFrames);
  }
}

}  // namespace
}  // namespace lifeline::runtime
