// ggml_vulkan_startup: what ggml-vulkan costs before the first input of ggml_vulkan_graph_topology computes,
// step by step, with the target's Vulkan hooks linked in (the validation layer with synchronization
// validation on, as in the target). Prints one line per step with its wall time in milliseconds:
//   instance   ggml_backend_vk_reg: the loader, the layer, the instance, the physical devices
//   device     the first ggml_backend_vk_init(0): the logical device, queues, the backend's pools
//   backend    a second ggml_backend_vk_init(0) (what every input pays; the device is kept)
//   first      the first compute of add + scale_inplace on 8 floats (pipelines compiled on first use)
//   again      the same compute again
// A benchmark (bench/): it prints and never passes or fails. Run: build/<lane>/bench/ggml_vulkan_startup
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-vulkan.h"
#include "ggml.h"

namespace {

double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

double Compute(ggml_backend_t vk) {
  const auto t0 = std::chrono::steady_clock::now();
  ggml_init_params params{ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* a = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
  ggml_tensor* b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 8);
  ggml_tensor* out = ggml_scale_inplace(ctx, ggml_add(ctx, a, b), 2.0f);
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_vk_buffer_type(0));
  ggml_gallocr_alloc_graph(galloc, graph);
  float x[8], y[8];
  for (int i = 0; i < 8; ++i) x[i] = y[i] = static_cast<float>(i);
  ggml_backend_tensor_set(a, x, 0, sizeof x);
  ggml_backend_tensor_set(b, y, 0, sizeof y);
  if (ggml_backend_graph_compute(vk, graph) != GGML_STATUS_SUCCESS) std::fprintf(stderr, "compute failed\n");
  ggml_backend_tensor_get(out, x, 0, sizeof x);
  if (x[3] != 12.0f) std::fprintf(stderr, "wrong result %g\n", x[3]);
  ggml_gallocr_free(galloc);
  ggml_free(ctx);
  return Ms(t0);
}

}  // namespace

int main() {
  setenv("GGML_VK_VISIBLE_DEVICES", "0", 0);
  auto t0 = std::chrono::steady_clock::now();
  if (ggml_backend_vk_reg() == nullptr || ggml_backend_vk_get_device_count() < 1) {
    std::fprintf(stderr, "ggml_vulkan_startup: no Vulkan device\n");
    return 1;
  }
  std::printf("instance %10.1f ms\n", Ms(t0));
  t0 = std::chrono::steady_clock::now();
  ggml_backend_t first = ggml_backend_vk_init(0);
  std::printf("device   %10.1f ms\n", Ms(t0));
  ggml_backend_free(first);
  t0 = std::chrono::steady_clock::now();
  ggml_backend_t vk = ggml_backend_vk_init(0);
  std::printf("backend  %10.1f ms\n", Ms(t0));
  std::printf("first    %10.1f ms\n", Compute(vk));
  std::printf("again    %10.1f ms\n", Compute(vk));
  ggml_backend_free(vk);
  return 0;
}
