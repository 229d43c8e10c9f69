# The lane: which sanitizers, which fuzzing engine, whether valgrind client requests are compiled in.
# Presets (CMakePresets.json) set the cache variables below; this file turns them into usage
# requirements of the interface target `lifeline_lane`, which every project target links. Nothing here
# touches the global CMAKE_<LANG>_FLAGS.
#
#   LIFELINE_LANE      name of the lane (asan, tsan, lsan, valgrind, fuzz, coverage); selects test environments
#   LIFELINE_SANITIZE  list of: address undefined thread leak
#   LIFELINE_ENGINE    replay (harness/replay_main.cc) | libfuzzer (-fsanitize=fuzzer, clang only)
#                      | external (OSS-Fuzz/ClusterFuzzLite/AFL++ build contract, .clusterfuzzlite/build.sh:
#                        compiler, instrumentation and sanitizer flags come from CC/CXX/CFLAGS/CXXFLAGS, the
#                        engine from LIFELINE_FUZZING_ENGINE; only the fuzz targets are meant to be built)
#   LIFELINE_FUZZING_ENGINE  external only: what fuzz targets link, as a command line ($LIB_FUZZING_ENGINE:
#                      -fsanitize=fuzzer, or a path such as /usr/lib/afl/libAFLDriver.a)
#   LIFELINE_VALGRIND  ON: client requests compiled in, tests run under memcheck
#   LIFELINE_COVERAGE  ON: clang source-based coverage (-fprofile-instr-generate -fcoverage-mapping) in every
#                      object the lane compiles, upstream ggml included; the coverage lane builds the fuzz
#                      targets only (with the replay driver), for `lifeline coverage`
#   LIFELINE_SANCOV_FILTER  ON (default): with libFuzzer and UBSan (the fuzz lane), clang loads a pass plugin that
#                      keeps comparison tracing off UBSan's checks (cmake/sancov-filter/); OFF: without it

set(LIFELINE_LANE "" CACHE STRING "lane name: asan, tsan, lsan, valgrind, fuzz, coverage")
set(LIFELINE_SANITIZE "" CACHE STRING "sanitizers: any of address undefined thread leak")
set(LIFELINE_ENGINE "replay" CACHE STRING "fuzzing engine linked into targets: replay, libfuzzer or external")
set(LIFELINE_FUZZING_ENGINE "" CACHE STRING "external engine: link command line of fuzz targets ($LIB_FUZZING_ENGINE)")
option(LIFELINE_VALGRIND "compile valgrind client requests in and run tests under memcheck" OFF)
option(LIFELINE_COVERAGE "clang source-based coverage instrumentation (the coverage lane)" OFF)

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
if(LIFELINE_COVERAGE AND (LIFELINE_SANITIZE OR LIFELINE_VALGRIND OR NOT LIFELINE_ENGINE STREQUAL "replay"))
  message(FATAL_ERROR "LIFELINE_COVERAGE: the coverage lane replays inputs without sanitizers or valgrind "
                      "(LIFELINE_ENGINE=replay, LIFELINE_SANITIZE empty, LIFELINE_VALGRIND off)")
endif()
if(NOT LIFELINE_ENGINE MATCHES "^(replay|libfuzzer|external)$")
  message(FATAL_ERROR "LIFELINE_ENGINE: '${LIFELINE_ENGINE}' is not one of replay, libfuzzer, external")
endif()
# The external engine: what the fuzz targets link, split like a shell command line. LIFELINE_LIBFUZZER=1
# (libFuzzer flags are valid in argv) only when that engine is libFuzzer.
set(LIFELINE_FUZZING_ENGINE_ARGS "")
set(LIFELINE_ENGINE_IS_LIBFUZZER OFF)
if(LIFELINE_ENGINE STREQUAL "external")
  if(LIFELINE_FUZZING_ENGINE STREQUAL "")
    message(FATAL_ERROR "LIFELINE_ENGINE=external needs LIFELINE_FUZZING_ENGINE, the engine the fuzz targets "
                        "link (OSS-Fuzz's $LIB_FUZZING_ENGINE), e.g. -DLIFELINE_FUZZING_ENGINE=-fsanitize=fuzzer "
                        "or -DLIFELINE_FUZZING_ENGINE=/usr/lib/afl/libAFLDriver.a; .clusterfuzzlite/build.sh sets it")
  endif()
  if(LIFELINE_SANITIZE OR LIFELINE_VALGRIND)
    message(FATAL_ERROR "LIFELINE_ENGINE=external: sanitizers come from CFLAGS/CXXFLAGS; "
                        "leave LIFELINE_SANITIZE empty and LIFELINE_VALGRIND off")
  endif()
  separate_arguments(LIFELINE_FUZZING_ENGINE_ARGS UNIX_COMMAND "${LIFELINE_FUZZING_ENGINE}")
  foreach(arg IN LISTS LIFELINE_FUZZING_ENGINE_ARGS)
    if(arg MATCHES "^-fsanitize=(.*,)?fuzzer(,.*)?$")
      set(LIFELINE_ENGINE_IS_LIBFUZZER ON)
    endif()
  endforeach()
