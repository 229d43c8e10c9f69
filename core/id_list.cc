#include "core/id_list.h"

#include <cstdio>
#include <cstdlib>

namespace lifeline::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<int> IdList::Find(std::string_view id) const {
  for (int i = 0; i < count; ++i) {
    if (ids[i] == id) return i;
  }
  return std::nullopt;
}

std::string IdList::Joined() const {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += ids[i];
  }
  return out;
}

bool IdList::Parse(std::string_view text, uint64_t* bits, std::string* error) const {
  uint64_t set = 0;
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    if (!item.empty()) {
      std::optional<int> i = Find(item);
      if (!i) {
        *error = std::string("unknown ") + noun + " '" + std::string(item) + "' in " + variable + "; known " + plural +
                 ": " + Joined();
        return false;
      }
      set |= uint64_t{1} << *i;
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *bits = set;
  return true;
}

uint64_t IdList::FromEnvironmentOrExit() const {
  const char* env = std::getenv(variable);
  uint64_t bits = 0;
  std::string error;
  if (env != nullptr && !Parse(env, &bits, &error)) {
    std::fprintf(stderr, "lifeline: %s\n", error.c_str());
    std::fflush(stderr);
    std::_Exit(2);
  }
  return bits;
}

}  // namespace lifeline::internal
