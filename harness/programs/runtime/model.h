// The runtime programs' models: what each decoder knows of the state its ops leave (pools on the stack,
// live contexts; live buffer slots and their sizes, whether capture is on), enough to offer only legal
// ops, draw operands from live objects, and predict the ops that must fail. The values buffers hold are
// the executor's business (the kernel reference, harness/oracles/runtime_oracles.h).
#pragma once

#include <cstdint>
#include <vector>

#include "harness/programs/runtime/format.h"

namespace lifeline::rtprog {

struct EncoderModel {
  int depth = 0;                   // transient pools on the stack
  bool alive[kMaxContexts] = {};   // context slots

  std::vector<uint8_t> Live() const;
  int FreeSlot() const;            // the lowest free context slot, or -1
  bool Legal(EncoderOpKind kind) const;
  // Records `op` (operands decoded) and fills its prediction.
  void Apply(EncoderOp& op);
};

struct ReclaimModel {
  bool alive[kReclaimSlots] = {};
  uint32_t floats[kReclaimSlots] = {};
  bool capture = false;

  std::vector<uint8_t> Live() const;
  int FreeSlot() const;            // the lowest free buffer slot, or -1
  bool Legal(ReclaimOpKind kind) const;
  void Apply(ReclaimOp& op);
};

}  // namespace lifeline::rtprog
