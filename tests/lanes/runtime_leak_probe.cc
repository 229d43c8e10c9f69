// The reporter's alternative fix for metal-edesc-autorelease: the context copies (news) its pass
// descriptor and never releases it. This probe makes one such context, computes a small frame, destroys
// the context and frees everything else, then exits 0; the descriptor is unreachable by then, so under
// ASan/LSan the exit-time leak check must report a direct leak allocated in PassDescriptor::New
// (tests/CMakeLists.txt: unit.runtime.descriptor-copied-never-released-leaks).
//
// `runtime_leak_probe buffer` instead abandons a Buffer (wrapper and all) and returns 0: the device
// teardown at exit must find the VkBuffer and VkDeviceMemory and fail the run
// (unit.runtime.objects-left-at-teardown-fail-the-run).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "layers/runtime/buffer.h"
#include "layers/runtime/device.h"
#include "layers/runtime/encoder.h"

int main(int argc, char** argv) {
  using namespace lifeline::runtime;
  lifeline::StatusOr<Device*> device = Device::Get();
  if (!device.ok()) {
    std::fprintf(stderr, "runtime_leak_probe: %s\n", device.status().ToString().c_str());
    return 2;
  }
  lifeline::StatusOr<std::unique_ptr<Buffer>> out = Buffer::Create(device.value(), 64 * sizeof(float));
  if (!out.ok()) {
    std::fprintf(stderr, "runtime_leak_probe: %s\n", out.status().ToString().c_str());
    return 2;
  }
  if (argc > 1 && std::string(argv[1]) == "buffer") {
    static Buffer* abandoned = out.value().release();  // reachable: only the teardown check can object
    (void)abandoned;
    return 0;
  }
  {
    lifeline::StatusOr<std::unique_ptr<Context>> ctx =
        Context::Create(device.value(), 1, DescriptorOwnership::kCopiedNeverReleased);
    if (!ctx.ok()) {
      std::fprintf(stderr, "runtime_leak_probe: %s\n", ctx.status().ToString().c_str());
      return 2;
    }
    FrameOp fill;
    fill.kernel = Kernel::kFill;
    fill.out = out.value().get();
    fill.n = 64;
    fill.value = 1.0f;
    lifeline::Status s = ctx.value()->Compute({fill});
    if (!s.ok() || out.value()->data()[63] != 1.0f) {
      std::fprintf(stderr, "runtime_leak_probe: the frame failed: %s\n", s.ToString().c_str());
      return 2;
    }
  }  // the context goes; its descriptor is not released
  out.value().reset();
  std::vector<std::string> errors = device.value()->TakeValidationErrors();
  for (const std::string& e : errors) std::fprintf(stderr, "runtime_leak_probe: validation: %s\n", e.c_str());
  return errors.empty() ? 0 : 3;
}
