# Upstream whisper.cpp, for whisper_string_handoff: the string-handoff programs on whisper.cpp's own
# whisper.wasm binding (examples/whisper.wasm/emscripten.cpp, unmodified, against the embind stand-in in
# harness/programs/handoff/upstream/embind/) and on whisper.cpp with its own ggml, CPU backend only.
#
#   LIFELINE_WHISPER_SOURCE_DIR  a whisper.cpp checkout. Empty: build/upstream/whisper.cpp, which
#                                scripts/fetch-whisper.sh fetched (whisper.cpp 1.9.1 from nodejs-whisper@0.3.1).
#
# whisper.cpp and its ggml cannot be added to this project beside the other ggml (both define the targets
# ggml, ggml-base and ggml-cpu), so they are a project of their own per lane (ExternalProject, in
# build/<lane>/whisper/build), compiled with the lane's compile options (sanitizers, libFuzzer coverage, -O1, line
# tables, -UNDEBUG: what lifeline_lane gives the project's own code) through the lane's compiler cache. Lanes:
# asan, fuzz, tsan, valgrind (the reproducer's two-way tests and the campaigns) and coverage.
# The two tiny models the binding loads are generated at build time (scripts/make-whisper-model.py).
#
# Sets LIFELINE_WHISPER (ON when built), LIFELINE_WHISPER_SKIP_REASON (why not, in a lane that wants it),
# LIFELINE_WHISPER_DIR, LIFELINE_WHISPER_MODEL_DIR, and the interface target lifeline_whisper.

set(LIFELINE_WHISPER_LANES asan fuzz tsan valgrind coverage)
set(LIFELINE_WHISPER_SOURCE_DIR "" CACHE PATH
    "whisper.cpp source tree to fuzz (default: build/upstream/whisper.cpp from scripts/fetch-whisper.sh)")
set(LIFELINE_WHISPER OFF)
set(LIFELINE_WHISPER_SKIP_REASON "")
set(LIFELINE_WHISPER_DIR "")

if(LIFELINE_LANE IN_LIST LIFELINE_WHISPER_LANES AND NOT LIFELINE_ENGINE STREQUAL "external")
  if(LIFELINE_WHISPER_SOURCE_DIR)
    # Asked for by name: a wrong path is an error, not a skip.
    foreach(f src/whisper.cpp include/whisper.h examples/whisper.wasm/emscripten.cpp ggml/CMakeLists.txt)
      if(NOT EXISTS "${LIFELINE_WHISPER_SOURCE_DIR}/${f}")
        message(FATAL_ERROR "LIFELINE_WHISPER_SOURCE_DIR='${LIFELINE_WHISPER_SOURCE_DIR}' is not a whisper.cpp "
                            "checkout: it has no ${f}")
      endif()
    endforeach()
    set(LIFELINE_WHISPER_DIR "${LIFELINE_WHISPER_SOURCE_DIR}")
  elseif(EXISTS "${PROJECT_SOURCE_DIR}/build/upstream/whisper-fetched.txt" AND
         EXISTS "${PROJECT_SOURCE_DIR}/build/upstream/whisper.cpp/src/whisper.cpp")
    set(LIFELINE_WHISPER_DIR "${PROJECT_SOURCE_DIR}/build/upstream/whisper.cpp")
  else()
    set(LIFELINE_WHISPER_SKIP_REASON
        "upstream whisper.cpp is not fetched: run scripts/fetch-whisper.sh (./lifeline test does) or configure with -DLIFELINE_WHISPER_SOURCE_DIR=<whisper.cpp checkout>")
  endif()
endif()

