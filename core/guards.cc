#include "core/guards.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lifeline {
namespace {

constexpr std::string_view kIds[kGuardCount] = {
#define LIFELINE_GUARD(enumerator, id) id,
#include "core/guard_list.def"
#undef LIFELINE_GUARD
};

constexpr internal::IdList kGuards{kIds, kGuardCount, "guard", "guards", "LIFELINE_UNGUARD"};

// ---- the shared counter file (layout in guards.h) --------------------------------------------------

constexpr char kMagic[8] = {'L', 'L', 'G', 'U', 'A', 'R', 'D', '1'};
constexpr size_t kIdBytes = 56;
struct FileEntry {
  char id[kIdBytes];
  uint64_t count;
};
struct FileLayout {
  char magic[8];
  uint64_t inputs;
  uint64_t n;
  FileEntry entry[kGuardCount];
};
static_assert(sizeof(FileEntry) == 64 && sizeof(FileLayout) == 24 + 64 * kGuardCount, "the documented layout");

[[noreturn]] void CounterFileError(const char* path, const char* what) {
  std::fprintf(stderr, "lifeline: LIFELINE_GUARD_COUNTS=%s: %s (%s)\n", path, what, std::strerror(errno));
  std::fflush(stderr);
  std::_Exit(2);
}

// The mapped file, created and laid out by the first process that opens it (under an exclusive lock, so
// fork-mode children starting at once agree); null without LIFELINE_GUARD_COUNTS.
FileLayout* CounterFile() {
  static FileLayout* file = []() -> FileLayout* {
    const char* path = std::getenv("LIFELINE_GUARD_COUNTS");
    if (path == nullptr || *path == '\0') return nullptr;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) CounterFileError(path, "cannot open the guard counter file");
    if (flock(fd, LOCK_EX) != 0) CounterFileError(path, "cannot lock the guard counter file");
    struct stat st {};
    if (fstat(fd, &st) != 0) CounterFileError(path, "cannot stat the guard counter file");
    if (st.st_size == 0) {
      FileLayout fresh{};
      std::memcpy(fresh.magic, kMagic, sizeof kMagic);
      fresh.n = kGuardCount;
      for (int i = 0; i < kGuardCount; ++i) std::memcpy(fresh.entry[i].id, kIds[i].data(), kIds[i].size());
      if (pwrite(fd, &fresh, sizeof fresh, 0) != static_cast<ssize_t>(sizeof fresh)) {
        CounterFileError(path, "cannot write the guard counter file");
      }
    } else {
      FileLayout head{};
      if (st.st_size != static_cast<off_t>(sizeof(FileLayout)) ||
          pread(fd, &head, sizeof head, 0) != static_cast<ssize_t>(sizeof head) ||
          std::memcmp(head.magic, kMagic, sizeof kMagic) != 0 || head.n != kGuardCount) {
        errno = EINVAL;
        CounterFileError(path, "exists but is not this build's guard counter file (remove it)");
      }
      for (int i = 0; i < kGuardCount; ++i) {
        if (std::strncmp(head.entry[i].id, kIds[i].data(), kIdBytes) != 0) {
          errno = EINVAL;
          CounterFileError(path, "lists other guards than this build's (remove it)");
        }
      }
    }
    void* map = mmap(nullptr, sizeof(FileLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) CounterFileError(path, "cannot map the guard counter file");
    flock(fd, LOCK_UN);
    close(fd);
    return static_cast<FileLayout*>(map);
  }();
  return file;
}

GuardCounts g_counts;
GuardSet g_fired_this_input;

}  // namespace

std::string_view GuardId(Guard guard) { return kIds[static_cast<int>(guard)]; }

std::optional<Guard> GuardFromId(std::string_view id) {
  std::optional<int> i = kGuards.Find(id);
  return i ? std::optional<Guard>(static_cast<Guard>(*i)) : std::nullopt;
}

std::string KnownGuardIds() { return kGuards.Joined(); }

bool ParseGuardList(std::string_view text, GuardSet* out, std::string* error) {
  uint64_t bits = 0;
  if (!kGuards.Parse(text, &bits, error)) return false;
  *out = GuardSet(bits);
  return true;
}

const GuardSet& UnguardedSet() {
  static const GuardSet set(kGuards.FromEnvironmentOrExit());
  return set;
}

void BeginGuardedInput() {
  (void)UnguardedSet();
  g_fired_this_input = GuardSet();
  g_counts.inputs += 1;
  if (FileLayout* f = CounterFile()) __atomic_fetch_add(&f->inputs, 1, __ATOMIC_RELAXED);
}

bool GuardHolds(Guard g, const std::function<std::string()>& why) {
  if (!GuardOn(g)) return false;
  static const bool trace = std::getenv("LIFELINE_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "lifeline: guard %s: %s\n", std::string(GuardId(g)).c_str(), why().c_str());
  if (!g_fired_this_input.Has(g)) {
    g_fired_this_input.Add(g);
    g_counts.fired[static_cast<int>(g)] += 1;
    if (FileLayout* f = CounterFile()) __atomic_fetch_add(&f->entry[static_cast<int>(g)].count, 1, __ATOMIC_RELAXED);
  }
  return true;
}

const GuardCounts& ProcessGuardCounts() { return g_counts; }

}  // namespace lifeline
