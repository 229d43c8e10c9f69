# Upstream ggml, the code the `upstream` tests fuzz: ggml-alloc's gallocr driven by the same graph programs
# as layers/alloc, through harness/programs/graph/upstream/ggml_adapter.cc (CPU backend) and
# ggml_vulkan_adapter.cc (ggml-vulkan, and ggml_backend_sched over it and the CPU backend).
#
#   LIFELINE_GGML_SOURCE_DIR  a ggml source tree (the ggml/ folder of a llama.cpp or whisper.cpp checkout,
#                             or ggml itself). Empty: the tree scripts/fetch-ggml.sh fetched into
#                             build/upstream/ (ggml 0.25.1 from node-llama-cpp@3.22.1).
#
# Built static, in the lanes where its tools see into it (asan and fuzz: ASan+UBSan, with libFuzzer coverage
# in the fuzz lane; tsan) and by the external engine (the OSS-Fuzz build contract: its CFLAGS
# reach ggml like every other file), with the lane's flags and asserts on: ggml's checks in ggml-alloc.c
# are plain assert(), which NDEBUG would remove. Without a source tree nothing is built: the upstream tests
# are registered as skipped with the reason (lifeline_add_upstream_skip), never as passed, and the external
# engine lists ggml_graph_topology among its skipped targets.
#
# Sets LIFELINE_GGML (ON when built) and LIFELINE_GGML_SKIP_REASON (why not, in a lane that wants it).

# A test that fails with `why`, in place of an upstream test this lane cannot build from its folder.
function(lifeline_add_upstream_failure name why)
  add_test(NAME ${name} COMMAND ${Python3_EXECUTABLE} -c "import sys; print('FAIL ' + sys.argv[1]); sys.exit(1)"
           "${why}")
  set_tests_properties(${name} PROPERTIES LABELS "repro;upstream")
endfunction()

# A test that reports itself skipped, with the reason, in place of an upstream test that cannot be built.
# The reason is the second argument, else why upstream ggml is not built.
function(lifeline_add_upstream_skip name)
  set(reason "${LIFELINE_GGML_SKIP_REASON}")
  if(ARGC GREATER 1)
    set(reason "${ARGV1}")
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E env
           ${Python3_EXECUTABLE} -c "import sys; print('SKIPPED: ' + sys.argv[1]); sys.exit(77)"
           "${reason}")
  set_tests_properties(${name} PROPERTIES LABELS "upstream" SKIP_RETURN_CODE 77)
endfunction()

set(LIFELINE_GGML_LANES asan fuzz tsan coverage)
set(LIFELINE_GGML_SOURCE_DIR "" CACHE PATH
    "ggml source tree to fuzz (default: build/upstream/llama.cpp/ggml from scripts/fetch-ggml.sh)")
set(LIFELINE_GGML OFF)
set(LIFELINE_GGML_SKIP_REASON "")
set(LIFELINE_GGML_DIR "")

if(LIFELINE_LANE IN_LIST LIFELINE_GGML_LANES OR LIFELINE_ENGINE STREQUAL "external")
  if(LIFELINE_GGML_SOURCE_DIR)
    # Asked for by name: a wrong path is an error, not a skip.
    if(NOT EXISTS "${LIFELINE_GGML_SOURCE_DIR}/src/ggml-alloc.c" OR
       NOT EXISTS "${LIFELINE_GGML_SOURCE_DIR}/CMakeLists.txt")
      message(FATAL_ERROR "LIFELINE_GGML_SOURCE_DIR='${LIFELINE_GGML_SOURCE_DIR}' is not a ggml source tree "
                          "(no src/ggml-alloc.c or CMakeLists.txt there); give the ggml/ folder of a checkout")
    endif()
    set(LIFELINE_GGML_DIR "${LIFELINE_GGML_SOURCE_DIR}")
  elseif(EXISTS "${PROJECT_SOURCE_DIR}/build/upstream/fetched.txt" AND
         EXISTS "${PROJECT_SOURCE_DIR}/build/upstream/llama.cpp/ggml/src/ggml-alloc.c")
    set(LIFELINE_GGML_DIR "${PROJECT_SOURCE_DIR}/build/upstream/llama.cpp/ggml")
  else()
    set(LIFELINE_GGML_SKIP_REASON
        "upstream ggml is not fetched: run scripts/fetch-ggml.sh (./lifeline test does) or configure with -DLIFELINE_GGML_SOURCE_DIR=<ggml checkout>")
  endif()
endif()