elseif(LIFELINE_ENGINE STREQUAL "libfuzzer")
  set(LIFELINE_ENGINE_IS_LIBFUZZER ON)
endif()
if(LIFELINE_ENGINE STREQUAL "libfuzzer" AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LIFELINE_ENGINE=libfuzzer needs clang (found ${CMAKE_CXX_COMPILER_ID})")
endif()
if((LIFELINE_SANITIZE OR LIFELINE_COVERAGE) AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "the sanitizer lanes are built with clang (found ${CMAKE_CXX_COMPILER_ID})")
endif()

# ---- the compiler cache -------------------------------------------------------------------------------
# ccache, in build/ccache (every lane's, and only this checkout's: `rm -rf build` empties it). Lanes whose flags
# are the same share objects: the fuzz lane takes the asan lane's (see the coverage instrumentation below), which
# is most of its build. The
# build folder is not part of the key (NOHASHDIR: sources and include paths are absolute; only the debug info's
# compilation folder then names the lane that compiled the object). The compiler's own -MD output lists the
# headers (DEPEND mode: no second preprocessor run). Not for the external engine, whose compiler is the build
# contract's; -DLIFELINE_CCACHE=OFF builds without it.
option(LIFELINE_CCACHE "compile through ccache (build/ccache) where it is installed" ON)
if(LIFELINE_CCACHE AND NOT LIFELINE_ENGINE STREQUAL "external")
  find_program(LIFELINE_CCACHE_EXE ccache)
  if(LIFELINE_CCACHE_EXE)
    # CCACHE_STATSLOG: each compilation's outcome, per lane (`lifeline test` counts a lane's hits there: two lanes
    # may build at once, so the cache's own counters would mix them).
    set(_launcher env CCACHE_DIR=${PROJECT_SOURCE_DIR}/build/ccache CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1
        CCACHE_MAXSIZE=8G CCACHE_STATSLOG=${CMAKE_BINARY_DIR}/ccache-stats.log ${LIFELINE_CCACHE_EXE})
    set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
  else()
    message(STATUS "lifeline: ccache not found, every lane compiles everything (scripts/install-deps.sh installs it)")
  endif()
endif()

# ---- the linker: LLVM's lld where it is installed (scripts/install-deps.sh: lld-14), for every executable the lanes
# link (tests, targets, exports, benchmarks; ggml's too). GNU ld took 3 to 4 times as long on the same links
# (asan lane, 2026-11-27: alloc_test 0.69 s against 0.19, ggml_vulkan_graph_topology 2.11 s against 0.53), and
# each lane links about 20 to 50 executables. Not for the external engine, whose link is the build contract's;
# -DLIFELINE_LLD=OFF links with the compiler's default.
option(LIFELINE_LLD "link with lld (ld.lld-14) where it is installed" ON)
if(LIFELINE_LLD AND NOT LIFELINE_ENGINE STREQUAL "external")
  find_program(LIFELINE_LLD_EXE NAMES ld.lld-14 ld.lld)
  if(LIFELINE_LLD_EXE)
    add_link_options(--ld-path=${LIFELINE_LLD_EXE})
  else()
    message(STATUS "lifeline: lld not found, linking with the compiler's default (scripts/install-deps.sh installs lld-14)")
  endif()
endif()

add_library(lifeline_lane INTERFACE)
# Checks stay on in every lane: -UNDEBUG keeps assert() alive in code we build, and the project's own
# checks (LIFELINE_CHECK) never depend on NDEBUG anyway. The external engine takes optimization and debug
# info from CFLAGS/CXXFLAGS as the build contract says (OSS-Fuzz: -O1 -fno-omit-frame-pointer -gline-tables-only).
if(LIFELINE_ENGINE STREQUAL "external")
  target_compile_options(lifeline_lane INTERFACE -UNDEBUG)
else()
  target_compile_options(lifeline_lane INTERFACE -O1 -fno-omit-frame-pointer -UNDEBUG)
endif()
# Debug info: line tables by default (-gline-tables-only, as OSS-Fuzz compiles), with the functions' linkage names
# (-fdebug-info-for-profiling), without which clang names an inlined frame by its bare name: a reproducer's
# frame lifeline::runtime::PassDescriptor::New came out as "New" (F60, 2026-11-28). Every report the lanes read
# names functions, files and lines, inlined frames included (ASan, TSan, LSan and UBSan through llvm-symbolizer,
# valgrind through its own reader), and that is what these hold. Full debug info (types and variables, for a
# debugger) took 15% more compile time on seven heavy files (asan lane, 2026-11-28: 92.8 CPU-s against 79.3;
# ggml-cpu/ops.cpp 29.8 against 23.8, harness/programs/graph/format.cc 11.4 against 6.9) and bigger objects to
# link; -DLIFELINE_DEBUG_INFO=full asks for it. Added to lifeline_lane after every other flag (below): clang takes
# the kind of debug info from the last -g option, and -gdwarf-4 alone would mean full debug info.
set(LIFELINE_DEBUG_INFO "lines" CACHE STRING "debug info in the lanes: lines (-gline-tables-only) or full (-g)")
set_property(CACHE LIFELINE_DEBUG_INFO PROPERTY STRINGS lines full)
if(LIFELINE_DEBUG_INFO STREQUAL "lines")
  set(LIFELINE_DEBUG_FLAG -gline-tables-only -fdebug-info-for-profiling)
elseif(LIFELINE_DEBUG_INFO STREQUAL "full")
  set(LIFELINE_DEBUG_FLAG -g)
else()
  message(FATAL_ERROR
          "LIFELINE_DEBUG_INFO='${LIFELINE_DEBUG_INFO}' is neither lines (line tables, the default) nor full (-g)")
endif()
target_compile_features(lifeline_lane INTERFACE cxx_std_17)

if(LIFELINE_SANITIZE STREQUAL "leak")
  # Standalone LeakSanitizer instruments nothing: -fsanitize=leak links its runtime, which takes over malloc, and
  # at compile time only makes __has_feature(leak_sanitizer) true (python_runtime.cc asks; it gets LIFELINE_LSAN
  # instead, layers/CMakeLists.txt). Compiled without it and with the valgrind lane's DWARF 4 (which LSan's
  # symbolizer reads as well), the lsan lane's compile commands are the valgrind lane's, which then takes its
  # objects from the compiler cache rather than compiling the same code again (LIFELINE_VALGRIND, below, is
  # defined only in the files that read it).
  target_link_options(lifeline_lane INTERFACE -fsanitize=leak)
  target_compile_options(lifeline_lane INTERFACE -gdwarf-4)
elseif(LIFELINE_SANITIZE)
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
# libFuzzer's coverage instrumentation: in the fuzz lane, and in the asan lane too, which compiles every object as
# the fuzz lane does (the same clang and flags; only what a fuzz target links differs: libFuzzer there, the
# replay driver here). The fuzz lane then takes the asan lane's objects from the compiler cache (above) instead
# of compiling them again. The asan lane's binaries never read the counters: the sanitizer runtime's own
# no-op callbacks take the trace calls.
set(LIFELINE_SANCOV OFF)
if(LIFELINE_ENGINE STREQUAL "libfuzzer" OR
   (LIFELINE_LANE STREQUAL "asan" AND LIFELINE_ENGINE STREQUAL "replay" AND "address" IN_LIST LIFELINE_SANITIZE))
  set(LIFELINE_SANCOV ON)
endif()
if(LIFELINE_SANCOV)
  # Coverage instrumentation everywhere; the engine itself is linked into fuzz targets only.
  target_compile_options(lifeline_lane INTERFACE -fsanitize=fuzzer-no-link)
endif()
# The fuzz lane (libFuzzer's comparison tracing over UBSan's checks): a clang pass plugin keeps the trace calls
# off the sanitizer's own comparisons, which cost a third of the lane's time and trace nothing of the program;
# every check stays (cmake/sancov-filter/hide_sanitizer_compares.cc). Built once per machine by
# scripts/build-sancov-filter.sh; -DLIFELINE_SANCOV_FILTER=OFF builds the lane without it.
option(LIFELINE_SANCOV_FILTER "fuzz and asan lanes: keep trace-cmp off UBSan's checks (a clang pass plugin)" ON)
set(LIFELINE_SANCOV_FILTER_PLUGIN "")
if(LIFELINE_SANCOV AND "undefined" IN_LIST LIFELINE_SANITIZE AND LIFELINE_SANCOV_FILTER)
  if(NOT CMAKE_C_COMPILER_VERSION VERSION_EQUAL CMAKE_CXX_COMPILER_VERSION)
    message(FATAL_ERROR "LIFELINE_SANCOV_FILTER: the C and C++ compilers must be the same clang (C "
                        "${CMAKE_C_COMPILER_VERSION}, C++ ${CMAKE_CXX_COMPILER_VERSION}): one plugin is loaded by both")
  endif()
  execute_process(COMMAND ${PROJECT_SOURCE_DIR}/scripts/build-sancov-filter.sh ${CMAKE_CXX_COMPILER}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _plugin ERROR_VARIABLE _err OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "LIFELINE_SANCOV_FILTER: scripts/build-sancov-filter.sh failed:\n${_err}\n"
                        "(-DLIFELINE_SANCOV_FILTER=OFF builds the lane without the plugin, with trace calls on every "
                        "UBSan check)")
  endif()
  set(LIFELINE_SANCOV_FILTER_PLUGIN ${_plugin})
  # An edited plugin source reconfigures the lane: the script then builds it under a new path, which changes the
  # flags and recompiles what the old plugin compiled.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/cmake/sancov-filter/hide_sanitizer_compares.cc
               ${PROJECT_SOURCE_DIR}/cmake/sancov-filter/CMakeLists.txt)
  target_compile_options(lifeline_lane INTERFACE -fpass-plugin=${LIFELINE_SANCOV_FILTER_PLUGIN})
