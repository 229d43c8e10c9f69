#include "core/sanitizer.h"

#if !defined(LIFELINE_VALGRIND)
#define NVALGRIND 1  // compiles every client request below to nothing
#endif
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LIFELINE_HAS_ASAN 1
#endif
#endif

#if defined(LIFELINE_HAS_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace lifeline::san {

bool AsanEnabled() {
#if defined(LIFELINE_HAS_ASAN)
  return true;
#else
  return false;
#endif
}

bool ValgrindRequestsEnabled() {
#if defined(LIFELINE_VALGRIND)
  return true;
#else
  return false;
#endif
}

bool RunningOnValgrind() { return RUNNING_ON_VALGRIND != 0; }

void MarkDead(const void* p, size_t n) {
#if defined(LIFELINE_HAS_ASAN)
  ASAN_POISON_MEMORY_REGION(p, n);
#endif
  (void)VALGRIND_MAKE_MEM_NOACCESS(p, n);
  (void)p;
  (void)n;
}

void MarkAlive(const void* p, size_t n, bool defined) {
#if defined(LIFELINE_HAS_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
  if (defined) {
    (void)VALGRIND_MAKE_MEM_DEFINED(p, n);
  } else {
    (void)VALGRIND_MAKE_MEM_UNDEFINED(p, n);
  }
  (void)p;
  (void)n;
}

bool IsDead(const void* p) {
#if defined(LIFELINE_HAS_ASAN)
  if (__asan_address_is_poisoned(p)) return true;
#endif
#if defined(LIFELINE_VALGRIND)
  if (RunningOnValgrind()) {
    // GET_VBITS answers 3 for unaddressable bytes and, unlike CHECK_MEM_IS_ADDRESSABLE, reports nothing.
    unsigned char vbits = 0;
    return VALGRIND_GET_VBITS(p, &vbits, 1) == 3;
  }
#endif
  (void)p;
  return false;
}

}  // namespace lifeline::san
