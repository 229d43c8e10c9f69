// GgmlAdapter (see ggml_adapter.h): graph programs on upstream ggml's gallocr, host buffers, CPU backend (one
// implementation of GgmlGraphAdapter, ggml_graph_adapter.h).
#include "harness/programs/graph/upstream/ggml_adapter.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/guards.h"
#include "harness/programs/graph/upstream/ggml_graph_adapter.h"

namespace lifeline::graphs {

// ---- the CPU adapter: host buffers of this file, ggml's CPU backend -----------------------------------

namespace {

using alloc::Tensor;
using internal::GgmlGraphAdapter;
using internal::HostBufferType;
using internal::Instance;

class GgmlAdapter final : public GgmlGraphAdapter {
 protected:
  ggml_backend_buffer_type_t BufferTypeFor(int k, const alloc::BufferSpec& spec) override {
    return &HostTypeFor(k, spec)->buft;
  }
  void BindPreallocated(ggml_tensor* t, int g, int i) override {
    t->data = book().tensor(g, i)->data;  // memory from outside, no backend buffer
  }
  bool PlacesWeights() const override { return true; }
  void* HostAddress(const ggml_tensor* t) override { return t->data; }
  int AllocatorOf(ggml_backend_buffer_t b) override {
    return internal::HostAllocatorOf(b);
  }
  std::vector<oracles::BufferExtent> Extents(int k) override { return internal::HostExtents(k); }
  void Upload(ggml_tensor*, const Tensor*) override {}  // FillLeaf wrote the tensor's own bytes
  void Compute(ggml_cgraph* graph, const std::string& what, ggml_backend_sched_t) override {
    ggml_status st = ggml_backend_graph_compute(internal::Cpu(), graph);
    LIFELINE_CHECK(st == GGML_STATUS_SUCCESS,
                   "ggml_backend_graph_compute of " + what + " returned " + std::string(ggml_status_to_string(st)));
  }
  // Guard ggml-cpu-scale-f16-unsupported, for its whole class: a node whose op the CPU backend accepts for a
  // float16 source but whose kernel aborts on it (ggml_cpu_f16_unsupported.def, the measured sweep's list).
  Status Refuse(const Instance& inst, const std::string& what) override {
    for (int i = 0; i < ggml_graph_n_nodes(inst.graph); ++i) {
      const ggml_tensor* t = ggml_graph_node(inst.graph, i);
      if (CpuAbortsOnF16(t) &&
          GuardHolds(Guard::kGgmlCpuScaleF16Unsupported, [&] {
            return std::string(t->name) + " is a " + ggml_op_desc(t) + " of a float16 tensor: the CPU backend " +
                   "claims the op but aborts computing it; " + what + " is refused before it is placed";
          })) {
        return Unimplemented(std::string(t->name) + ": ggml's CPU backend cannot compute " + ggml_op_desc(t) +
                             " on float16 (guard ggml-cpu-scale-f16-unsupported)");
      }
      LIFELINE_RETURN_IF_ERROR(RefuseOddRope(t, what));
#if LIFELINE_GGML_HAS_CONV_2D_DW_DIRECT
      // Guard ggml-cpu-conv-2d-dw-f16-overflow: supports_op says yes to a depthwise convolution of a float16 input,
      // whose result ggml makes float16 too, and the kernel writes float32 sums into it: twice its bytes.
      if (t->op == GGML_OP_CONV_2D_DW && t->src[1]->type == GGML_TYPE_F16 &&
          GuardHolds(Guard::kGgmlCpuConv2dDwF16Overflow, [&] {
            return std::string(t->name) + " is a conv_2d_dw of a float16 input: the CPU kernel writes float32 results "
                   "into its float16 result, twice its bytes; " + what + " is refused before it is placed";
          })) {
        return Unimplemented(std::string(t->name) + ": ggml's CPU backend writes past a conv_2d_dw of a float16 input " +
                             "(guard ggml-cpu-conv-2d-dw-f16-overflow)");
      }
#endif
    }
    return Status::Ok();
  }

  // By the op's name (ggml_op_desc: a GLU op's own, else the op's), not its enumerator: the list names ops that
  // older ggml trees do not have (ADD_ID, ROLL, TOP_K), and a name that is not there matches nothing.
  static bool CpuAbortsOnF16(const ggml_tensor* t) {
    bool f16 = false;
    for (const ggml_tensor* s : t->src) f16 = f16 || (s != nullptr && s->type == GGML_TYPE_F16);
    if (!f16) return false;
    static const char* const kNames[] = {
#define LIFELINE_CPU_F16_UNSUPPORTED(op) #op,
#define LIFELINE_CPU_F16_GLU_UNSUPPORTED(glu) #glu,
#include "harness/programs/graph/upstream/ggml_cpu_f16_unsupported.def"
#undef LIFELINE_CPU_F16_UNSUPPORTED
#undef LIFELINE_CPU_F16_GLU_UNSUPPORTED
    };
    const char* desc = ggml_op_desc(t);
    for (const char* name : kNames) {
      if (std::strcmp(desc, name) == 0) return true;
    }
    return false;
  }
  void CheckReleased() override {}  // the host bytes: GgmlGraphAdapter::Teardown
};

}  // namespace

std::unique_ptr<AllocatorAdapter> MakeGgmlAdapter() { return std::make_unique<GgmlAdapter>(); }

}  // namespace lifeline::graphs
