# The lane: which sanitizers, which fuzzing engine, whether valgrind client requests are compiled in.
# Presets (CMakePresets.json) set the cache variables below; this file turns them into usage
# requirements of the interface target `lifeline_lane`, which every project target links. Nothing here
# touches the global CMAKE_<LANG>_FLAGS.
#
#   LIFELINE_LANE      name of the lane (asan, tsan, lsan, valgrind, fuzz); selects test environments
#   LIFELINE_SANITIZE  list of: address undefined thread leak
#   LIFELINE_ENGINE    replay (harness/replay_main.cc) | libfuzzer (-fsanitize=fuzzer, clang only)
#   LIFELINE_VALGRIND  ON: client requests compiled in, tests run under memcheck

set(LIFELINE_LANE "" CACHE STRING "lane name: asan, tsan, lsan, valgrind, fuzz")
set(LIFELINE_SANITIZE "" CACHE STRING "sanitizers: any of address undefined thread leak")
set(LIFELINE_ENGINE "replay" CACHE STRING "fuzzing engine linked into targets: replay or libfuzzer")
option(LIFELINE_VALGRIND "compile valgrind client requests in and run tests under memcheck" OFF)

if(NOT LIFELINE_LANE)
  message(FATAL_ERROR "LIFELINE_LANE is not set: configure with a preset, e.g. `cmake --preset asan`")
endif()

set(_known_sanitizers address undefined thread leak)
foreach(s IN LISTS LIFELINE_SANITIZE)
  if(NOT s IN_LIST _known_sanitizers)
    message(FATAL_ERROR "LIFELINE_SANITIZE: unknown sanitizer '${s}' (known: ${_known_sanitizers})")
  endif()
endforeach()
# Combinations that cannot work are refused here rather than failing at link or run time.
if("thread" IN_LIST LIFELINE_SANITIZE AND ("address" IN_LIST LIFELINE_SANITIZE OR "leak" IN_LIST LIFELINE_SANITIZE))
  message(FATAL_ERROR "LIFELINE_SANITIZE: thread cannot be combined with address or leak")
endif()
if(LIFELINE_VALGRIND AND LIFELINE_SANITIZE)
  message(FATAL_ERROR "LIFELINE_VALGRIND: valgrind cannot run sanitizer builds; clear LIFELINE_SANITIZE")
endif()
if(NOT LIFELINE_ENGINE MATCHES "^(replay|libfuzzer)$")
  message(FATAL_ERROR "LIFELINE_ENGINE: '${LIFELINE_ENGINE}' is not one of replay, libfuzzer")
