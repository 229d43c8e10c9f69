// The documented bugs (core/bug_list.def, the one list) and the run-time switch that re-introduces
// them. `LIFELINE_REINTRODUCE` holds a comma-separated list of bug ids; the buggy branch of each bug
// sits next to its fix in the layer and is taken only when `Reintroduced(bug)` is true.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/id_list.h"

namespace lifeline {

enum class Bug : uint8_t {
#define LIFELINE_BUG(enumerator, id) enumerator,
#include "core/bug_list.def"
#undef LIFELINE_BUG
};

inline constexpr int kBugCount = 0
#define LIFELINE_BUG(enumerator, id) +1
#include "core/bug_list.def"
#undef LIFELINE_BUG
    ;
static_assert(kBugCount <= 64, "BugSet keeps one bit per bug in a uint64_t");

// The kebab-case id used in core/bug_list.def, repro/<id>/ and LIFELINE_REINTRODUCE.
std::string_view BugId(Bug bug);
std::optional<Bug> BugFromId(std::string_view id);
// "metal-edesc-autorelease, metal-encode-async-block, ..." for error messages.
std::string KnownBugIds();

using BugSet = EnumSet<Bug>;

// Parses a LIFELINE_REINTRODUCE value: ids separated by commas, surrounding blanks ignored, empty
// entries ignored. Returns false and sets `*error` (naming the bad id and listing the known ones) on an
// unknown id.
bool ParseBugList(std::string_view text, BugSet* out, std::string* error);

// The process-wide switch set, read from LIFELINE_REINTRODUCE once. An unknown id prints the error to
// stderr and exits with status 2: a typo must never silently run the fixed code.
const BugSet& ReintroducedBugs();
inline bool Reintroduced(Bug bug) { return ReintroducedBugs().Has(bug); }

}  // namespace lifeline
