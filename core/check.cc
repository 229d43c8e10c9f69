#include "core/check.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdlib>
#include <string>
#include <utility>

#if !defined(LIFELINE_VALGRIND)
#define NVALGRIND 1
#endif
#include <valgrind/valgrind.h>

// Present when a sanitizer runtime is linked; prints a symbolized stack in the familiar format.
extern "C" void __sanitizer_print_stack_trace() __attribute__((weak));

namespace lifeline {
namespace {
thread_local OpTraceScope* g_current_trace = nullptr;
thread_local std::string g_upstream_context;
}  // namespace

void SetUpstreamContext(std::string calls) { g_upstream_context = std::move(calls); }

void AddUpstreamCall(const std::string& call) {
  g_upstream_context += (g_upstream_context.empty() ? "" : " / ") + call;
}

void ClearUpstreamContext() { g_upstream_context.clear(); }

void OpTraceScope::set_op(size_t index) {
  op_index_ = index;
  ClearUpstreamContext();
}

OpTraceScope::OpTraceScope(const void* program, size_t op_count, Render render)
    : program_(program), op_count_(op_count), render_(render), outer_(g_current_trace) {
  g_current_trace = this;
}

OpTraceScope::~OpTraceScope() { g_current_trace = outer_; }

void OpTraceScope::Print(std::FILE* out) const {
  std::fprintf(out, "  op: #%zu of %zu\n  trace:\n", op_index_, op_count_);
  render_(program_, op_index_, out);
}

namespace internal {

void PrintStackTrace(std::FILE* out) {
  if (__sanitizer_print_stack_trace != nullptr) {
    std::fflush(out);
    __sanitizer_print_stack_trace();
    return;
  }
#if defined(LIFELINE_VALGRIND)
  if (RUNNING_ON_VALGRIND) {
    // valgrind's own unwinder and symbolizer: names every function, file and line.
    std::fflush(out);
    VALGRIND_PRINTF_BACKTRACE("lifeline check stack\n");
    return;
  }
#endif
  // No sanitizer runtime and no valgrind: glibc's unwinder plus dladdr. Executables are linked with
  // -rdynamic there, so project functions with external linkage have names.
  void* pcs[64];
  int n = backtrace(pcs, 64);
  for (int i = 0; i < n; ++i) {
    Dl_info info{};
    const char* name = "??";
    char* demangled = nullptr;
    if (dladdr(pcs[i], &info) != 0 && info.dli_sname != nullptr) {
      int status = 0;
      demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      name = status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    }
    std::fprintf(out, "    #%d %p in %s (%s)\n", i, pcs[i], name,
                 info.dli_fname != nullptr ? info.dli_fname : "??");
    std::free(demangled);
  }
}

void PrintCurrentTrace(std::FILE* out) {
  if (g_current_trace != nullptr) g_current_trace->Print(out);
}

void CheckFailed(CheckKind kind, const char* file, int line, const char* condition,
                 const std::string& message) {
  const char* what = kind == CheckKind::kInvariant ? "LIFELINE_CHECK" : "LIFELINE_PRECONDITION";
  std::fprintf(stderr, "\n==lifeline== %s failed at %s:%d\n  condition: %s\n  message: %s\n", what, file,
               line, condition, message.c_str());
  if (!g_upstream_context.empty()) std::fprintf(stderr, "  upstream: %s\n", g_upstream_context.c_str());
  PrintCurrentTrace(stderr);
  std::fprintf(stderr, "  stack:\n");
  PrintStackTrace(stderr);
  std::fprintf(stderr, "==lifeline== end of report\n");
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal
}  // namespace lifeline
