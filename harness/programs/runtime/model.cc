#include "harness/programs/runtime/model.h"

#include <algorithm>
#include <iterator>

namespace lifeline::rtprog {
namespace {

template <size_t N>
std::vector<uint8_t> LiveOf(const bool (&alive)[N]) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < N; ++i) {
    if (alive[i]) out.push_back(static_cast<uint8_t>(i));
  }
  return out;
}

template <size_t N>
int FreeOf(const bool (&alive)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (!alive[i]) return static_cast<int>(i);
  }
  return -1;
}

template <size_t N>
bool AnyOf(const bool (&alive)[N]) {
  return std::find(std::begin(alive), std::end(alive), true) != std::end(alive);
}

}  // namespace

std::vector<uint8_t> EncoderModel::Live() const { return LiveOf(alive); }
int EncoderModel::FreeSlot() const { return FreeOf(alive); }

bool EncoderModel::Legal(EncoderOpKind kind) const {
  switch (kind) {
    case EncoderOpKind::kPushPool: return depth < kMaxPoolDepth;
    case EncoderOpKind::kDrainPool: return depth > 0;
    case EncoderOpKind::kCreateContext: return depth > 0 && FreeSlot() >= 0;
    default: return AnyOf(alive);  // set-threads, compute and destroy need a live context
  }
}

void EncoderModel::Apply(EncoderOp& op) {
  switch (op.kind) {
    case EncoderOpKind::kPushPool:
      op.state = depth == 0 ? "no-pool" : "in-pool";
      ++depth;
      break;
    case EncoderOpKind::kDrainPool:
      op.state = "empty";
      for (int c = 0; c < kMaxContexts; ++c) {
        if (!alive[c] || pool_drained[c] || created_depth[c] < depth) continue;
        op.state = "holds-contexts";
        pool_drained[c] = true;
      }
      --depth;
      break;
    case EncoderOpKind::kCreateContext:
      op.state = depth == 1 ? "one-pool" : "nested-pools";
      alive[op.context] = true;
      created_depth[op.context] = depth;
      pool_drained[op.context] = false;
      break;
    case EncoderOpKind::kSetThreads:
    case EncoderOpKind::kCompute:
    case EncoderOpKind::kDestroyContext:
      op.state = pool_drained[op.context] ? "pool-drained" : "pool-live";
      if (op.kind == EncoderOpKind::kSetThreads && op.n_cb == 0) op.expect = StatusCode::kInvalidArgument;
      if (op.kind == EncoderOpKind::kDestroyContext) alive[op.context] = false;
      break;
  }
}

std::vector<uint8_t> ReclaimModel::Live() const { return LiveOf(alive); }
int ReclaimModel::FreeSlot() const { return FreeOf(alive); }

bool ReclaimModel::Legal(ReclaimOpKind kind) const {
  switch (kind) {
    case ReclaimOpKind::kCreate: return FreeSlot() >= 0;
    case ReclaimOpKind::kCaptureOn: return !capture;
    case ReclaimOpKind::kCaptureOff: return capture;
    default: return AnyOf(alive);  // write, dispatch, read and destroy need a live buffer
  }
}

void ReclaimModel::Apply(ReclaimOp& op) {
  auto buffer_state = [&](uint8_t slot) {
    static const char* const kStates[2][2] = {{"uncaptured/off", "uncaptured/on"}, {"captured/off", "captured/on"}};
    return kStates[captured[slot]][capture];
  };
  switch (op.kind) {
    case ReclaimOpKind::kCreate: op.state = capture ? "on" : "off"; break;
    case ReclaimOpKind::kCaptureOn:
    case ReclaimOpKind::kCaptureOff: {
      op.state = "none-captured";
      for (int b = 0; b < kReclaimSlots; ++b)
        if (alive[b] && captured[b]) op.state = "captured-live";
      break;
    }
    case ReclaimOpKind::kDispatch: op.state = buffer_state(op.dispatch.out); break;
    default: op.state = buffer_state(op.slot); break;
  }
  switch (op.kind) {
    case ReclaimOpKind::kCreate:
      if (op.floats == 0) {  // the invalid request: the buffer is refused and the slot stays free
        op.expect = StatusCode::kInvalidArgument;
        break;
      }
      alive[op.slot] = true;
      floats[op.slot] = op.floats;
      captured[op.slot] = capture;
      break;
    case ReclaimOpKind::kDestroy: alive[op.slot] = false; break;
    case ReclaimOpKind::kCaptureOn: capture = true; break;
    case ReclaimOpKind::kCaptureOff: capture = false; break;
    default: break;
  }
}

}  // namespace lifeline::rtprog
