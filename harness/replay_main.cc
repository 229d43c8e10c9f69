// The replay driver: links in place of libFuzzer in the non-fuzz lanes (and with any compiler), and runs
// LLVMFuzzerTestOneInput over checked-in inputs.
//
//   <target> FILE|DIR...    replay each file; a directory contributes its regular files, sorted by name
//   <target> --program decode FILE        print the program FILE decodes to, as JSON (programs/common/codec.h)
//   <target> --program encode JSON OUT    write to OUT the input whose program is the JSON file; exit 1 with
//                                         the reason when the format cannot express it (what `lifeline reduce`
//                                         runs)
//   <target> --program states FILE|DIR... print one `op<TAB>state` line per op of every input: the state the
//                                         model found each op's object in (`lifeline coverage --states`)
//
// Each input gets its own heap allocation of exactly its size, so a read one byte past the end is an ASan
// report rather than a read of the next file's bytes. Running nothing is a failure: no arguments, a path
// that does not exist, or a directory without files exit with status 2 and a message naming the path.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "harness/programs/common/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

int Fail(const std::string& message) {
  std::fprintf(stderr, "replay: %s\n", message.c_str());
  return 2;
}

bool ReadFile(const fs::path& path, std::vector<char>* out, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open '" + path.string() + "': " + std::strerror(errno);
    return false;
  }
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "cannot read '" + path.string() + "'";
    return false;
  }
  return true;
}

// The inputs argv[first..] name: files, and each directory's regular files sorted by name. Returns "" or what
// is wrong with an argument.
std::string CollectInputs(int first, int argc, char** argv, std::vector<fs::path>* inputs) {
  for (int i = first; i < argc; ++i) {
    fs::path arg(argv[i]);
    if (argv[i][0] == '-') return "unknown option '" + arg.string() + "' (this is the replay driver, not libFuzzer)";
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      if (ec) return "cannot list '" + arg.string() + "': " + ec.message();
      if (files.empty()) return "directory '" + arg.string() + "' holds no input files";
      std::sort(files.begin(), files.end());
      inputs->insert(inputs->end(), files.begin(), files.end());
    } else if (fs::is_regular_file(arg, ec)) {
      inputs->push_back(arg);
    } else {
      return "'" + arg.string() + "' is not a file or directory";
    }
  }
  return "";
}

// `--program decode FILE` and `--program encode JSON OUT`: the target's own decoder, both ways; nothing runs.
int Program(int argc, char** argv) {
  const std::string usage = std::string("usage: ") + argv[0] +
                            " --program decode FILE | --program encode JSON OUT | --program states FILE|DIR...";
  const std::string verb = argc > 2 ? argv[2] : "";
  if (!(verb == "decode" && argc == 4) && !(verb == "encode" && argc == 5) && !(verb == "states" && argc >= 4))
    return Fail(usage);
  if (&lifeline::programs::TargetCodec == nullptr || lifeline::programs::TargetCodec() == nullptr)
    return Fail("this target has no program codec (LIFELINE_TARGET_CODEC in its file)");
  const lifeline::programs::Codec& codec = *lifeline::programs::TargetCodec();
  if (verb == "states") {
    std::vector<fs::path> inputs;
    if (std::string error = CollectInputs(3, argc, argv, &inputs); !error.empty()) return Fail(error);
    for (const fs::path& path : inputs) {
      std::vector<char> in;
      std::string error;
      if (!ReadFile(path, &in, &error)) return Fail(error);
      std::vector<uint8_t> bytes(in.begin(), in.end());
      std::fputs(lifeline::programs::StateLines(codec.Decode(bytes.data(), bytes.size())).c_str(), stdout);
    }
    return 0;
  }
  std::vector<char> in;
  std::string error;
  if (!ReadFile(argv[3], &in, &error)) return Fail(error);
  if (verb == "decode") {
    std::vector<uint8_t> bytes(in.begin(), in.end());
    std::fputs(codec.Decode(bytes.data(), bytes.size()).c_str(), stdout);
    return 0;
  }
  std::vector<uint8_t> out;
  try {
    out = codec.Encode(std::string(in.begin(), in.end()));
  } catch (const lifeline::programs::Unencodable& e) {
    std::fprintf(stderr, "replay: cannot encode %s: %s\n", argv[3], e.what());
    return 1;
  }
  std::ofstream file(argv[4], std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  file.close();
  if (!file) return Fail("cannot write '" + std::string(argv[4]) + "': " + std::strerror(errno));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The codec runs nothing, so it needs none of what LLVMFuzzerInitialize sets up (torch_capsule_lifecycle
  // imports torch there).
  if (argc >= 2 && std::string(argv[1]) == "--program") return Program(argc, argv);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) return Fail("no inputs given; usage: " + std::string(argv[0]) + " FILE|DIR...");

  std::vector<fs::path> inputs;
  if (std::string error = CollectInputs(1, argc, argv, &inputs); !error.empty()) return Fail(error);

  for (const fs::path& path : inputs) {
    std::vector<char> bytes;
    std::string error;
    if (!ReadFile(path, &bytes, &error)) return Fail(error);
    std::fprintf(stderr, "replay: running %s (%zu bytes)\n", path.c_str(), bytes.size());
    // One exactly-sized heap copy per input (a zero-byte input still gets its own allocation).
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), copy.get());
    LLVMFuzzerTestOneInput(copy.get(), bytes.size());
  }
  std::fprintf(stderr, "replay: %zu input(s) ran\n", inputs.size());
  return 0;
}
