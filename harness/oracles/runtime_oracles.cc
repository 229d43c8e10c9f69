#include "harness/oracles/runtime_oracles.h"

namespace lifeline::oracles {

std::vector<float> ReferenceKernel(runtime::Kernel kernel, uint32_t n, float value, const std::vector<float>& a,
                                   const std::vector<float>& b, std::vector<float> out) {
  for (uint32_t i = 0; i < n; ++i) {
    switch (kernel) {
      case runtime::Kernel::kFill: out[i] = value; break;
      case runtime::Kernel::kAdd: out[i] = a[i] + b[i]; break;
      case runtime::Kernel::kScale: out[i] = a[i] * value; break;
      case runtime::Kernel::kCopy: out[i] = a[i]; break;
    }
  }
  return out;
}

Status CheckValues(const float* got, const std::vector<float>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      return Internal(what + " element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                      ", the CPU reference " + std::to_string(want[i]));
    }
  }
  return Status::Ok();
}

Status CheckValidationSilent(const std::vector<std::string>& messages) {
  if (messages.empty()) return Status::Ok();
  std::string all;
  for (const auto& m : messages) all += "\n    " + m;
  return Internal("validation layer: " + std::to_string(messages.size()) + " message(s):" + all);
}

Status CheckObjectsAtBaseline(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base) {
  if (now == base) return Status::Ok();
  return Internal("objects left: " + now.ToString() + " (before: " + base.ToString() + ")");
}

Status CheckPoolsOfLiveContexts(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base, int64_t pools) {
  if (now.command_pools - base.command_pools == pools && now.descriptor_pools - base.descriptor_pools == pools &&
      now.fences == base.fences) {
    return Status::Ok();
  }
  return Internal("object accounting: " + now.ToString() + "; the live contexts account for " +
                  std::to_string(pools) + " command and descriptor pools and no fence beyond " + base.ToString());
}

Status CheckBackingMatchesWrappers(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base,
                                   int64_t wrappers, int64_t bytes) {
  const std::string state = now.ToString() + " alive beyond the start (" + base.ToString() +
                            "); live Buffer wrappers account for " + std::to_string(wrappers) + " buffers, " +
                            std::to_string(bytes) + " B";
  if (now.memory_bytes - base.memory_bytes != bytes) {
    return Internal("accounting oracle (bytes): backing memory outlives its wrappers: " + state);
  }
  if (now.buffers - base.buffers != wrappers || now.memories - base.memories > wrappers) {
    return Internal("accounting oracle (objects): backing objects outlive their wrappers: " + state);
  }
  return Status::Ok();
}

}  // namespace lifeline::oracles
