// What the families' codecs (codec.h) share to read and write their JSON: nlohmann::json, with reading
// errors turned into Unencodable messages that name the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "harness/programs/common/codec.h"
#include "harness/programs/common/source.h"

namespace lifeline::programs {

using Json = nlohmann::ordered_json;  // ops keep their fields in the order written: "id", "op" first

// The JSON text of `program` (Codec::Decode's result), one op per line so that a reduced program reads
// as a list.
std::string ProgramText(const Json& program);

// Parses a program's text: an object with an "ops" array of objects, each with an integer "id" and a
// string "op". `format` must match its "format". Unencodable otherwise.
Json ParseProgram(const std::string& text, const char* format);

// `obj[key]` as a T (Unencodable naming `key` when it is missing or of another type).
template <typename T>
T Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) throw Unencodable(std::string("missing '") + key + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Unencodable(std::string("'") + key + "' has the wrong type (" + it->dump() + ")");
  }
}

// `obj[key]` as a T, or `fallback` when it is missing.
template <typename T>
T GetOr(const Json& obj, const char* key, T fallback) {
  return obj.contains(key) ? Get<T>(obj, key) : fallback;
}

// The enumerator of `Kind` named `obj[key]` in `names` (one name per enumerator, in order).
template <typename Kind, size_t N>
Kind GetNamed(const Json& obj, const char* key, const char* const (&names)[N]) {
  const std::string name = Get<std::string>(obj, key);
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Kind>(i);
  throw Unencodable(std::string("'") + key + "' is \"" + name + "\", not a name this format knows");
}

// The enumerator `k` in [0, count) of `Kind` whose `name(k)` is `obj[key]`.
template <typename Kind, typename Name>
Kind GetNamedBy(const Json& obj, const char* key, int count, Name&& name) {
  const std::string got = Get<std::string>(obj, key);
  for (int k = 0; k < count; ++k)
    if (got == name(static_cast<Kind>(k))) return static_cast<Kind>(k);
  throw Unencodable(std::string("'") + key + "' is \"" + got + "\", not a name this format knows");
}

// The position of the op that `obj[key]` ("#<id>") names, before the op at `at`.
inline size_t GetRef(const Json& obj, const char* key, const OpIds& ids, size_t at) {
  return ids.Resolve(Get<std::string>(obj, key), at);
}

// Reads the "ops" of `program`: their ids (into `ids`) and, per op, `read(op_json, position)`; an op that
// cannot be read is Unencodable with its id in the message.
template <typename Read>
void ReadOps(const Json& program, OpIds& ids, Read&& read) {
  const Json& ops = program.at("ops");
  for (size_t i = 0; i < ops.size(); ++i) ids.Add(Get<long long>(ops[i], "id"), i);
  for (size_t i = 0; i < ops.size(); ++i) {
    try {
      read(ops[i], i);
    } catch (const Unencodable& e) {
      throw Unencodable("op " + RefText(ops[i].at("id").get<long long>()) + " (" +
                        ops[i].at("op").get<std::string>() + "): " + e.what());
    }
  }
}

}  // namespace lifeline::programs
