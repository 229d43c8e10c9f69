// Guards: exact predicates of upstream-open findings (core/guard_list.def), checked by the code that drives
// upstream before it calls in. When one holds, the driver takes the workaround a careful user would (re-plan,
// size a table, refuse the op) and the program's model predicts that outcome, so a fuzzer that already knows
// a finding goes on looking past it instead of finding it again on every other input.
//
// Guards are on by default. LIFELINE_UNGUARD holds a comma-separated list of guard ids to turn off (a
// finding's reproducer runs unguarded to show the pinned upstream still has the bug); an unknown id exits 2
// naming it and listing the known ones, like LIFELINE_REINTRODUCE.
//
// Counting: a target with guards calls BeginGuardedInput() once per input; GuardHolds(g) records that g
// fired in the current input. With LIFELINE_GUARD_COUNTS=<file> the counts go to that file as they happen
// (shared, atomic: several fork-mode processes may add to one file), so a crash or an interrupt loses
// nothing. The file (little-endian): "LLGUARD1", uint64 inputs, uint64 n, then n entries of 64 bytes:
// char id[56] (NUL-padded guard id), uint64 inputs in which that guard fired. `lifeline fuzz` reads it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/id_list.h"

namespace lifeline {

enum class Guard : uint8_t {
#define LIFELINE_GUARD(enumerator, id) enumerator,
#include "core/guard_list.def"
#undef LIFELINE_GUARD
};

inline constexpr int kGuardCount = 0
#define LIFELINE_GUARD(enumerator, id) +1
#include "core/guard_list.def"
#undef LIFELINE_GUARD
    ;
static_assert(kGuardCount <= 64, "GuardSet keeps one bit per guard in a uint64_t");

std::string_view GuardId(Guard guard);
std::optional<Guard> GuardFromId(std::string_view id);
std::string KnownGuardIds();

using GuardSet = EnumSet<Guard>;

// Parses a LIFELINE_UNGUARD value (ids separated by commas, blanks and empty entries ignored). Returns false
// and sets `*error` (naming the bad id, listing the known ones) on an unknown id.
bool ParseGuardList(std::string_view text, GuardSet* out, std::string* error);

// The guards turned off, read from LIFELINE_UNGUARD once; an unknown id prints the error and exits 2.
const GuardSet& UnguardedSet();
inline bool GuardOn(Guard g) { return !UnguardedSet().Has(g); }

// Called by a target with guards at the start of every input: validates LIFELINE_UNGUARD (before anything
// runs) and counts the input.
void BeginGuardedInput();

// The driver found guard `g`'s trigger. Returns whether the guard is on; when it is, counts it for this
// input and, with LIFELINE_TRACE, prints "guard <id>: <why()>" (why() is only built then).
bool GuardHolds(Guard g, const std::function<std::string()>& why);

// This process's counts since it started (tests; the file holds every process's).
struct GuardCounts {
  uint64_t inputs = 0;
  uint64_t fired[kGuardCount] = {};
};
const GuardCounts& ProcessGuardCounts();

}  // namespace lifeline
