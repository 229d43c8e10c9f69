// The program codecs' round trip (harness/programs/common/codec.h), checked over every input the project
// keeps for a target: its seeds, its regression corpus and the reproducers that name it. Each input decodes
// to a program; that program, as JSON, encodes to an input that decodes to the same program again (its
// JSON text equal). The inputs are the format's whole history, so a decoder change that the encoder does
// not follow fails here by name.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/programs/common/codec.h"

namespace lifeline::testing {

namespace fs = std::filesystem;

inline std::vector<uint8_t> ReadBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The files of corpus/<target>/, corpus/regression/<target>/ and the inputs of every repro/*/bug.json whose
// target (or upstream variant's target) is `target`, under the source tree `root`.
inline std::vector<fs::path> InputsOf(const fs::path& root, const std::string& target) {
  std::vector<fs::path> out;
  for (const fs::path dir : {root / "corpus" / target, root / "corpus" / "regression" / target}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  }
  for (const auto& d : fs::directory_iterator(root / "repro")) {
    std::ifstream in(d.path() / "bug.json");
    if (!in) continue;
    nlohmann::json bug = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!bug.is_object()) continue;
    for (const nlohmann::json* part : {&bug, bug.contains("upstream_variant") ? &bug["upstream_variant"] : nullptr}) {
      if (part == nullptr || part->value("target", "") != target || !part->contains("reproducers")) continue;
      for (const auto& r : (*part)["reproducers"])
        if (r.contains("input")) out.push_back(d.path() / r["input"].get<std::string>());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Why `codec` refuses to encode `text` (Unencodable's message), or "(encoded)".
inline std::string RefusalOf(const programs::Codec& codec, const std::string& text) {
  try {
    codec.Encode(text);
  } catch (const programs::Unencodable& e) {
    return e.what();
  }
  return "(encoded)";
}

// The round trip of every input of `target`; at least `at_least` inputs must be there (an empty corpus
// would pass nothing).
inline void ExpectEveryInputRoundTrips(const programs::Codec& codec, const fs::path& root, const std::string& target,
                                       size_t at_least) {
  const std::vector<fs::path> inputs = InputsOf(root, target);
  ASSERT_GE(inputs.size(), at_least) << "inputs of " << target << " under " << root;
  for (const fs::path& p : inputs) {
    SCOPED_TRACE(p.string());
    const std::vector<uint8_t> bytes = ReadBytes(p);
    const std::string json = codec.Decode(bytes.data(), bytes.size());
    std::vector<uint8_t> again;
    try {
      again = codec.Encode(json);
    } catch (const programs::Unencodable& e) {
      ADD_FAILURE() << "its program does not encode: " << e.what() << "\n" << json;
      continue;
    }
    EXPECT_EQ(codec.Decode(again.data(), again.size()), json);
  }
}

}  // namespace lifeline::testing
