// The capsule programs' executor: runs a decoded program (format.h) against a Subject and a Peer
// (party.h) in the embedded interpreter. After every op it checks the op's outcome against the model's
// prediction (success, or the exception type), the accounting (harness/oracles/dlpack_oracles.h: the
// subject's storages, the peer's arrays through weak references, the subject's imported buffers and
// views, each exactly as alive as the lifetime model says), and every value read against what the
// producer wrote; at the end, that dropping everything runs every deleter exactly once.
#pragma once

#include "harness/programs/capsule/format.h"
#include "harness/programs/capsule/party.h"

namespace lifeline::capsule {

// `program` must have been decoded with `peer.rules()`. LIFELINE_TRACE=1 prints the program first; a
// violation is a LIFELINE_CHECK failure with the op index and the trace.
void Execute(const Program& program, const Subject& subject, const Peer& peer);

}  // namespace lifeline::capsule
