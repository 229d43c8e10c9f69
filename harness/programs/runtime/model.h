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
  int created_depth[kMaxContexts] = {};  // the pool depth each live context was created at
  bool pool_drained[kMaxContexts] = {};  // ... and whether that pool has drained since

  std::vector<uint8_t> Live() const;
  int FreeSlot() const;            // the lowest free context slot, or -1
  bool Legal(EncoderOpKind kind) const;
  // Records `op` (operands decoded) and fills its prediction and its `state`, the state of what it acts on
  // before it acts, as `lifeline coverage --states` counts them (states.txt beside this file): a push finds no
  // pool or one; a drain finds live contexts created in its pool (holds-contexts) or none (empty); a create
  // runs in one pool or nested ones; an op on a context finds the pool it was created in live or drained.
  void Apply(EncoderOp& op);
};

struct ReclaimModel {
  bool alive[kReclaimSlots] = {};
  uint32_t floats[kReclaimSlots] = {};
  bool capture = false;
  bool captured[kReclaimSlots] = {};  // the live buffer was created while capture was on

  std::vector<uint8_t> Live() const;
  int FreeSlot() const;            // the lowest free buffer slot, or -1
  bool Legal(ReclaimOpKind kind) const;
  // As EncoderModel::Apply. States: an op on a buffer (a dispatch: on its output) finds it created while
  // capture was on or not, and capture on or off now (captured/on, uncaptured/off, ...); a create finds
  // capture on or off; the capture switches find live buffers created under capture or none.
  void Apply(ReclaimOp& op);
};

}  // namespace lifeline::rtprog
