#include "harness/programs/runtime/standin/lifeline_runtime.h"

#include <memory>
#include <vector>

#include "core/check.h"
#include "layers/runtime/buffer.h"
#include "layers/runtime/encoder.h"

namespace lifeline::rtprog {
namespace {

using runtime::Buffer;
using runtime::Context;

static_assert(kMaxEncodeThreads == runtime::kMaxEncodeThreads && kMaxFrameOps <= runtime::kMaxFrameOps,
              "the programs' bounds are within the runtime's");

runtime::Device* GetDevice() {
  auto device = runtime::Device::Get();
  LIFELINE_PRECONDITION(device.ok(), "no Vulkan device for the runtime targets: " + device.status().ToString());
  return device.value();
}

class LifelineRuntime final : public ComputeRuntime {
 public:
  LifelineRuntime() : device_(GetDevice()) {}

  Status CreateBuffer(int slot, uint32_t floats) override {
    LIFELINE_ASSIGN_OR_RETURN(buffers_[slot], Buffer::Create(device_, size_t{floats} * sizeof(float)));
    return Status::Ok();
  }
  void DestroyBuffer(int slot, bool purge) override {
    buffers_[slot].reset();
    if (purge) runtime::PurgeCapture();  // the reporter's workaround, right after the destructor
  }
  float* Data(int slot) override { return buffers_[slot]->data(); }

  void PushPool() override { pools_.push_back(std::make_unique<runtime::TransientPool>()); }
  void DrainPool() override { pools_.pop_back(); }
  Status CreateContext(int slot, int n_cb) override {
    LIFELINE_ASSIGN_OR_RETURN(contexts_[slot], Context::Create(device_, n_cb));
    return Status::Ok();
  }
  Status SetEncodeThreads(int slot, int n_cb) override { return contexts_[slot]->SetEncodeThreads(n_cb); }
  Status Compute(int slot, const std::vector<Dispatch>& frame) override {
    std::vector<runtime::FrameOp> ops;
    for (const Dispatch& d : frame) {
      ops.push_back({d.kernel, buffers_[d.a].get(), buffers_[d.b].get(), buffers_[d.out].get(), d.n, d.value});
    }
    return contexts_[slot]->Compute(ops);
  }
  void DestroyContext(int slot) override { contexts_[slot].reset(); }

  void SetCapture(bool on) override { runtime::SetCaptureEnabled(on); }
  bool CaptureEnabled() const override { return runtime::CaptureEnabled(); }
  void ClearCapture() override { runtime::ClearCapture(); }

  std::vector<std::string> TakeValidationMessages() override { return device_->TakeValidationErrors(); }
  runtime::ObjectCounts Objects() const override { return device_->Counts(); }
  int64_t LivePassDescriptors() const override { return runtime::PassDescriptor::Live(); }
  Wrappers LiveWrappers() const override {
    runtime::WrapperCounts w = runtime::GetWrapperCounts();
    return Wrappers{w.wrappers, w.bytes};
  }

 private:
  runtime::Device* device_;
  std::unique_ptr<Buffer> buffers_[kReclaimSlots];
  std::unique_ptr<Context> contexts_[kMaxContexts];
  std::vector<std::unique_ptr<runtime::TransientPool>> pools_;
};

}  // namespace

std::unique_ptr<ComputeRuntime> MakeLifelineRuntime() { return std::make_unique<LifelineRuntime>(); }

}  // namespace lifeline::rtprog
