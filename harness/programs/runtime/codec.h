// The runtime programs as JSON (harness/programs/common/codec.h): what `lifeline reduce` edits.
//
//   {"format": "runtime-encoder", "ops": [{"id": 0, "op": "push-pool"}, {"id": 1, "op": "create-context",
//    "n_cb": 2}, {"id": 2, "op": "compute", "context": "#1", "frame": [{"kernel": "fill", "out": 0, "n": 4,
//    "value": 1.5}]}, ...]}
//   {"format": "runtime-reclaim", "ops": [{"id": 0, "op": "create", "floats": 16}, {"id": 1, "op": "write",
//    "buffer": "#0", "seed": 3}, ...]}
//
// Encoder programs: create-context: n_cb; set-threads: context, n_cb; compute: context, frame (dispatches
// over buffers 0-2: kernel, out, a (not for fill), b (add only), n, value (fill, scale)); destroy-context:
// context. Reclaim programs: create: floats (0: the invalid request); write: buffer, seed; dispatch: the
// same dispatch with buffers as references; read: buffer; destroy: buffer, purge. A context or buffer is
// "#<id>" of the op that created it.
#pragma once

#include <memory>

#include "harness/programs/common/codec.h"

namespace lifeline::rtprog {

std::unique_ptr<programs::Codec> MakeEncoderCodec();
std::unique_ptr<programs::Codec> MakeReclaimCodec();

}  // namespace lifeline::rtprog