endif()
if(LIFELINE_COVERAGE)
  # Source-based coverage: each process writes LLVM_PROFILE_FILE when it exits normally (the replay driver
  # returns from main); `lifeline coverage` merges the profiles with llvm-profdata and reports with llvm-cov.
  target_compile_options(lifeline_lane INTERFACE -fprofile-instr-generate -fcoverage-mapping)
  target_link_options(lifeline_lane INTERFACE -fprofile-instr-generate)
endif()
if(LIFELINE_VALGRIND)
  # valgrind 3.19's debuginfo reader gives up on clang-14's DWARF 5 (forms strx1/addrx); DWARF 4 it reads.
  # LIFELINE_VALGRIND=1 (the client requests compiled in) is defined only in the files that read it:
  # core/CMakeLists.txt and tests/CMakeLists.txt.
  target_compile_options(lifeline_lane INTERFACE -gdwarf-4)
endif()
# The kind of debug info last (LIFELINE_DEBUG_INFO, above), after the -gdwarf-4 of the lsan and valgrind lanes.
if(NOT LIFELINE_ENGINE STREQUAL "external")
  target_compile_options(lifeline_lane INTERFACE ${LIFELINE_DEBUG_FLAG})
endif()

# ---- the embedded CPython of layers/interop ------------------------------------------------------
# (The external engine decides LIFELINE_PYTHON and LIFELINE_VULKAN from what the build environment has:
# see the end of this file.)
# The DLPack layer, its tests and its fuzz target are built where a tool sees into what they do:
# asan and fuzz (ASan+UBSan), lsan (leaks and the ledger). Not tsan: CPython and NumPy are not
# TSan-instrumented, and the capsule paths run on one thread under the GIL. Not valgrind: the programs
# are all Python calls, and memcheck over the interpreter start-up alone costs seconds per run.
set(LIFELINE_PYTHON_LANES asan lsan fuzz coverage)
if(LIFELINE_LANE IN_LIST LIFELINE_PYTHON_LANES OR LIFELINE_ENGINE STREQUAL "external")
  set(LIFELINE_PYTHON ON)
