// The capsule programs' executor: runs a decoded program (format.h) against a Subject and its Peers
// (party.h) in the embedded interpreter. After every op it checks the op's outcome against the model's
// prediction (success, or the exception type), the accounting (harness/oracles/dlpack_oracles.h: the
// subject's storages, the peers' arrays through weak references, the subject's imported buffers and
// views, each exactly as alive as the lifetime model says), and every value read against what the
// producer wrote; at the end, that dropping everything runs every deleter exactly once.
#pragma once

#include <vector>

#include "harness/programs/capsule/format.h"
#include "harness/programs/capsule/party.h"

namespace lifeline::capsule {

// `program` must have been decoded with the peers' rules, in this order. LIFELINE_TRACE=1 prints the
// program first; a violation is a LIFELINE_CHECK failure with the op index and the trace.
void Execute(const Program& program, const Subject& subject, const std::vector<const Peer*>& peers);
inline void Execute(const Program& program, const Subject& subject, const Peer& peer) {
  Execute(program, subject, std::vector<const Peer*>{&peer});
}
// The rules of `peers`, in order: what Decode takes.
Peers RulesOf(const std::vector<const Peer*>& peers);

}  // namespace lifeline::capsule
