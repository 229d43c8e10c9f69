#include "core/bugs.h"

#include <cstdio>
#include <cstdlib>

namespace lifeline {
namespace {

constexpr std::string_view kIds[kBugCount] = {
#define LIFELINE_BUG(enumerator, id) id,
#include "core/bug_list.def"
#undef LIFELINE_BUG
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view BugId(Bug bug) { return kIds[static_cast<int>(bug)]; }

std::optional<Bug> BugFromId(std::string_view id) {
  for (int i = 0; i < kBugCount; ++i) {
    if (kIds[i] == id) return static_cast<Bug>(i);
  }
  return std::nullopt;
}

std::string KnownBugIds() {
  std::string out;
  for (int i = 0; i < kBugCount; ++i) {
    if (i) out += ", ";
    out += kIds[i];
  }
  return out;
}

bool ParseBugList(std::string_view text, BugSet* out, std::string* error) {
  BugSet set;
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    if (!item.empty()) {
      std::optional<Bug> bug = BugFromId(item);
      if (!bug) {
        *error = "unknown bug id '" + std::string(item) + "' in LIFELINE_REINTRODUCE; known ids: " +
                 KnownBugIds();
        return false;
      }
      set.Add(*bug);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *out = set;
  return true;
}

const BugSet& ReintroducedBugs() {
  static const BugSet set = [] {
    BugSet parsed;
    const char* env = std::getenv("LIFELINE_REINTRODUCE");
    std::string error;
    if (env != nullptr && !ParseBugList(env, &parsed, &error)) {
      std::fprintf(stderr, "lifeline: %s\n", error.c_str());
      std::fflush(stderr);
      std::_Exit(2);
    }
    return parsed;
  }();
  return set;
}

}  // namespace lifeline
