// The string-handoff programs as JSON (harness/programs/common/codec.h): what `lifeline reduce` edits.
//
//   {"format": "handoff", "ops": [{"id": 0, "op": "bind", "multilingual": true}, ...]}
//
// Operands by op: bind: multilingual; rebind: slot, multilingual; submit-async, submit-sync: slot,
// language (the bytes as a JSON string, or "language_bytes": [..] when they are not UTF-8), audio
// (samples, multiples of 1/8), threads, translate; start, cancel, join: job ("#<id>" of the submit).
// "model" holds the predictions: the status, the slot a bind gets, the language the worker must see, the
// job id, whether a join finds the job cancelled.
#pragma once

#include <memory>

#include "harness/programs/common/codec.h"

namespace lifeline::handoff {

std::unique_ptr<programs::Codec> MakeCodec();

}  // namespace lifeline::handoff
