// A program as JSON, both ways: what `lifeline reduce` reads, edits and writes back as an input
// (cli/lifeline/reduce.py), and what `<target> --program decode|encode` prints and takes
// (harness/replay_main.cc).
//
// Every family writes the same shape:
//
//   {"format": "<family>", <the family's header fields>,
//    "ops": [{"id": 0, "op": "<name>", <operands>, "model": {<what the model derived>}}, ...]}
//
// An operand that names an object another op made (a tensor, a graph, a slot's object, a job) is the
// string "#<id>" of that op (the family's id form, format.h), so the ops of a program can be deleted and
// the rest still mean what they meant: a reducer deletes an op together with every op that names it. "id"
// is the op's position when decoded; an edited program keeps its ids, gaps and all. "model" is output only
// (predictions and what the model derives from the ops before); Encode ignores it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/programs/common/source.h"

namespace lifeline::programs {

class Codec {
 public:
  virtual ~Codec() = default;
  // The program `data` decodes to, as JSON (above).
  virtual std::string Decode(const uint8_t* data, size_t size) const = 0;
  // The input that decodes to the program `json`. Throws Unencodable naming what cannot be written: text
  // that is not such a program (an unknown op, a missing operand, a reference to no op) or a program the
  // format cannot express.
  virtual std::vector<uint8_t> Encode(const std::string& json) const = 0;
};

// The codec of the target this executable is: defined by each target (LIFELINE_TARGET_CODEC), weak here so
// that executables without one link. harness/replay_main.cc serves it as `--program`.
const Codec* TargetCodec() __attribute__((weak));

// One `<op>\t<state>\n` line per op of `program_json` (Codec::Decode's text) whose "model" names the state the
// model found its object in (the families' StateOf). Defined with the codecs (json.cc), weak here like them.
std::string StateLines(const std::string& program_json) __attribute__((weak));

// "#<id>" for op `id`.
inline std::string RefText(size_t id) { return "#" + std::to_string(id); }

// Reading the "ops" of a program: the op ids and the position of each. References resolve to positions;
// a reference to an op the program does not hold, or to a later one, is Unencodable.
class OpIds {
 public:
  // Records the op at `position` with `id`; a repeated id is Unencodable.
  void Add(long long id, size_t position);
  // The position of the op `ref` ("#<id>") names, which must come before `at`.
  size_t Resolve(const std::string& ref, size_t at) const;

 private:
  std::map<long long, size_t> position_;
};

}  // namespace lifeline::programs

// In a target's file: `LIFELINE_TARGET_CODEC(<expression making a std::unique_ptr<Codec>>)`. Codecs are built in
// the asan lane only (harness/CMakeLists.txt: LIFELINE_PROGRAM_CODEC); elsewhere the macro defines nothing.
#if defined(LIFELINE_PROGRAM_CODEC)
#define LIFELINE_TARGET_CODEC(make)                                   \
  const ::lifeline::programs::Codec* ::lifeline::programs::TargetCodec() { \
    static const auto codec = (make);                                  \
    return codec.get();                                                \
  }
#else
#define LIFELINE_TARGET_CODEC(make)
#endif
