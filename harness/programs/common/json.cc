#include "harness/programs/common/json.h"

namespace lifeline::programs {

void OpIds::Add(long long id, size_t position) {
  if (!position_.emplace(id, position).second) throw Unencodable("two ops have id " + std::to_string(id));
}

size_t OpIds::Resolve(const std::string& ref, size_t at) const {
  size_t used = 0;
  long long id = -1;
  try {
    if (ref.size() > 1 && ref[0] == '#') id = std::stoll(ref.substr(1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used + 1 != ref.size()) throw Unencodable("\"" + ref + "\" is not a reference (\"#<id>\")");
  auto it = position_.find(id);
  if (it == position_.end()) throw Unencodable("names " + ref + ", which is not an op of the program");
  if (it->second >= at) throw Unencodable("names " + ref + ", which comes after it");
  return it->second;
}

std::string ProgramText(const Json& program) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : program.items()) {
    if (key == "ops") continue;
    out += std::string(first ? "" : ", ") + Json(key).dump() + ": " + value.dump();
    first = false;
  }
  out += std::string(first ? "" : ",") + "\n \"ops\": [";
  const Json& ops = program.at("ops");
  for (size_t i = 0; i < ops.size(); ++i) out += std::string(i ? ",\n  " : "\n  ") + ops[i].dump();
  return out + "\n ]}\n";
}

std::string StateLines(const std::string& program_json) {
  std::string out;
  const Json program = Json::parse(program_json);  // named: a range over a temporary's member would dangle
  for (const Json& op : program.at("ops")) {
    if (!op.contains("model") || !op["model"].contains("state")) continue;
    out += op.at("op").get<std::string>() + "\t" + op["model"]["state"].get<std::string>() + "\n";
  }
  return out;
}

Json ParseProgram(const std::string& text, const char* format) {
  Json program;
  try {
    program = Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Unencodable(std::string("not JSON: ") + e.what());
  }
  if (!program.is_object()) throw Unencodable("a program is a JSON object");
  const std::string got = GetOr<std::string>(program, "format", "");
  if (got != format) throw Unencodable("\"format\" is \"" + got + "\", this target's programs are \"" + format + "\"");
  if (!program.contains("ops") || !program["ops"].is_array()) throw Unencodable("a program has an \"ops\" array");
  for (const Json& op : program["ops"]) {
    if (!op.is_object() || !op.contains("id") || !op["id"].is_number_integer() || !op.contains("op") ||
        !op["op"].is_string())
      throw Unencodable("every op is an object with an integer \"id\" and a string \"op\": " + op.dump());
  }
  return program;
}

}  // namespace lifeline::programs