if(LIFELINE_WHISPER_DIR)
  include(ExternalProject)
  get_target_property(_lane_options lifeline_lane INTERFACE_COMPILE_OPTIONS)
  if(_lane_options MATCHES "\\$<")
    message(FATAL_ERROR "lifeline_lane's compile options hold a generator expression, which the whisper.cpp build "
                        "cannot take as flags: ${_lane_options}")
  endif()
  # whisper.cpp itself keeps the lane's -O1 in every lane. Tried and undone: -O0 in tsan and valgrind (fresh clones,
  # 2026-11-27) left the tsan lane's build at 364 s against 349, and made valgrind's replay of the whisper seeds take
  # 147 s against 26.
  list(JOIN _lane_options " " _flags)
  # ggml's objects: -O0 (cmake/whisper-project-include.cmake says why); as for the other ggml
  # (cmake/LifelineGgml.cmake), pointer-overflow recovers there, for the upstream finding suppressed by function in
  # core/suppressions/ubsan-upstream.supp (ggml-graph-nbytes-null-offset). And no -fsanitize=function in ggml's
  # objects: ggml calls every type's kernels (ggml_vec_dot_f16 taking ggml_fp16_t *) through generic function
  # pointer types (ggml_vec_dot_t, taking const void *), which clang reports as a call through a pointer to an
  # incorrect function type on whisper_full's first attention (ops.cpp, flash attention, on by default in
  # whisper_context_default_params). A known upstream pattern (llama.cpp #6202, closed unfixed); in the other
  # ggml the programs reach such calls only from C files, which clang 14 does not check.
  set(_ggml_options -O0)
  if("undefined" IN_LIST LIFELINE_SANITIZE)
    list(APPEND _ggml_options -fsanitize-recover=pointer-overflow -fno-sanitize=function)
  endif()
  list(JOIN _ggml_options " " _ggml_options)
  # GGML_SCHED_MAX_SPLIT_INPUTS=1 (ggml-backend.cpp's own #ifndef setting, 30 by default): how many tensors one split
  # of a ggml_backend_sched may copy in from another backend. ggml_backend_sched_new sizes its buffers for that many
  # per node of its graph size: whisper_sched_graph_init asks for 4,096 nodes, so each of the four schedulers of a
  # whisper_state mallocs an 82.7 MB context buffer and four 1 MB node-id arrays, which ASan poisons in full when it
  # maps them and again when they are freed (its shadow, 10 MB a buffer; about 90 ms per buffer on the 2-core guest,
  # every state of every input: 58% of the fuzz lane's time, bench/results/profile-whisper_string_handoff.md). With
  # the CPU backend alone (use_gpu off or no GPU backend built) and without parallel copies (whisper passes
  # parallel = false), every source is on its split's backend, so no split has an input and no behaviour depends
  # on it. This is not guarded: in a configuration with a second backend a split would take one input, and
  # ggml_backend_sched_split_graph would start a new split where the shipped build adds up to 30 (its "split has
  # too many inputs" check), so such a lane must drop the setting. 2.75 MB a buffer.
  set(_ggml_definitions GGML_SCHED_MAX_SPLIT_INPUTS=1)
  if("undefined" IN_LIST LIFELINE_SANITIZE AND NOT LIFELINE_UBSAN_OPTIONS MATCHES "ubsan-upstream.supp")
    string(APPEND LIFELINE_UBSAN_OPTIONS ":suppressions=${PROJECT_SOURCE_DIR}/core/suppressions/ubsan-upstream.supp")
  endif()
  # Everything of it under build/<lane>/whisper (its ExternalProject stamps too: removing the folder rebuilds it).
  set(_bin ${CMAKE_BINARY_DIR}/whisper/build)
  set(_libs ${_bin}/src/libwhisper.a ${_bin}/ggml/src/libggml.a ${_bin}/ggml/src/libggml-cpu.a
            ${_bin}/ggml/src/libggml-base.a)
  set(_cache_args "")
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    list(APPEND _cache_args "-DCMAKE_C_COMPILER_LAUNCHER:STRING=${CMAKE_C_COMPILER_LAUNCHER}"
                            "-DCMAKE_CXX_COMPILER_LAUNCHER:STRING=${CMAKE_CXX_COMPILER_LAUNCHER}")
  endif()
  ExternalProject_Add(lifeline_whisper_build
    PREFIX ${CMAKE_BINARY_DIR}/whisper/ep
    SOURCE_DIR ${LIFELINE_WHISPER_DIR}
    BINARY_DIR ${_bin}
    CMAKE_GENERATOR Ninja
    CMAKE_ARGS
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      # A build type with no flags of its own: the lane's flags decide (whisper.cpp would pick Release: -O3 -DNDEBUG).
      -DCMAKE_BUILD_TYPE=Lifeline
      "-DCMAKE_C_FLAGS=${_flags}" "-DCMAKE_CXX_FLAGS=${_flags}"
      -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DGGML_CCACHE=OFF -DGGML_BACKEND_DL=OFF
      -DGGML_LLAMAFILE=OFF -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=OFF -DWHISPER_BUILD_SERVER=OFF
      -DWHISPER_SDL2=OFF -DWHISPER_CURL=OFF
      # ggml's libraries at -O0, whisper.cpp at the lane's -O1 (see the file for the measurements)
      -DCMAKE_PROJECT_INCLUDE=${PROJECT_SOURCE_DIR}/cmake/whisper-project-include.cmake
      "-DLIFELINE_WHISPER_GGML_OPTIONS=${_ggml_options}"
      "-DLIFELINE_WHISPER_GGML_DEFINITIONS=${_ggml_definitions}"
    CMAKE_CACHE_ARGS ${_cache_args}
    BUILD_COMMAND ${CMAKE_COMMAND} --build <BINARY_DIR> --target whisper
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON
    BUILD_BYPRODUCTS ${_libs}
    USES_TERMINAL_BUILD ON
    EXCLUDE_FROM_ALL ON)
  add_library(lifeline_whisper INTERFACE)
  add_dependencies(lifeline_whisper lifeline_whisper_build)
  target_include_directories(lifeline_whisper SYSTEM INTERFACE ${LIFELINE_WHISPER_DIR}/include
                                                               ${LIFELINE_WHISPER_DIR}/ggml/include)
  target_link_libraries(lifeline_whisper INTERFACE ${_libs} Threads::Threads m)

  # The models: generated, never downloaded (none ships with whisper.cpp).
  set(LIFELINE_WHISPER_MODEL_DIR ${CMAKE_BINARY_DIR}/whisper-models)
  set(_models ${LIFELINE_WHISPER_MODEL_DIR}/tiny-multilingual.bin ${LIFELINE_WHISPER_MODEL_DIR}/tiny-en.bin)
  add_custom_command(OUTPUT ${_models}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/make-whisper-model.py
            ${LIFELINE_WHISPER_MODEL_DIR}/tiny-multilingual.bin
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/make-whisper-model.py --english
            ${LIFELINE_WHISPER_MODEL_DIR}/tiny-en.bin
    DEPENDS ${PROJECT_SOURCE_DIR}/scripts/make-whisper-model.py
    COMMENT "whisper.cpp: generating the tiny models (scripts/make-whisper-model.py)")
  add_custom_target(lifeline_whisper_models DEPENDS ${_models})
  add_dependencies(lifeline_whisper lifeline_whisper_models)

  file(STRINGS "${LIFELINE_WHISPER_DIR}/CMakeLists.txt" _wv REGEX "^project\\(\"whisper.cpp\" VERSION ")
  string(REGEX REPLACE ".*VERSION ([0-9.]+).*" "\\1" LIFELINE_WHISPER_VERSION "${_wv}")
  message(STATUS "lifeline: upstream whisper.cpp ${LIFELINE_WHISPER_VERSION} from ${LIFELINE_WHISPER_DIR}")
  set(LIFELINE_WHISPER_WASM_BINDING ${LIFELINE_WHISPER_DIR}/examples/whisper.wasm/emscripten.cpp)
  set(LIFELINE_WHISPER ON)
elseif(LIFELINE_WHISPER_SKIP_REASON)
  message(STATUS "lifeline: whisper tests skipped: ${LIFELINE_WHISPER_SKIP_REASON}")
elseif(LIFELINE_ENGINE STREQUAL "external")
  list(APPEND LIFELINE_SKIPPED_TARGETS
       "whisper_string_handoff: not built for an external engine yet (whisper.cpp is built per lane as a project of its own, with the lane's flags, and its models are generated into the lane's folder) - fuzz it with lifeline fuzz")
endif()
