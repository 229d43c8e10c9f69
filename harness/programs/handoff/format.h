// The byte format of the string-handoff programs (target interop_string_handoff): bytes -> a bounded
// sequence of operations on a whisper.wasm-shaped async job API (bind, rebind, submit asynchronously or
// synchronously, start, cancel, join), each legal for the model state at that point (model.h) and
// carrying the model's prediction of its outcome.
//
// This decoder is a file format. Every corpus file and reproducer is read through it; changing how bytes
// map to ops silently rewrites all of them. tests/handoff/decoder_test.cc pins it (golden test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace lifeline::handoff {

inline constexpr size_t kMaxOps = 32;
inline constexpr size_t kMaxLangBytes = 40;    // longer than libstdc++'s 15-byte inline (SSO) buffer
inline constexpr size_t kMaxAudioSamples = 8;
inline constexpr int kMaxThreads = 8;          // n_threads is drawn from [0, kMaxThreads]; 0 is invalid
inline constexpr size_t kSlots = 4;            // context slots of the API (whisper.wasm's g_contexts)
inline constexpr size_t kMaxJobs = 8;          // jobs submitted and not yet joined, over all slots

enum class OpKind : uint8_t {
  kBind,         // Init(multilingual) -> lowest free slot
  kRebind,       // join the slot's jobs, Free(slot), Init(multilingual)
  kSubmitAsync,  // CallFullDefaultFromJs: a worker reads the language after the call returned
  kSubmitSync,   // CallFullSyncFromJs: the negative control
  kStart,        // let one job's worker run to completion
  kCancel,       // cancel one job (too late if it already ran)
  kJoin,         // join one job and check what its worker saw
  kMaxValue = kJoin,
};

struct Op {
  OpKind kind = OpKind::kBind;
  // Operands.
  bool multilingual = false;   // kBind, kRebind
  uint8_t slot = 0;            // kRebind, kSubmit*: may name an unbound slot (predicted NOT_FOUND)
  uint32_t job = 0;            // kStart, kCancel, kJoin; for kSubmitAsync the id it should get
  std::string language;        // kSubmit*: the bytes of the JS string
  std::vector<float> audio;    // kSubmit*
  int n_threads = 1;           // kSubmit*
  bool translate = false;      // kSubmit*
  // The model's predictions.
  StatusCode expect = StatusCode::kOk;
  uint8_t expect_slot = 0;        // kBind, kRebind: the slot Init returns
  std::string expect_language;    // kSubmit*: what the worker must read ("en" for English-only models)
  bool expect_cancelled = false;  // kJoin: the job was cancelled before it ran
  // The state the model found the op's object in (the model's StateOf), for `lifeline coverage --states`.
  const char* state = nullptr;
};

using Program = std::vector<Op>;

Program Decode(const uint8_t* data, size_t size);

// A program's id form, which the reducer edits (codec.h) and Encode takes: a job op's `job` names the
// index of the op that submitted the job instead of its id, so deleting ops leaves the others meaning what
// they meant. Slots stay numbers: there are four, a bind takes the lowest free one as the API does, and a
// submit may name a slot nothing bound.
Program ToIds(const Program& program);
// Whether two ops in id form are the same op: every operand the bytes decide, not the predictions.
bool SameOp(const Op& a, const Op& b);
// Encoding: the input whose decoding, in id form, is `target`; throws programs::Unencodable naming the
// first op that cannot be written.
std::vector<uint8_t> Encode(const Program& target);

// The ops' names as traces and a program's JSON (codec.h) write them, in OpKind order.
extern const char* const kOpNames[static_cast<int>(OpKind::kMaxValue) + 1];

// One line per op, e.g. `submit-async slot=1 lang="de" (2 B, inline) audio=3 threads=2 -> job 1`.
std::string Describe(const Op& op);
// "#i <op>" per op.
std::string Describe(const Program& program);

}  // namespace lifeline::handoff
