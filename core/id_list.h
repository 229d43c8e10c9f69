// A fixed list of kebab-case ids and the comma-separated selections of it that an environment variable
// holds. The bug switches (bugs.h, LIFELINE_REINTRODUCE) and the guards (guards.h, LIFELINE_UNGUARD) are two
// such lists, each expanded from its .def file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lifeline {

// A set of enumerators of E (at most 64), one bit each.
template <typename E>
class EnumSet {
 public:
  EnumSet() = default;
  explicit EnumSet(uint64_t bits) : bits_(bits) {}
  bool Has(E e) const { return (bits_ >> static_cast<int>(e)) & 1u; }
  void Add(E e) { bits_ |= uint64_t{1} << static_cast<int>(e); }
  bool empty() const { return bits_ == 0; }

 private:
  uint64_t bits_ = 0;
};

namespace internal {

struct IdList {
  const std::string_view* ids;
  int count;
  const char* noun;      // what one entry is called in an error: "bug id", "guard"
  const char* plural;    // ... and the list of them: "ids", "guards"
  const char* variable;  // the environment variable a selection comes from: "LIFELINE_REINTRODUCE"

  std::optional<int> Find(std::string_view id) const;
  // "a, b, c" for error messages.
  std::string Joined() const;
  // Ids separated by commas, surrounding blanks and empty entries ignored, as bits by position. False, with
  // `*error` naming the unknown id and listing the known ones, on an id not in the list.
  bool Parse(std::string_view text, uint64_t* bits, std::string* error) const;
  // The selection in `variable` (none when unset). An unknown id prints the error to stderr and exits with
  // status 2: a typo must never silently run something else than what was asked for.
  uint64_t FromEnvironmentOrExit() const;
};

}  // namespace internal
}  // namespace lifeline
