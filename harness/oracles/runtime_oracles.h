// Oracles of the compute runtime, shared by the runtime executors (harness/programs/runtime/) and the
// runtime tests: the CPU reference of the kernels, the value oracle, the validation layer's silence, and
// the accounting of live Vulkan objects against a baseline. Each check returns OK when its property
// holds, else an INTERNAL status whose message names the violation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "layers/runtime/device.h"

namespace lifeline::oracles {

// The CPU reference of one kernel: `out` with its first `n` elements replaced by kernel(a[i], b[i],
// `value`) (fill: value; add: a + b; scale: a * value; copy: a); elements from `n` on are left as they are.
std::vector<float> ReferenceKernel(runtime::Kernel kernel, uint32_t n, float value, const std::vector<float>& a,
                                   const std::vector<float>& b, std::vector<float> out);

// The value oracle: `got[i]` equals `want[i]` for every i of `want`; `what` names the buffer.
Status CheckValues(const float* got, const std::vector<float>& want, const std::string& what);

// The validation layer said nothing: `messages` (what it recorded since the last check) is empty.
Status CheckValidationSilent(const std::vector<std::string>& messages);

// Nothing created since `base` is still alive: every count equals the baseline's.
Status CheckObjectsAtBaseline(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base);

// The live contexts own `pools` command pools and as many descriptor pools beyond `base`, and no fence
// outlives its frame.
Status CheckPoolsOfLiveContexts(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base, int64_t pools);

// Backing objects live exactly as long as their wrappers: beyond `base`, the live VkDeviceMemory bytes
// equal the `bytes` the live wrappers account for (checked first: the purge workaround passes it), then
// the live VkBuffers equal the `wrappers` and VkDeviceMemory objects are no more than them.
Status CheckBackingMatchesWrappers(const runtime::ObjectCounts& now, const runtime::ObjectCounts& base,
                                   int64_t wrappers, int64_t bytes);

}  // namespace lifeline::oracles
