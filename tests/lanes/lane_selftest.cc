// lane_selftest MODE: commits one deliberate error of a kind, so ctest can prove each lane's tool is
// built in, active and fatal, and that its report parses to the expected crash type (lane.<lane>.<mode>).
// A lane whose sanitizer silently went missing fails here rather than passing every reproducer's
// "fixed" half. The reports these produce are also the parser's test data (tests/data/reports/).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <locale>
#include <string>
#include <thread>

#include "core/check.h"

namespace {

__attribute__((noinline)) int ReadAfterFree() {
  char* p = static_cast<char*>(std::malloc(24));
  std::strcpy(p, "freed before the read");
  std::free(p);
  return *reinterpret_cast<volatile char*>(p);
}

__attribute__((noinline)) const char* EscapeLocal() {
  char local[16] = "on the stack";
  const char* volatile escaped = local;
  return escaped;
}

__attribute__((noinline)) int ReadAfterReturn() { return *reinterpret_cast<const volatile char*>(EscapeLocal()); }

__attribute__((noinline)) int OverflowSigned(int x) { return x + 1; }

void* volatile g_sink = nullptr;
__attribute__((noinline)) void LeakBlock() {
  for (int i = 0; i < 8; ++i) {
    void* p = std::malloc(48);
    std::memset(p, i, 48);
    g_sink = p;  // overwritten next round: the previous block has no pointer left
  }
  g_sink = nullptr;
}

// Overwrites the dead stack below main so no stale copy of a leaked pointer keeps it reachable.
__attribute__((noinline)) void ClobberStack() {
  volatile char scratch[4096];
  for (char& c : const_cast<char(&)[4096]>(scratch)) c = 0;
}

int g_racy = 0;
__attribute__((noinline)) void IncrementRacy() { ++g_racy; }
__attribute__((noinline)) void RaceTwoThreads() {
  std::thread a(IncrementRacy);
  std::thread b(IncrementRacy);
  a.join();
  b.join();
}

// UBSan's checks whose comparisons the fuzz lane hides from libFuzzer's comparison tracing
// (cmake/sancov-filter/): each must still report. The operands come through volatiles, so nothing folds.
struct Pair {
  int a;
  int b;
};
volatile int g_volatile_int = 0;
__attribute__((noinline)) int LoadMisaligned() {
  alignas(8) char bytes[16] = {};
  const int* p = reinterpret_cast<const int*>(bytes + 1 + g_volatile_int);
  return *p;
}
__attribute__((noinline)) int LoadThroughNull() {
  Pair* volatile p = nullptr;
  return p->b;
}
__attribute__((noinline)) int OffsetPastTheEnd() {
  char* volatile p = reinterpret_cast<char*>(~uintptr_t{0} - 8);
  return *(p + 64 + g_volatile_int);
}
__attribute__((noinline)) int ShiftTooFar() {
  volatile int by = 40;
  return 1 << by;
}
__attribute__((noinline)) int IndexOutOfBounds() {
  int table[4] = {1, 2, 3, 4};
  volatile int i = 5;
  return table[i];
}
__attribute__((noinline)) int LoadInvalidBool() {
  volatile char byte = 5;
  bool b;
  char c = byte;
  std::memcpy(&b, &c, 1);
  return b ? 1 : 0;
}

// Two threads narrow the same character of a new ctype<char> facet, with nothing ordering them: libstdc++'s
// lazily filled cache (GCC PR libstdc++/77704), which the tsan lane's suppression of that one frame
// (core/sanitizer_defaults.cc) must keep quiet.
int NarrowOnTwoThreads() {
  const std::locale loc(std::locale::classic(), new std::ctype<char>);
  const auto& ct = std::use_facet<std::ctype<char>>(loc);
  char out[2] = {};
  std::thread a([&] { out[0] = ct.narrow('a', ' '); });
  std::thread b([&] { out[1] = ct.narrow('a', ' '); });
  a.join();
  b.join();
  return out[0] == 'a' && out[1] == 'a' ? 0 : 1;
}

__attribute__((noinline)) void FailCheck() { LIFELINE_CHECK(std::getenv("PATH") == nullptr, "selftest: deliberate check failure"); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lane_selftest heap-use-after-free|stack-use-after-return|signed-overflow|misaligned|"
                         "null-member|pointer-overflow|shift|index|bool|leak|data-race|narrow-cache|check\n");
    return 2;
  }
  std::string mode = argv[1];
  if (mode == "heap-use-after-free") return ReadAfterFree() == 0 ? 0 : 0;
  if (mode == "stack-use-after-return") return ReadAfterReturn() == 0 ? 0 : 0;
  if (mode == "signed-overflow") return OverflowSigned(std::numeric_limits<int>::max() - (argc - 2)) > 0 ? 0 : 0;
  if (mode == "misaligned") return LoadMisaligned();
  if (mode == "null-member") return LoadThroughNull();
  if (mode == "pointer-overflow") return OffsetPastTheEnd();
  if (mode == "shift") return ShiftTooFar();
  if (mode == "index") return IndexOutOfBounds();
  if (mode == "bool") return LoadInvalidBool();
  if (mode == "leak") {
    LeakBlock();
    ClobberStack();
    return 0;
  }
  if (mode == "data-race") {
    RaceTwoThreads();
    return 0;
  }
  if (mode == "narrow-cache") return NarrowOnTwoThreads();
  if (mode == "check") {
    FailCheck();
    return 0;
  }
  std::fprintf(stderr, "lane_selftest: unknown mode '%s'\n", mode.c_str());
  return 2;
}