else()
  set(LIFELINE_PYTHON OFF)
endif()
# PyTorch (python3-torch), the third DLPack party of torch_capsule_lifecycle, in the same lanes. It is a
# prebuilt library the target loads at run time, so only its presence is checked here (found on the interpreter's
# path, not imported: `import torch` took 1.9 s of a 6.4 s configure, and a configure runs per lane and in the
# CLI tests); without it the target's tests are registered as skipped with this reason
# (LIFELINE_TORCH_SKIP_REASON). An installed torch that fails to import fails those tests instead.
# -DLIFELINE_WITHOUT_TORCH=ON configures as a machine without it (tests/cli/test_configure.py does).
option(LIFELINE_WITHOUT_TORCH "configure as if python3-torch were not installed" OFF)
set(LIFELINE_TORCH OFF)
set(LIFELINE_TORCH_SKIP_REASON "")
if(LIFELINE_PYTHON)
  set(_rc 1)
  if(NOT LIFELINE_WITHOUT_TORCH)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
                    "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(_rc EQUAL 0)
    set(LIFELINE_TORCH ON)
  else()
    set(LIFELINE_TORCH_SKIP_REASON
        "${Python3_EXECUTABLE} cannot import torch: python3-torch is not installed (scripts/install-deps.sh installs it)")
  endif()