# What of ggml's API the adapters use that a tree may lack, found in the tree's headers (never from its version):
# LIFELINE_GGML_FEATURE_DEFINITIONS holds LIFELINE_GGML_HAS_<NAME>=0|1 for each (harness/CMakeLists.txt gives them
# to the adapters, which leave out what a tree lacks: an oracle it needs is skipped, an op it needs is refused as
# unsupported; the lane's upstream-ggml.txt and the summaries of `lifeline fuzz` and `lifeline test` say which), and
# LIFELINE_GGML_MISSING the names of those the tree lacks.
function(lifeline_ggml_features)
  set(headers "")
  foreach(h ggml.h ggml-alloc.h ggml-backend.h ggml-cpu.h)
    if(EXISTS "${LIFELINE_GGML_DIR}/include/${h}")
      file(READ "${LIFELINE_GGML_DIR}/include/${h}" text)
      string(APPEND headers "${text}")
    endif()
  endforeach()
  set(defs "")
  set(missing "")
  # name            what the adapters do with it
  foreach(fn ggml_backend_alloc_ctx_tensors_from_buft_size  # ggml_weights.cc: the weights' buffer size oracle
             ggml_gallocr_reserve_n_size                    # measure oracle (ggml_fresh_gallocr.cc)
             ggml_backend_sched_get_buffer_type             # the scheduler's answers (ggml_graph_split.cc)
             ggml_backend_sched_split_graph                 # llama.cpp's graph_reserve(split_only)
             ggml_set_abort_callback                        # GGML_ABORT reported through the harness
             ggml_set_rows                                  # the set_rows op (a KV cache write)
             ggml_conv_2d_dw_direct)                        # the conv_2d_dw op (drawn only where the tree has it)
    string(TOUPPER "${fn}" name)
    string(REGEX REPLACE "^GGML_" "" name "${name}")
    string(REGEX MATCH "[ *]${fn}[ \t\n]*\\(" found "${headers}")
    if(found)
      list(APPEND defs LIFELINE_GGML_HAS_${name}=1)
    else()
      list(APPEND defs LIFELINE_GGML_HAS_${name}=0)
      list(APPEND missing ${fn})
    endif()
  endforeach()
  # What ggml_set_rows accepts, from its asserts in ggml.c: int32 row indices (the adapters' kind) beside int64, and
  # float16 source rows beside float32. Each is refused as unsupported where the tree says no (ggml_rules.cc).
  set(i32 0)
  set(f16 0)
  file(READ "${LIFELINE_GGML_DIR}/src/ggml.c" ggml_c)
  string(FIND "${ggml_c}" "struct ggml_tensor * ggml_set_rows(" at)
  if(NOT at EQUAL -1)
    string(SUBSTRING "${ggml_c}" ${at} 2000 body)
    if(body MATCHES "c->type == GGML_TYPE_I32|GGML_TYPE_I32 == c->type")
      set(i32 1)
    endif()
    if(body MATCHES "b->type == GGML_TYPE_F16")
      set(f16 1)
    endif()
  endif()
  list(APPEND defs LIFELINE_GGML_SET_ROWS_I32=${i32} LIFELINE_GGML_SET_ROWS_F16=${f16})
  set(LIFELINE_GGML_FEATURE_DEFINITIONS "${defs}" PARENT_SCOPE)
  set(LIFELINE_GGML_MISSING "${missing}" PARENT_SCOPE)
  if(missing)
    list(JOIN missing ", " m)
    message(STATUS "lifeline: this ggml has no ${m}: what needs them is left out")
  endif()
endfunction()

if(LIFELINE_GGML_DIR AND NOT EXISTS "${LIFELINE_GGML_DIR}/src/ggml-cpu/CMakeLists.txt")
  # ggml before its CPU backend became a library of its own (ggml-cpu, late 2024) builds one library, `ggml`,
  # whose CMake the adapters' build does not take apart; told before ggml's own CMake runs.
  set(LIFELINE_GGML_SKIP_REASON "${LIFELINE_GGML_DIR} has no src/ggml-cpu/: ggml from before its CPU backend was split "
                                "out of ggml-base (late 2024), which lifeline does not build (it links ggml-base, "
                                "ggml-cpu and ggml)")
