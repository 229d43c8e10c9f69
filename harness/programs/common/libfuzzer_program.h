// `<target> --program decode|encode|states` where the target is linked with libFuzzer (the fuzz lane), whose
// main() is libFuzzer's: LLVMFuzzerInitialize, which libFuzzer calls before it reads its flags, serves the verbs
// and exits. The replay driver serves the same verbs in the other lanes (harness/replay_main.cc, which takes them
// before LLVMFuzzerInitialize, so a target may use this in every lane).
//
// For a target built only where no lane builds codecs otherwise (llama_memory_differential: the fuzz and tsan
// lanes; harness/CMakeLists.txt builds its codec in the fuzz lane), so that `lifeline reduce` and `lifeline
// export` can decode and encode its programs. In a target's file, after LIFELINE_TARGET_CODEC:
//
//   LIFELINE_LIBFUZZER_PROGRAM_VERBS()
//
// Without a codec or without libFuzzer it defines nothing.
#pragma once

#if defined(LIFELINE_PROGRAM_CODEC) && defined(LIFELINE_LIBFUZZER)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/programs/common/codec.h"

namespace lifeline::programs {

inline bool ReadAll(const std::filesystem::path& path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// The verbs as harness/replay_main.cc documents them; 0 on success, 1 when a program does not encode, 2 on
// bad arguments or unreadable files.
inline int ServeProgramVerb(int argc, char** argv) {
  namespace fs = std::filesystem;
  const std::string verb = argc > 2 ? argv[2] : "";
  auto fail = [](const std::string& why) {
    std::fprintf(stderr, "program: %s\n", why.c_str());
    return 2;
  };
  if (!(verb == "decode" && argc == 4) && !(verb == "encode" && argc == 5) && !(verb == "states" && argc >= 4))
    return fail(std::string("usage: ") + argv[0] +
                " --program decode FILE | --program encode JSON OUT | --program states FILE|DIR...");
  if (TargetCodec() == nullptr) return fail("this target has no program codec");
  const Codec& codec = *TargetCodec();
  std::vector<uint8_t> bytes;
  if (verb == "states") {
    std::vector<fs::path> inputs;
    for (int i = 3; i < argc; ++i) {
      std::error_code ec;
      if (fs::is_directory(argv[i], ec)) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(argv[i], ec))
          if (e.is_regular_file()) files.push_back(e.path());
        std::sort(files.begin(), files.end());
        inputs.insert(inputs.end(), files.begin(), files.end());
      } else {
        inputs.emplace_back(argv[i]);
      }
    }
    for (const fs::path& p : inputs) {
      if (!ReadAll(p, &bytes)) return fail("cannot read '" + p.string() + "'");
      std::fputs(StateLines(codec.Decode(bytes.data(), bytes.size())).c_str(), stdout);
    }
    return 0;
  }
  if (!ReadAll(argv[3], &bytes)) return fail("cannot read '" + std::string(argv[3]) + "'");
  if (verb == "decode") {
    std::fputs(codec.Decode(bytes.data(), bytes.size()).c_str(), stdout);
    return 0;
  }
  std::vector<uint8_t> out;
  try {
    out = codec.Encode(std::string(bytes.begin(), bytes.end()));
  } catch (const Unencodable& e) {
    std::fprintf(stderr, "program: cannot encode %s: %s\n", argv[3], e.what());
    return 1;
  }
  std::ofstream file(argv[4], std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  file.close();
  return file ? 0 : fail("cannot write '" + std::string(argv[4]) + "'");
}

}  // namespace lifeline::programs

#define LIFELINE_LIBFUZZER_PROGRAM_VERBS()                                                 \
  extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {                           \
    if (*argc >= 2 && std::strcmp((*argv)[1], "--program") == 0)                           \
      std::exit(::lifeline::programs::ServeProgramVerb(*argc, *argv));                     \
    return 0;                                                                              \
  }
#else
#define LIFELINE_LIBFUZZER_PROGRAM_VERBS()
#endif
