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
    case EncoderOpKind::kPushPool: ++depth; break;
    case EncoderOpKind::kDrainPool: --depth; break;
    case EncoderOpKind::kCreateContext: alive[op.context] = true; break;
    case EncoderOpKind::kSetThreads:
      if (op.n_cb == 0) op.expect = StatusCode::kInvalidArgument;
      break;
    case EncoderOpKind::kCompute: break;
    case EncoderOpKind::kDestroyContext: alive[op.context] = false; break;
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
  switch (op.kind) {
    case ReclaimOpKind::kCreate:
      if (op.floats == 0) {  // the invalid request: the buffer is refused and the slot stays free
        op.expect = StatusCode::kInvalidArgument;
        break;
      }
      alive[op.slot] = true;
      floats[op.slot] = op.floats;
      break;
    case ReclaimOpKind::kDestroy: alive[op.slot] = false; break;
    case ReclaimOpKind::kCaptureOn: capture = true; break;
    case ReclaimOpKind::kCaptureOff: capture = false; break;
    default: break;
  }
}

}  // namespace lifeline::rtprog