endif()
if(LIFELINE_ENGINE STREQUAL "libfuzzer" AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LIFELINE_ENGINE=libfuzzer needs clang (found ${CMAKE_CXX_COMPILER_ID})")
endif()
if(LIFELINE_SANITIZE AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "the sanitizer lanes are built with clang (found ${CMAKE_CXX_COMPILER_ID})")
endif()

add_library(lifeline_lane INTERFACE)
# Checks stay on in every lane: -UNDEBUG keeps assert() alive in code we build, and the project's own
# checks (LIFELINE_CHECK) never depend on NDEBUG anyway.
target_compile_options(lifeline_lane INTERFACE -O1 -g -fno-omit-frame-pointer -UNDEBUG)
target_compile_features(lifeline_lane INTERFACE cxx_std_17)

if(LIFELINE_SANITIZE)
  list(JOIN LIFELINE_SANITIZE "," _san)
  # -fno-sanitize-recover: the first UBSan finding ends the run like any other report.
  target_compile_options(lifeline_lane INTERFACE -fsanitize=${_san} -fno-sanitize-recover=all)
  target_link_options(lifeline_lane INTERFACE -fsanitize=${_san})
  if("address" IN_LIST LIFELINE_SANITIZE)
    # Stack frames go to a fake stack when detect_stack_use_after_return=1 is set at run time, so a
    # frame that returned stays poisoned (wasm-lang-dangling's inline string, metal-encode-async-block).
    target_compile_options(lifeline_lane INTERFACE -fsanitize-address-use-after-return=runtime
                                                   -fsanitize-address-use-after-scope)
  endif()
else()
  # No sanitizer runtime to symbolize check failures: export symbols so dladdr can name our functions.
  target_link_options(lifeline_lane INTERFACE -rdynamic)
endif()
if(LIFELINE_ENGINE STREQUAL "libfuzzer")
  # Coverage instrumentation everywhere; the engine itself is linked into fuzz targets only.
  target_compile_options(lifeline_lane INTERFACE -fsanitize=fuzzer-no-link)
endif()
if(LIFELINE_VALGRIND)
  # valgrind 3.19's debuginfo reader gives up on clang-14's DWARF 5 (forms strx1/addrx); DWARF 4 it reads.
  target_compile_options(lifeline_lane INTERFACE -gdwarf-4)
  target_compile_definitions(lifeline_lane INTERFACE LIFELINE_VALGRIND=1)
endif()

# ---- the embedded CPython of layers/interop ------------------------------------------------------
# The DLPack layer, its tests and its fuzz target are built where a tool sees into what they do:
# asan and fuzz (ASan+UBSan), lsan (leaks and the ledger). Not tsan: CPython and NumPy are not
# TSan-instrumented, and the capsule paths run on one thread under the GIL. Not valgrind: the programs
# are all Python calls, and memcheck over the interpreter start-up alone costs seconds per run.
set(LIFELINE_PYTHON_LANES asan lsan fuzz)
if(LIFELINE_LANE IN_LIST LIFELINE_PYTHON_LANES)
  set(LIFELINE_PYTHON ON)
else()
  set(LIFELINE_PYTHON OFF)
endif()

# ---- the Vulkan runtime of layers/runtime -----------------------------------------------------------
# Built where its oracles run: asan and fuzz (ASan+UBSan; the encoder bugs), tsan (multi-threaded
# encoding), lsan (the never-released descriptor). Not valgrind: lavapipe JIT-compiles every pipeline
# through LLVM, which memcheck runs at a crawl, and the lane's tools add nothing the others lack here.
set(LIFELINE_VULKAN_LANES asan tsan lsan fuzz)
if(LIFELINE_LANE IN_LIST LIFELINE_VULKAN_LANES)
  set(LIFELINE_VULKAN ON)
else()
  set(LIFELINE_VULKAN OFF)
endif()

# ---- how tests run in this lane ------------------------------------------------------------------
find_program(LIFELINE_SYMBOLIZER NAMES llvm-symbolizer-14 llvm-symbolizer)
set(_sym "")
if(LIFELINE_SYMBOLIZER)
  set(_sym ":external_symbolizer_path=${LIFELINE_SYMBOLIZER}")
endif()
# Compiled into every executable by harness/sanitizer_defaults.cc. Findings are fatal
# (halt/abort_on_error); dedup_token_length=3 matches the crash-state convention.
set(LIFELINE_ASAN_OPTIONS "detect_stack_use_after_return=1:halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:dedup_token_length=3:print_summary=1${_sym}")
set(LIFELINE_UBSAN_OPTIONS "halt_on_error=1:abort_on_error=1:print_stacktrace=1:dedup_token_length=3${_sym}")
set(LIFELINE_TSAN_OPTIONS "halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:dedup_token_length=3${_sym}")
set(LIFELINE_LSAN_OPTIONS "abort_on_error=1:dedup_token_length=3${_sym}")

# The command tests run under in this lane (empty, or valgrind memcheck).
set(LIFELINE_TEST_LAUNCHER "")
if(LIFELINE_VALGRIND)
  find_program(LIFELINE_VALGRIND_EXE valgrind REQUIRED)
  set(LIFELINE_TEST_LAUNCHER ${LIFELINE_VALGRIND_EXE} --tool=memcheck --error-exitcode=99
      --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite
      --num-callers=40 --quiet)
endif()