endif()
if(LIFELINE_GGML_DIR AND NOT LIFELINE_GGML_SKIP_REASON)
  # ggml's options, as normal variables so its option() calls take them (policy CMP0077).
  set(BUILD_SHARED_LIBS OFF)
  set(GGML_CPU ON)
  set(GGML_BACKEND_DL OFF)
  set(GGML_NATIVE OFF)        # the same code on every machine; scalar and SSE paths, no -march=native
  set(GGML_OPENMP OFF)        # ggml's own thread pool; the adapter computes on one thread anyway
  set(GGML_LLAMAFILE OFF)
  set(GGML_CCACHE OFF)
  set(GGML_BUILD_TESTS OFF)
  set(GGML_BUILD_EXAMPLES OFF)
  # ggml sets CMAKE_BUILD_TYPE=Release in the cache when it is empty, which would bring -O3 -DNDEBUG into
  # every lane target. A build type with no flags of its own, in this scope only: the lane's flags decide.
  set(CMAKE_BUILD_TYPE lifeline)
  add_subdirectory("${LIFELINE_GGML_DIR}" "${CMAKE_BINARY_DIR}/ggml" EXCLUDE_FROM_ALL SYSTEM)
  unset(CMAKE_BUILD_TYPE)
  # UBSan findings in ggml that are known upstream-open, suppressed by function in
  # core/suppressions/ubsan-upstream.supp so fuzzing gets past them. A suppression only works for a
  # recoverable check, so exactly those checks recover, in ggml's objects only (after the lane's
  # -fno-sanitize-recover=all, hence a second interface library linked after lifeline_lane).
  set(LIFELINE_UBSAN_UPSTREAM_SUPP "${PROJECT_SOURCE_DIR}/core/suppressions/ubsan-upstream.supp")
  add_library(lifeline_ggml_recover INTERFACE)
  # The external engine takes its sanitizers from CFLAGS (.clusterfuzzlite/build.sh, bench/throughput.py):
  # the same rule when they hold UBSan, so its build steps past the same findings as the fuzz lane.
  set(_ubsan_in_cflags OFF)
  if(LIFELINE_ENGINE STREQUAL "external" AND "${CMAKE_C_FLAGS} ${CMAKE_CXX_FLAGS}" MATCHES "-fsanitize=([^ ]*,)?undefined")
    set(_ubsan_in_cflags ON)
  endif()
  if("undefined" IN_LIST LIFELINE_SANITIZE OR _ubsan_in_cflags)
    # And no -fsanitize=function: ggml calls every type's kernels (ggml_vec_dot_f16 taking ggml_fp16_t *) through
    # generic function pointer types (ggml_vec_dot_t, taking const void *), which clang reports in C++ files as a
    # call through a pointer to an incorrect function type: llama.cpp's flash attention on the CPU backend
    # (ops.cpp) on its first decode. A known upstream pattern (llama.cpp #6202, closed unfixed); the graph
    # programs reach such calls only from C files, which clang 14 does not check (cmake/LifelineWhisper.cmake
    # does the same for whisper.cpp's ggml).
    target_compile_options(lifeline_ggml_recover INTERFACE -fsanitize-recover=pointer-overflow -fno-sanitize=function)
    string(APPEND LIFELINE_UBSAN_OPTIONS ":suppressions=${LIFELINE_UBSAN_UPSTREAM_SUPP}")
  endif()
  # ggml-base reads its generated ggml-version.h from the lane's build folder, the one include path that differs
  # between lanes: a copy in a folder of the source tree's own (build/upstream/ggml-version-<key>, the same
  # bytes) keeps ggml-base's compile commands the same in every lane, so the fuzz lane can take the asan lane's
  # objects from the compiler cache (LifelineLane.cmake). Not for the external engine, which compiles without it.
  get_target_property(_ggml_base_inc ggml-base INCLUDE_DIRECTORIES)
  if(_ggml_base_inc AND EXISTS "${CMAKE_BINARY_DIR}/ggml/src/ggml-version.h" AND NOT LIFELINE_ENGINE STREQUAL "external")
    string(MD5 _ggml_key "${LIFELINE_GGML_DIR}")
    string(SUBSTRING "${_ggml_key}" 0 12 _ggml_key)
    set(_ggml_version_dir ${PROJECT_SOURCE_DIR}/build/upstream/ggml-version-${_ggml_key})
    file(MAKE_DIRECTORY ${_ggml_version_dir})
    file(COPY_FILE ${CMAKE_BINARY_DIR}/ggml/src/ggml-version.h ${_ggml_version_dir}/ggml-version.h ONLY_IF_DIFFERENT)
    set(_inc "")
    foreach(d IN LISTS _ggml_base_inc)
      if(d STREQUAL "${CMAKE_BINARY_DIR}/ggml/src")
        set(d ${_ggml_version_dir})
      endif()
      list(APPEND _inc "${d}")
    endforeach()
    set_target_properties(ggml-base PROPERTIES INCLUDE_DIRECTORIES "${_inc}")
    # The upstream variants' patched copies (lifeline_add_upstream_variant) likewise: their paths reach the compile
    # commands and __FILE__, so a folder per lane made the fuzz lane compile the asan lane's patched
    # ggml-vulkan.cpp again (31 s). Lanes build one at a time, each rewriting the copies from the same sources.
    set(LIFELINE_GGML_VARIANTS_DIR ${PROJECT_SOURCE_DIR}/build/upstream/variants-${_ggml_key})
  endif()
