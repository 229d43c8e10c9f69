#include "core/bugs.h"

namespace lifeline {
namespace {

constexpr std::string_view kIds[kBugCount] = {
#define LIFELINE_BUG(enumerator, id) id,
#include "core/bug_list.def"
#undef LIFELINE_BUG
};

constexpr internal::IdList kBugs{kIds, kBugCount, "bug id", "ids", "LIFELINE_REINTRODUCE"};

}  // namespace

std::string_view BugId(Bug bug) { return kIds[static_cast<int>(bug)]; }

std::optional<Bug> BugFromId(std::string_view id) {
  std::optional<int> i = kBugs.Find(id);
  return i ? std::optional<Bug>(static_cast<Bug>(*i)) : std::nullopt;
}

std::string KnownBugIds() { return kBugs.Joined(); }

bool ParseBugList(std::string_view text, BugSet* out, std::string* error) {
  uint64_t bits = 0;
  if (!kBugs.Parse(text, &bits, error)) return false;
  *out = BugSet(bits);
  return true;
}

const BugSet& ReintroducedBugs() {
  static const BugSet set(kBugs.FromEnvironmentOrExit());
  return set;
}

}  // namespace lifeline