endif()

# ---- the Vulkan runtime of layers/runtime -----------------------------------------------------------
# Built where its oracles run: asan and fuzz (ASan+UBSan; the encoder bugs), tsan (multi-threaded
# encoding), lsan (the never-released descriptor). Not valgrind: lavapipe JIT-compiles every pipeline
# through LLVM, which memcheck runs at a crawl, and the lane's tools add nothing the others lack here.
set(LIFELINE_VULKAN_LANES asan tsan lsan fuzz coverage)
if(LIFELINE_LANE IN_LIST LIFELINE_VULKAN_LANES OR LIFELINE_ENGINE STREQUAL "external")
  set(LIFELINE_VULKAN ON)
else()
  set(LIFELINE_VULKAN OFF)
endif()

# ---- how tests run in this lane ------------------------------------------------------------------
# The symbolizer of the lane's clang where Debian has it (llvm-<major>), else clang 14's.
string(REGEX MATCH "^[0-9]+" _clang_major "${CMAKE_CXX_COMPILER_VERSION}")
find_program(LIFELINE_SYMBOLIZER NAMES llvm-symbolizer-${_clang_major} llvm-symbolizer-14 llvm-symbolizer)
set(_sym "")
# Not in the external engine: the binaries run on another machine (OSS-Fuzz's runner brings its own
# llvm-symbolizer and sets ASAN_OPTIONS, which override these defaults anyway).
if(LIFELINE_SYMBOLIZER AND NOT LIFELINE_ENGINE STREQUAL "external")
  set(_sym ":external_symbolizer_path=${LIFELINE_SYMBOLIZER}")
endif()
# Compiled into every executable by core/sanitizer_defaults.cc. Findings are fatal
# (halt/abort_on_error); dedup_token_length=3 matches the crash-state convention.
set(LIFELINE_ASAN_OPTIONS "detect_stack_use_after_return=1:halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:dedup_token_length=3:print_summary=1${_sym}")
set(LIFELINE_UBSAN_OPTIONS "halt_on_error=1:abort_on_error=1:print_stacktrace=1:dedup_token_length=3${_sym}")
# atexit_sleep_ms=0: TSan's default keeps every process alive 1 s after main returns, for threads still running
# then to race; the project joins every thread it starts (no detach), so the second only delayed each of the
# lane's processes (its ctest ran 39% busy). The reintroduced tsan reproducers show races are still reported.
set(LIFELINE_TSAN_OPTIONS "halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:dedup_token_length=3:atexit_sleep_ms=0${_sym}")
set(LIFELINE_LSAN_OPTIONS "abort_on_error=1:dedup_token_length=3${_sym}")
# TSan with libFuzzer: the tsan lane, or an external engine whose CXXFLAGS ask for TSan (bench/throughput.py's
# tsan variant goes through .clusterfuzzlite/build.sh).
set(_tsan_libfuzzer OFF)
if("thread" IN_LIST LIFELINE_SANITIZE AND LIFELINE_ENGINE STREQUAL "libfuzzer")
  set(_tsan_libfuzzer ON)
