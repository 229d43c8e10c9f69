// Sanitizer glue: tells ASan and valgrind memcheck which bytes a component considers dead, so stale
// pointers into memory the component never returns to malloc (arenas, pools, released storage) are still
// reported. Every call is a no-op where its tool is absent.
//
// ASan: ASAN_POISON_MEMORY_REGION / ASAN_UNPOISON_MEMORY_REGION (granularity 8 bytes: a poisoned range is
// rounded inward at its end, see sanitizer/asan_interface.h). valgrind: memcheck client requests, compiled
// in when LIFELINE_VALGRIND is defined (the valgrind lane) and cheap no-ops outside valgrind.
#pragma once

#include <cstddef>

namespace lifeline::san {

// Which tools this binary was built for / is running under.
bool AsanEnabled();
bool ValgrindRequestsEnabled();  // client requests compiled in
bool RunningOnValgrind();        // ... and the process is actually under valgrind

// Marks [p, p+n) dead: any access is an ASan "use-after-poison" / a memcheck "Invalid read/write".
void MarkDead(const void* p, size_t n);
// Marks [p, p+n) alive again. `defined`: memcheck treats the contents as initialised (true) or as
// undefined (false, for fresh allocations whose contents nobody wrote yet).
void MarkAlive(const void* p, size_t n, bool defined);
// True when the byte at `p` is marked dead by ASan (or memcheck reports it unaddressable). Does not
// itself produce a report.
bool IsDead(const void* p);

}  // namespace lifeline::san