endif()
if(LIFELINE_GGML_DIR AND NOT LIFELINE_GGML_SKIP_REASON)
  foreach(t ggml-base ggml-cpu ggml)
    if(NOT TARGET ${t})
      message(FATAL_ERROR "${LIFELINE_GGML_DIR}: its CMake defines no target '${t}'; "
                          "lifeline builds ggml trees whose CMake has ggml-base, ggml-cpu and ggml")
    endif()
    # Sanitizers, libFuzzer coverage, -O1, line tables and -UNDEBUG, as for the project's own code.
    target_link_libraries(${t} PRIVATE lifeline_lane lifeline_ggml_recover)
  endforeach()
  # Files of ggml-base and ggml-cpu that no lifeline program reaches compile at -O0, with the lane's
  # sanitizers and coverage as before: GGUF files, the meta backend (only for its own buffer type),
  # quantization and repacking (the programs make F32, F16 and I8 tensors, never a quantized one) and
  # ggml-opt (training). The first five took 50 s of a fuzz lane build at -O1 and 21 s at -O0; the CPU backend's
  # quantized kernels (the last four) 12.6 CPU-s of an asan lane build at -O1 and 4.5 at -O0 (2026-11-28).
  # Tried and left at -O1: the kernels the programs run (ops.cpp, unary-ops.cpp, binary-ops.cpp, ggml-cpu.c) at
  # -O0 saved about 50 CPU-s of that build but made a replay of corpus/ggml_graph_topology 1.2 to 1.6 times slower.
  set(LIFELINE_GGML_COLD_SOURCES gguf.cpp ggml-backend-meta.cpp ggml-quants.c ggml-opt.cpp ggml-cpu/repack.cpp
                                 ggml-cpu/quants.c ggml-cpu/iqp.cpp ggml-cpu/arch/x86/quants.c
                                 ggml-cpu/arch/x86/repack.cpp)
  list(TRANSFORM LIFELINE_GGML_COLD_SOURCES PREPEND "${LIFELINE_GGML_DIR}/src/")
  set_source_files_properties(${LIFELINE_GGML_COLD_SOURCES} DIRECTORY "${LIFELINE_GGML_DIR}/src"
                              PROPERTIES COMPILE_OPTIONS -O0)
  file(STRINGS "${LIFELINE_GGML_DIR}/CMakeLists.txt" _ggml_version_lines REGEX "^set\\(GGML_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE "[^0-9;]" "" _ggml_version "${_ggml_version_lines}")
  string(REPLACE ";" "." LIFELINE_GGML_VERSION "${_ggml_version}")
  if(NOT LIFELINE_GGML_VERSION)
    # ggml's CMake has not always said its version (the trees of September 2025 and before checked here do not).
    set(LIFELINE_GGML_VERSION "unversioned")
  endif()
  lifeline_ggml_features()
  message(STATUS "lifeline: upstream ggml ${LIFELINE_GGML_VERSION} from ${LIFELINE_GGML_DIR}")
  set(LIFELINE_GGML ON)
  # A source other than the pinned one (`lifeline fuzz|test --ggml-source DIR`): a pinned reproducer or export
  # that runs clean there is reported as "not reproduced on this source: fixed?" (skipped), not failed.
  set(LIFELINE_GGML_OTHER_SOURCE "")
  if(LIFELINE_GGML_SOURCE_DIR)
    set(LIFELINE_GGML_OTHER_SOURCE "ggml ${LIFELINE_GGML_VERSION} from ${LIFELINE_GGML_DIR}")
  endif()
elseif(LIFELINE_GGML_SKIP_REASON)
  message(STATUS "lifeline: upstream tests skipped: ${LIFELINE_GGML_SKIP_REASON}")
  list(APPEND LIFELINE_SKIPPED_TARGETS "ggml_graph_topology: ${LIFELINE_GGML_SKIP_REASON}")
endif()

# ---- ggml-vulkan: ggml's Vulkan backend, for ggml_vulkan_graph_topology --------------------------------
# In the lanes that build both ggml and the Vulkan runtime's stack (LIFELINE_GGML_VULKAN_LANES), never in the
# external engine (an OSS-Fuzz image has no Vulkan ICD to run it on). The shaders and the patched host sources
# come from cmake/ggml-vulkan/, a project of its own configured here and built once per machine in
# build/upstream/ggml-vulkan (shared by every lane; see its CMakeLists.txt for why). The host sources are
# compiled here with the lane's flags, like ggml-base and ggml-cpu; the SPIR-V arrays are linked as they are.
# Sets LIFELINE_GGML_VULKAN, or LIFELINE_GGML_VULKAN_SKIP_REASON where this machine cannot build the tree's
# ggml-vulkan (no ggml, no Vulkan backend in it, a build-compat patch it needs that does not apply): the target
# is then skipped with that reason and the rest of the lane builds.
# Not tsan: ggml_vulkan_graph_topology calls ggml-vulkan from one thread, and ggml-vulkan 0.25.1 starts none (its
# pipelines compile on the threads that need them), so TSan has no second thread to watch; the tsan lane builds only
# the targets that start threads (cmake/LifelineTargets.cmake). Its host sources took 33 CPU-s of that lane's build.
set(LIFELINE_GGML_VULKAN_LANES asan fuzz coverage)
set(LIFELINE_GGML_VULKAN OFF)
# Why ggml_vulkan_graph_topology is not built in a lane that would build it (lifeline_add_unavailable_target).
set(LIFELINE_GGML_VULKAN_SKIP_REASON "")
if(LIFELINE_VULKAN AND LIFELINE_LANE IN_LIST LIFELINE_GGML_VULKAN_LANES AND NOT LIFELINE_ENGINE STREQUAL "external")
  if(NOT LIFELINE_GGML)
    set(LIFELINE_GGML_VULKAN_SKIP_REASON "${LIFELINE_GGML_SKIP_REASON}")
  elseif(NOT EXISTS "${LIFELINE_GGML_DIR}/src/ggml-vulkan/ggml-vulkan.cpp")
    set(LIFELINE_GGML_VULKAN_SKIP_REASON "${LIFELINE_GGML_DIR} has no src/ggml-vulkan/ggml-vulkan.cpp (a ggml tree without the Vulkan backend)")
  endif()
endif()
if(LIFELINE_GGML AND NOT LIFELINE_GGML_VULKAN_SKIP_REASON AND LIFELINE_VULKAN AND
   LIFELINE_LANE IN_LIST LIFELINE_GGML_VULKAN_LANES AND NOT LIFELINE_ENGINE STREQUAL "external")
  find_package(Vulkan REQUIRED)
  find_program(LIFELINE_GLSLC glslc REQUIRED)
  set(_vk_shared ${PROJECT_SOURCE_DIR}/build/upstream/ggml-vulkan)
  if(LIFELINE_GGML_SOURCE_DIR)
    # Another ggml source (--ggml-source) gets shaders of its own, so going back and forth between it and the
    # pinned source rebuilds neither.
    string(MD5 _vk_key "${LIFELINE_GGML_DIR}")
    string(SUBSTRING "${_vk_key}" 0 12 _vk_key)
    set(_vk_shared ${_vk_shared}-${_vk_key})
  endif()
  # The first lane to configure it picks its compiler; later lanes leave it (a lane on another clang, tsan,
  # would otherwise wipe the shared cache). What it builds has no sanitizer and links into any lane.
  set(_vk_compiler "")
  if(NOT EXISTS ${_vk_shared}/CMakeCache.txt)
    set(_vk_compiler -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER} -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER})
  else()
    # A shared build configured before it had C sources (the glslc client and server) picks the lane's C compiler.
    file(STRINGS ${_vk_shared}/CMakeCache.txt _vk_has_c REGEX "^CMAKE_C_COMPILER:")
    if(NOT _vk_has_c)
      set(_vk_compiler -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER})
    endif()
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/cmake/ggml-vulkan -B ${_vk_shared} -G Ninja
            ${_vk_compiler} -DLIFELINE_GGML_DIR=${LIFELINE_GGML_DIR}
            -DLIFELINE_GLSLC=${LIFELINE_GLSLC} -DLIFELINE_PYTHON=${Python3_EXECUTABLE}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "configuring the shared ggml-vulkan shader build in ${_vk_shared} failed:\n${_out}")
  endif()
  # What the shared build found (cmake/ggml-vulkan/CMakeLists.txt): `ok`, or `skip <why>` for a tree this machine
  # cannot build ggml-vulkan from (a build-compat patch it needs does not apply, a shader generator it does not drive).
  file(STRINGS ${_vk_shared}/status.txt _vk_status LIMIT_COUNT 1)
  if(_vk_status MATCHES "^skip (.*)$")
    set(LIFELINE_GGML_VULKAN_SKIP_REASON "ggml-vulkan of ${LIFELINE_GGML_DIR}: ${CMAKE_MATCH_1}")
    message(STATUS "lifeline: ggml_vulkan_graph_topology skipped: ${LIFELINE_GGML_VULKAN_SKIP_REASON}")
  endif()