elseif(LIFELINE_ENGINE_IS_LIBFUZZER AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=([a-z,]*,)?thread")
  set(_tsan_libfuzzer ON)
endif()
if(_tsan_libfuzzer)
  # The tsan lane links libFuzzer, whose crash handler runs inside a signal handler and allocates (it prints a
  # stack trace). Under TSan that handler hangs or dies on its own report: abort_on_error=1 turns a race report
  # into SIGABRT while TSan still holds its report lock, and the handler then waits on that lock forever (seen:
  # a worker's race in interop_string_handoff, the job never ended); and a LIFELINE_CHECK's abort() made the
  # handler's malloc a "signal-unsafe call inside of a signal" report instead of the check's own crash. So TSan
  # ends the process itself (exit 66 after libFuzzer's death callback wrote the input), and does not report
  # calls in signal handlers: the only handlers in these binaries are libFuzzer's (no project code installs one).
  # The TSan runtime also parses __ubsan_default_options (it carries UBSan's runtime), and abort_on_error is a
  # common flag: UBSan's string must say the same or it wins.
  string(REPLACE "abort_on_error=1" "abort_on_error=0:report_signal_unsafe=0" LIFELINE_TSAN_OPTIONS
         "${LIFELINE_TSAN_OPTIONS}")
  string(REPLACE "abort_on_error=1" "abort_on_error=0" LIFELINE_UBSAN_OPTIONS "${LIFELINE_UBSAN_OPTIONS}")
endif()
if(LIFELINE_ENGINE STREQUAL "external")
  # OSS-Fuzz's UBSan build adds unsigned-integer-overflow as a recoverable check (hashes and FuzzedDataProvider
  # wrap on purpose) and ClusterFuzz runs with silence_unsigned_overflow=1; same default here, so a local
  # replay of an undefined build agrees with the infrastructure.
  string(APPEND LIFELINE_UBSAN_OPTIONS ":silence_unsigned_overflow=1")
endif()

# The command tests run under in this lane (empty, or valgrind memcheck).
set(LIFELINE_TEST_LAUNCHER "")
if(LIFELINE_VALGRIND)
  find_program(LIFELINE_VALGRIND_EXE valgrind REQUIRED)
  set(LIFELINE_TEST_LAUNCHER ${LIFELINE_VALGRIND_EXE} --tool=memcheck --error-exitcode=99
      --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite
      --num-callers=40 --quiet)
endif()

# ---- the external engine: build what the environment can, skip the rest with a reason --------------
# An OSS-Fuzz/ClusterFuzzLite image may lack NumPy, dlpack.h or the Vulkan stack; the targets needing them
# are then skipped (named in LIFELINE_SKIPPED_TARGETS, printed by .clusterfuzzlite/build.sh) instead of
# failing the whole build. The preset lanes keep requiring everything.
set(LIFELINE_SKIPPED_TARGETS "")
if(LIFELINE_ENGINE STREQUAL "external")
  set(_why "")
  if(NOT Python3_Development.Embed_FOUND)
    set(_why "no embeddable libpython (Debian/Ubuntu: python3-dev) for ${Python3_EXECUTABLE}")
  else()
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy" RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT _rc EQUAL 0)
      set(_why "${Python3_EXECUTABLE} cannot import numpy (python3-numpy)")
    else()
      include(CheckIncludeFileCXX)
      check_include_file_cxx(dlpack/dlpack.h LIFELINE_HAVE_DLPACK_H)
      if(NOT LIFELINE_HAVE_DLPACK_H)
        set(_why "dlpack/dlpack.h not found (libdlpack-dev)")
      endif()
    endif()
  endif()
  if(_why)
    set(LIFELINE_PYTHON OFF)
    list(APPEND LIFELINE_SKIPPED_TARGETS "interop_capsule_lifecycle: ${_why}")
  endif()

  set(_why "")
  find_package(Vulkan QUIET)
  find_program(LIFELINE_GLSLC glslc)
  find_file(LIFELINE_VK_VALIDATION_MANIFEST VkLayer_khronos_validation.json
            PATHS /usr/share/vulkan/explicit_layer.d /etc/vulkan/explicit_layer.d NO_DEFAULT_PATH)
  file(GLOB _lvp_icds /usr/share/vulkan/icd.d/lvp_icd*.json)
  if(NOT Vulkan_FOUND)
    set(_why "no Vulkan loader and headers (libvulkan-dev)")
  elseif(NOT LIFELINE_GLSLC)
    set(_why "no glslc (glslc)")
  elseif(NOT LIFELINE_VK_VALIDATION_MANIFEST)
    set(_why "no VK_LAYER_KHRONOS_validation (vulkan-validationlayers)")
  elseif(NOT _lvp_icds)
    set(_why "no lavapipe ICD in /usr/share/vulkan/icd.d (mesa-vulkan-drivers)")
  endif()
  if(_why)
    set(LIFELINE_VULKAN OFF)
    list(APPEND LIFELINE_SKIPPED_TARGETS "runtime_encoder_lifetime: ${_why}" "runtime_buffer_reclaim: ${_why}")
  endif()
  foreach(s IN LISTS LIFELINE_SKIPPED_TARGETS)
    message(STATUS "lifeline: skipping ${s}")
  endforeach()
endif()