endif()
if(LIFELINE_GGML AND NOT LIFELINE_GGML_VULKAN_SKIP_REASON AND DEFINED _vk_shared)
  set(_vk_src ${_vk_shared}/src/ggml-vulkan)
  set(LIFELINE_GGML_VULKAN_SRC ${_vk_src})  # upstream variants of ggml-vulkan patch these copies
  # Every host source the tree has (0.25.1 split ggml-vulkan.cpp into three; earlier versions have one).
  file(GLOB _vk_names RELATIVE ${LIFELINE_GGML_DIR}/src/ggml-vulkan CONFIGURE_DEPENDS
       ${LIFELINE_GGML_DIR}/src/ggml-vulkan/*.cpp)
  list(TRANSFORM _vk_names PREPEND "${_vk_src}/" OUTPUT_VARIABLE _vk_host)
  set(_vk_shaders ${_vk_shared}/libggml-vulkan-shaders.a)
  # Always run: ninja finds nothing to do once the shaders exist (about 0.1 s).
  add_custom_target(lifeline_ggml_vulkan_shared
    COMMAND ${CMAKE_COMMAND} --build ${_vk_shared}
    BYPRODUCTS ${_vk_host} ${_vk_shaders} ${_vk_shared}/ggml-vulkan-shaders.hpp
    COMMENT "ggml-vulkan: shaders and patched sources (shared by every lane, in ${_vk_shared})"
    USES_TERMINAL)
  add_library(lifeline_ggml_vulkan STATIC ${_vk_host})
  # The host sources compile at -O0 (after the lane's -O1; sanitizers and coverage as the lane has them). At -O1,
  # clang 14 took 180 s on ggml-vulkan.cpp alone in a fuzz lane build on this 2-core machine (47 s at -O0), and
  # a lane with the Vulkan variant compiles it twice: the longest step of every lane that builds it. Replaying
  # the target's 203 seed and regression inputs takes 1.07-1.14x as long (fuzz lane, two rounds): most of a run
  # is in the ICD and the loader, not in ggml-vulkan's host code.
  set(LIFELINE_GGML_VULKAN_HOST_OPTIONS -O0)
  set_source_files_properties(${_vk_host} PROPERTIES COMPILE_OPTIONS "${LIFELINE_GGML_VULKAN_HOST_OPTIONS}")
  add_dependencies(lifeline_ggml_vulkan lifeline_ggml_vulkan_shared)
  target_include_directories(lifeline_ggml_vulkan PRIVATE ${_vk_src} ${_vk_shared} ${LIFELINE_GGML_DIR}/src)
  target_include_directories(lifeline_ggml_vulkan SYSTEM PUBLIC ${LIFELINE_GGML_DIR}/include)
  set_target_properties(lifeline_ggml_vulkan PROPERTIES CXX_STANDARD 17)
  target_link_libraries(lifeline_ggml_vulkan PRIVATE lifeline_lane lifeline_ggml_recover)
  target_link_libraries(lifeline_ggml_vulkan PUBLIC ggml-base ${_vk_shaders} Vulkan::Vulkan Threads::Threads)
  message(STATUS "lifeline: ggml-vulkan from ${LIFELINE_GGML_DIR} (shaders shared in ${_vk_shared})")
  # Whether this ggml-vulkan binds a unary op's source with the push constants that carry no offset (ggml_vk_unary
  # on vk_op_push_constants, ggml 0.15 and before): it then asserts on a misaligned source as it does for mul_mat
  # (finding ggml-vk-mul-mat-misaligned-src, whose guard then covers unary ops too: ggml_vulkan_adapter.cc).
  file(READ "${LIFELINE_GGML_DIR}/src/ggml-vulkan/ggml-vulkan.cpp" _vk_cpp)
  string(FIND "${_vk_cpp}" "static void ggml_vk_unary(" _at)
  set(_unary_no_offset 0)
  if(NOT _at EQUAL -1)
    string(SUBSTRING "${_vk_cpp}" ${_at} 400 _body)
    if(_body MATCHES "ggml_vk_op_f32<vk_op_push_constants>")
      set(_unary_no_offset 1)
    endif()
  endif()
  set(LIFELINE_GGML_VULKAN_DEFINITIONS LIFELINE_GGML_VK_UNARY_NO_OFFSET=${_unary_no_offset})
  if(LIFELINE_LANE STREQUAL "asan")  # the shared build is lane-independent: checked once
    # The warm glslc checked on the pinned ggml's shaders, whose variants the check names (another tree's differ:
    # whisper.cpp 1.9.1's has no unary.comp), whichever tree the lane builds.
    set(_pinned_shaders ${PROJECT_SOURCE_DIR}/build/upstream/llama.cpp/ggml/src/ggml-vulkan/vulkan-shaders)
    if(EXISTS ${_pinned_shaders})
      add_test(NAME unit.ggml-vulkan.glslc-fork-server
               COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/lanes/glslc_server_check.py
                       ${_vk_shared}/glslc_client ${_vk_shared}/glslc_fork_server.so ${LIFELINE_GLSLC} ${_pinned_shaders})
      set_tests_properties(unit.ggml-vulkan.glslc-fork-server PROPERTIES LABELS "unit" TIMEOUT 120)
    else()
      lifeline_add_upstream_skip(unit.ggml-vulkan.glslc-fork-server
        "it checks the warm glslc on the pinned ggml's shaders, and the pinned ggml is not fetched")
    endif()
  endif()
  set(LIFELINE_GGML_VULKAN ON)
elseif(LIFELINE_ENGINE STREQUAL "external")
  list(APPEND LIFELINE_SKIPPED_TARGETS
       "ggml_vulkan_graph_topology: not built for an external engine (its shaders build once per machine under build/upstream, which the build contract does not provide) - fuzz it with lifeline fuzz")
endif()

# corpus.<target> and, when the target has a regression corpus, regression.<target>, registered as skipped
# with `reason` (default: why upstream ggml is missing) for a target this lane cannot build.
function(lifeline_add_corpus_skips target)
  lifeline_add_upstream_skip(corpus.${target} ${ARGN})
  lifeline_regression_corpus(${target} regression)
  if(regression)
    lifeline_add_upstream_skip(regression.${target} ${ARGN})
  endif()
endfunction()

# An upstream target this lane cannot build, for `reason`: its corpus, regression, smoke and reproducer tests
# are registered as skipped with the reason, and the target is listed with it in the lane's skipped-targets.txt
# (`lifeline fuzz TARGET` names it there; cli/lifeline/build.py skipped_targets).
function(lifeline_add_unavailable_target target reason)
  set_property(GLOBAL APPEND PROPERTY LIFELINE_UNAVAILABLE_UPSTREAM_TARGETS ${target})
  set_property(GLOBAL PROPERTY LIFELINE_UNAVAILABLE_REASON_${target} "${reason}")
  string(REPLACE "\n" " " line "${reason}")
  file(APPEND ${CMAKE_BINARY_DIR}/skipped-targets.txt "${target}: ${line}\n")
  lifeline_add_corpus_skips(${target} "${reason}")
  if(LIFELINE_ENGINE STREQUAL "libfuzzer")
    lifeline_add_upstream_skip(fuzz-smoke.${target} "${reason}")
  endif()
endfunction()

# The documented bug `id`, forward-ported into upstream: executable <target> in build/<lane>/upstream-variants/<id>/,
# the fuzz target built against ggml with `patch` (a -p1 diff against the ggml tree) applied to a copy of the
# files it touches (ggml-vulkan files: to a copy of the build-compat sources), in build/upstream/variants-<key>/<id>/
# where the lanes share compile commands (above), else beside the executable. The patched
# files are compiled with ggml-base's own flags (or lifeline_ggml_vulkan's) and linked
# as objects of the executable, so the linker takes their definitions and never pulls the unpatched members
# of libggml-base.a; everything else is the same ggml. Returns the executable's target name in `out_var`, or
# "" and why in `<out_var>_error` when the patch cannot apply to this ggml tree (a file it touches is missing,
# or its hunks do not apply: tried at configure time): that folder's variant tests then fail, and the lane
# configures as usual; on another ggml source (--ggml-source) why is in `<out_var>_skip` instead, and they are
# skipped with it.
# A target whose upstream is another tree declares it with the global property LIFELINE_VARIANT_SOURCE_<target>:
# "<tree>;<library>;<libraries...>": its variants' patches are -p1 diffs against <tree>, the files they touch are
# compiled as <library> compiles its own (its include paths, definitions and options) and link <libraries...>,
# in the lane's folder (whisper_string_handoff: the whisper.cpp tree, its whisper.wasm binding).
function(lifeline_add_upstream_variant out_var id target patch)
  set(${out_var} "" PARENT_SCOPE)
  set(dir ${CMAKE_BINARY_DIR}/upstream-variants/${id})
  set(src_dir ${dir})
  set(tree ${LIFELINE_GGML_DIR})
  set(base ggml-base)
  get_property(own_source GLOBAL PROPERTY LIFELINE_VARIANT_SOURCE_${target})
  set(own_tree OFF)
  if(own_source)
    set(own_tree ON)
    list(POP_FRONT own_source tree base)  # what is left: the libraries the patched objects link
  elseif(LIFELINE_GGML_VARIANTS_DIR)
    set(src_dir ${LIFELINE_GGML_VARIANTS_DIR}/${id})
  endif()
  file(STRINGS ${patch} touched REGEX "^\\+\\+\\+ b/")
  if(NOT touched)  # repro.py refuses such a bug.json; kept for a patch edited after configuration
    set(${out_var}_error "${patch}: no '+++ b/<file>' line; expected a unified diff against the ggml tree (-p1)"
        PARENT_SCOPE)
    return()
  endif()
  set(outputs "")
  set(originals "")
  # ggml-vulkan's files are patched on top of the build-compat copies (cmake/ggml-vulkan/), and compiled as
  # lifeline_ggml_vulkan is; everything else is ggml-base's. One patch patches one of the two.
  foreach(line IN LISTS touched)
    string(REGEX REPLACE "^\\+\\+\\+ b/([^\t ]+).*$" "\\1" rel "${line}")
    if(NOT EXISTS ${tree}/${rel})
      set(${out_var}_error "${patch}: patches ${rel}, which ${tree} does not have" PARENT_SCOPE)
      return()
    endif()
    list(APPEND outputs ${src_dir}/${rel})
    if(own_tree)
      list(APPEND originals ${tree}/${rel})
    elseif(rel MATCHES "^src/ggml-vulkan/")
      if(NOT TARGET lifeline_ggml_vulkan)
        set(${out_var}_error "${patch}: patches ${rel}, and this lane does not build ggml-vulkan" PARENT_SCOPE)
        return()
      endif()
      string(REGEX REPLACE "^src/ggml-vulkan/" "" vk_rel "${rel}")
      list(APPEND originals ${LIFELINE_GGML_VULKAN_SRC}/${vk_rel})
      set(base lifeline_ggml_vulkan)
    else()
      list(APPEND originals ${LIFELINE_GGML_DIR}/${rel})
    endif()
  endforeach()
  find_program(LIFELINE_PATCH_EXE patch REQUIRED)
  # Whether it applies, tried now on the tree's own files (read-only), so that a patch that does not fit this tree
  # never stops the lane's build: on the pinned source its tests fail saying so; on another ggml source
  # (--ggml-source), whose code may already hold the bug or have moved, they are skipped with the reason.
  execute_process(COMMAND ${LIFELINE_PATCH_EXE} --dry-run --forward --batch -p1 -d ${tree} -i ${patch}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "\n+" " | " out "${out}")  # no ';': a CMake list separator
    set(why "${patch} does not apply to ${tree} (${out})")
    if(LIFELINE_GGML_OTHER_SOURCE AND NOT own_tree)
      set(${out_var}_skip "${why}" PARENT_SCOPE)
    else()
      set(${out_var}_error "${why}" PARENT_SCOPE)
    endif()
    return()
  endif()
  set(copy_cmds "")
  foreach(src out IN ZIP_LISTS originals outputs)
    list(APPEND copy_cmds COMMAND ${CMAKE_COMMAND} -E copy ${src} ${out})
  endforeach()
  add_custom_command(OUTPUT ${outputs}
    ${copy_cmds}
    COMMAND ${LIFELINE_PATCH_EXE} --quiet --forward -p1 -d ${src_dir} -i ${patch}
    DEPENDS ${patch} ${originals}
    COMMENT "upstream variant ${id}: patching ${tree} with ${patch}")
  string(MAKE_C_IDENTIFIER "${target}_${id}" name)
  add_library(${name}_patched OBJECT ${outputs})
  if(base STREQUAL "lifeline_ggml_vulkan")
    add_dependencies(${name}_patched lifeline_ggml_vulkan_shared)  # the compat copies come from its build
    set_source_files_properties(${outputs} PROPERTIES COMPILE_OPTIONS "${LIFELINE_GGML_VULKAN_HOST_OPTIONS}")
  endif()
  target_link_libraries(${name}_patched PRIVATE ${own_source})
  target_include_directories(${name}_patched PRIVATE $<TARGET_PROPERTY:${base},INCLUDE_DIRECTORIES>)
  target_compile_definitions(${name}_patched PRIVATE $<TARGET_PROPERTY:${base},COMPILE_DEFINITIONS>)
  target_compile_options(${name}_patched PRIVATE $<TARGET_PROPERTY:${base},COMPILE_OPTIONS>)
  set_target_properties(${name}_patched PROPERTIES C_STANDARD 11 CXX_STANDARD 17)
  target_link_libraries(${name}_patched PRIVATE lifeline_lane $<TARGET_NAME_IF_EXISTS:lifeline_ggml_recover>)
  get_property(libs GLOBAL PROPERTY LIFELINE_TARGET_LIBS_${target})
  lifeline_add_fuzz_executable(${name} ${target} ${dir} LIBS ${libs})
  target_sources(${name} PRIVATE $<TARGET_OBJECTS:${name}_patched>)
  set(${out_var} ${name} PARENT_SCOPE)
endfunction()

# The CPUs a test of a target that runs ggml's CPU backend declares (ctest's PROCESSORS), so that ctest -j runs
# nothing beside it on the CPUs its compute threads need. ggml's threads wait for each other in ggml_barrier by
# spinning (ggml_host.cc, CpuThreadsToRun): when another test holds one of the CPUs, a thread that has arrived
# spins while the thread it waits for cannot run. In a fresh clone's fuzz lane, fuzz-smoke.ggml_graph_topology
# ran 1,644 inputs in 121 s (its 120 s cap) beside unit.ossfuzz-build's compile, where alone it runs its 2,000 in
# 6.6 s; corpus.ggml_graph_topology took 24 s there, 2 s alone. A compute runs on at most max(2, the CPUs)
# threads and at most kMaxCpuThreads (4, harness/programs/graph/format.h): the same bound here.
cmake_host_system_information(RESULT _cpus QUERY NUMBER_OF_LOGICAL_CORES)
set(LIFELINE_GGML_TEST_PROCESSORS 2)
if(_cpus GREATER 2)
  set(LIFELINE_GGML_TEST_PROCESSORS ${_cpus})
  if(_cpus GREATER 4)
    set(LIFELINE_GGML_TEST_PROCESSORS 4)
  endif()
endif()
# Gives `tests` those PROCESSORS when `target` runs ggml.
function(lifeline_ggml_test_processors target)
  lifeline_target_runs_ggml(${target} runs)
  if(runs)
    set_tests_properties(${ARGN} PROPERTIES PROCESSORS ${LIFELINE_GGML_TEST_PROCESSORS})
  endif()
endfunction()

# Whether fuzz target `target` (lifeline_add_fuzz_target) runs upstream ggml: its libraries include the ggml
# graph adapters or llama.cpp's (whose contexts compute on 1-2 of ggml's threads). In `out`.
function(lifeline_target_runs_ggml target out)
  get_property(libs GLOBAL PROPERTY LIFELINE_TARGET_LIBS_${target})
  list(FILTER libs INCLUDE REGEX "^(lifeline_graph_ggml|lifeline_llama_upstream)")
  if(libs)
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# build/<lane>/upstream-ggml.txt: which ggml the lane built and for which targets, one `key value` per line,
# read by `lifeline fuzz` and `lifeline test` (cli/lifeline/build.py upstream_ggml) for their summaries. No file
# when the lane builds no ggml. Called once every target is defined.
function(lifeline_write_upstream_ggml)
  set(file ${CMAKE_BINARY_DIR}/upstream-ggml.txt)
  if(NOT LIFELINE_GGML)
    file(REMOVE ${file})
    return()
  endif()
  set(targets "")
  get_property(all GLOBAL PROPERTY LIFELINE_FUZZ_TARGETS)
  foreach(t IN LISTS all)
    lifeline_target_runs_ggml(${t} runs)
    if(runs)
      list(APPEND targets ${t})
    endif()
  endforeach()
  list(JOIN targets " " targets)
  set(pinned 1)
  set(pin "")
  if(LIFELINE_GGML_SOURCE_DIR)
    set(pinned 0)
  elseif(EXISTS "${PROJECT_SOURCE_DIR}/build/upstream/fetched.txt")
    file(STRINGS "${PROJECT_SOURCE_DIR}/build/upstream/fetched.txt" pin REGEX "^package ")
    string(REGEX REPLACE "^package ([^ ]+).*$" "npm \\1" pin "${pin}")
  endif()
  list(JOIN LIFELINE_GGML_MISSING " " missing)
  file(WRITE ${file} "version ${LIFELINE_GGML_VERSION}\nsource ${LIFELINE_GGML_DIR}\npinned ${pinned}\n"
                     "pin ${pin}\ntargets ${targets}\nmissing ${missing}\n")
endfunction()
