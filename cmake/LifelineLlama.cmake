# Upstream llama.cpp's runtime (src/: contexts, batches, the memory kinds, state I/O), for llama_memory_differential:
# the llama-runtime programs (harness/programs/llama/) on tiny models built in-process.
#
#   LIFELINE_LLAMA_SOURCE_DIR  a llama.cpp checkout. Empty: the checkout holding the lane's ggml, when it is one
#                              (build/upstream/llama.cpp from scripts/fetch-ggml.sh, or the parent of
#                              LIFELINE_GGML_SOURCE_DIR when that is a checkout's ggml/).
#
# Built in the fuzz lane (ASan+UBSan with libFuzzer's coverage: where its programs are fuzzed and its smoke and
# seeds run) and the tsan lane (the same programs under TSan: llama.cpp's and ggml's threads on the CPU backend),
# with the lane's flags and asserts on, against the lane's ggml; not in the asan lane, whose programs the fuzz lane
# runs with the same sanitizers (the library is 88k lines: 170 s of one lane's build on 2 cores at -O1; what the
# programs never run compiles at -O0, below). Also in the coverage lane (`lifeline coverage`, built on demand,
# not by the test suite), so that what the programs reach of llama.cpp's sources is measured.
# Not by the external engine (.clusterfuzzlite/build.sh): it lists the target as skipped (CMakeLists.txt).
# Upstream's own CMake is not used: it would build a second ggml. src/*.cpp and src/models/*.cpp are globbed
# (whichever files a version has), the models in unity batches of 16 as the pinned tree builds them (the
# files of older trees that clash in one batch apart).
#
# What of llama.h the programs need is checked in the tree's header, never from its version: a tree without it
# registers the target as unavailable with the names it lacks. The tiny models are built in memory with
# llama_model_init_from_user where the header has it; a tree without it (b8179 and older) loads them from a
# GGUF file written in a private temporary folder (llama_model_load_from_file; LIFELINE_LLAMA_MODEL_FILE=1 on
# what links lifeline_llama).
#
# Sets LIFELINE_LLAMA (ON when built), LIFELINE_LLAMA_DIR and LIFELINE_LLAMA_SKIP_REASON.

set(LIFELINE_LLAMA_LANES fuzz tsan coverage)
set(LIFELINE_LLAMA_SOURCE_DIR "" CACHE PATH "llama.cpp checkout to fuzz (default: the one holding the lane's ggml)")
set(LIFELINE_LLAMA OFF)
set(LIFELINE_LLAMA_SKIP_REASON "")
set(LIFELINE_LLAMA_DIR "")

if(LIFELINE_LANE IN_LIST LIFELINE_LLAMA_LANES AND NOT LIFELINE_ENGINE STREQUAL "external")
  if(LIFELINE_LLAMA_SOURCE_DIR)
    if(NOT EXISTS "${LIFELINE_LLAMA_SOURCE_DIR}/src/llama.cpp" OR NOT EXISTS "${LIFELINE_LLAMA_SOURCE_DIR}/include/llama.h")
      message(FATAL_ERROR "LIFELINE_LLAMA_SOURCE_DIR='${LIFELINE_LLAMA_SOURCE_DIR}' is not a llama.cpp checkout "
                          "(no src/llama.cpp or include/llama.h there)")
    endif()
    set(LIFELINE_LLAMA_DIR "${LIFELINE_LLAMA_SOURCE_DIR}")
  elseif(LIFELINE_GGML_DIR AND EXISTS "${LIFELINE_GGML_DIR}/../src/llama.cpp" AND EXISTS "${LIFELINE_GGML_DIR}/../include/llama.h")
    get_filename_component(LIFELINE_LLAMA_DIR "${LIFELINE_GGML_DIR}/.." ABSOLUTE)
  elseif(LIFELINE_GGML_DIR)
    set(LIFELINE_LLAMA_SKIP_REASON "the lane's ggml (${LIFELINE_GGML_DIR}) is not inside a llama.cpp checkout: configure with -DLIFELINE_LLAMA_SOURCE_DIR=<llama.cpp checkout>")
  else()
    set(LIFELINE_LLAMA_SKIP_REASON "${LIFELINE_GGML_SKIP_REASON}")
  endif()
  if(LIFELINE_LLAMA_DIR AND NOT LIFELINE_GGML)
    set(LIFELINE_LLAMA_SKIP_REASON "llama.cpp needs the lane's upstream ggml, which is not built: ${LIFELINE_GGML_SKIP_REASON}")
    set(LIFELINE_LLAMA_DIR "")
  endif()
endif()

if(LIFELINE_LLAMA_DIR)
  file(READ "${LIFELINE_LLAMA_DIR}/include/llama.h" _llama_h)
  set(_missing "")
  # name                          what uses it
  # upstream/llama_models.cc: the tiny models, built in memory, or else loaded from a file written for them
  set(_model_file OFF)
  string(FIND "${_llama_h}" "llama_model_init_from_user" _at)
  if(_at EQUAL -1)
    set(_model_file ON)
  endif()
  foreach(fn llama_model_load_from_file    # upstream/llama_models.cc: the tiny models (without init_from_user)
             llama_memory_seq_rm           # upstream/llama_runtime.cc: the memory API (llama.cpp since mid 2025)
             llama_memory_seq_pos_min      # the memory oracle
             llama_state_seq_get_data      # state save and restore
             flash_attn_type               # the context's flash attention parameter (auto/on/off)
             kv_unified                    # the context's unified cache parameter
             swa_full)                     # the context's full-size SWA cache parameter
    string(FIND "${_llama_h}" "${fn}" _at)
    if(_at EQUAL -1)
      list(APPEND _missing ${fn})
    endif()
  endforeach()
  if(_missing)
    string(REPLACE ";" ", " _missing "${_missing}")
    set(LIFELINE_LLAMA_SKIP_REASON "${LIFELINE_LLAMA_DIR}/include/llama.h lacks what the llama programs use: ${_missing}")
  else()
    file(GLOB _llama_core "${LIFELINE_LLAMA_DIR}/src/*.cpp")
    file(GLOB _llama_models "${LIFELINE_LLAMA_DIR}/src/models/*.cpp")
    set(LLAMA_VERSION "lifeline")
    set(LLAMA_BUILD_COMMIT "unknown")
    if(EXISTS "${LIFELINE_LLAMA_DIR}/src/llama-version.h.in")
      configure_file("${LIFELINE_LLAMA_DIR}/src/llama-version.h.in" "${CMAKE_BINARY_DIR}/llama/llama-version.h" @ONLY)
    endif()
    # Trees that do not build src/models/ in unity batches themselves may have two models' files define the same
    # file-level helper (a static function or a struct: gemma3n.cpp and gemma4.cpp of b10068 and v0.4.0): such files
    # are compiled on their own, found from their file-level definitions.
    set(_clashing "")
    foreach(f IN LISTS _llama_models)
      file(STRINGS "${f}" _lines REGEX "^(static [^;=]*\\(|(struct|class) [A-Za-z_0-9]+ *[:{])")
      set(_names "")
      foreach(line IN LISTS _lines)
        if(line MATCHES "^(struct|class) ([A-Za-z_0-9]+)")
          list(APPEND _names "${CMAKE_MATCH_2}")
        elseif(line MATCHES "([A-Za-z_][A-Za-z_0-9]*) *\\(")
          list(APPEND _names "${CMAKE_MATCH_1}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _names)
      foreach(n IN LISTS _names)
        if(DEFINED _first_${n})
          list(APPEND _clashing "${f}" "${_first_${n}}")
        else()
          set(_first_${n} "${f}")
        endif()
      endforeach()
    endforeach()
    if(_clashing)
      list(REMOVE_DUPLICATES _clashing)
      set_source_files_properties(${_clashing} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
    # What the programs run, at the lane's -O1: the context, batches, the memory kinds of the four tiny models,
    # the graph, and the four architectures' graph builders. Everything else (the other 150 architectures,
    # tokenizers, samplers, grammars, chat templates, quantization, the GGUF loader and saver, the memory kinds of
    # other architectures) at -O0, with the lane's sanitizers and coverage as before: a batch of 16 models took
    # 18.5 s at -O1 and 5.8 s at -O0, llama-vocab.cpp 10.5 s and 4.9 s (fuzz lane flags, one core, 2026-12-07).
    set(_hot_models "/(llama|gemma2|mamba|mamba-base|jamba)\\.cpp$")
    set(_cold_core "/(llama-(vocab|grammar|sampler|chat|quant|model-saver|adapter|model-loader|kv-cache-dsa|kv-cache-dsa-iswa|kv-cache-msa|kv-cache-dsv4|memory-hybrid-iswa|memory-hybrid-idx)|unicode|unicode-data)\\.cpp$")
    set(_cold_models ${_llama_models})
    list(FILTER _cold_models EXCLUDE REGEX "${_hot_models}")
    set(_cold_core_files ${_llama_core})
    list(FILTER _cold_core_files INCLUDE REGEX "${_cold_core}")
    set(_hot ${_llama_models} ${_llama_core})
    list(REMOVE_ITEM _hot ${_cold_models} ${_cold_core_files})
    # The cold objects take the lane's options as their own (not through linking lifeline_lane, whose -O1 would
    # come after theirs), then -O0; the models in unity batches of 16 (but the clashing ones), the rest one by one
    # (upstream keeps its core files out of unity builds).
    add_library(lifeline_llama_cold OBJECT ${_cold_models} ${_cold_core_files})
    set_target_properties(lifeline_llama_cold PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16 CXX_STANDARD 17)
    set_source_files_properties(${_cold_core_files} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    target_include_directories(lifeline_llama_cold PRIVATE "${LIFELINE_LLAMA_DIR}/src" "${LIFELINE_LLAMA_DIR}/include"
                               "${CMAKE_BINARY_DIR}/llama")
    target_compile_options(lifeline_llama_cold PRIVATE $<TARGET_PROPERTY:lifeline_lane,INTERFACE_COMPILE_OPTIONS>
                           $<TARGET_PROPERTY:lifeline_ggml_recover,INTERFACE_COMPILE_OPTIONS> -O0 -w)
    target_compile_definitions(lifeline_llama_cold PRIVATE $<TARGET_PROPERTY:lifeline_lane,INTERFACE_COMPILE_DEFINITIONS>)
    target_include_directories(lifeline_llama_cold SYSTEM PRIVATE $<TARGET_PROPERTY:ggml,INTERFACE_INCLUDE_DIRECTORIES>)
    add_library(lifeline_llama STATIC ${_hot} $<TARGET_OBJECTS:lifeline_llama_cold>)
    set_target_properties(lifeline_llama PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16 CXX_STANDARD 17)
    set_source_files_properties(${_llama_core} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    target_include_directories(lifeline_llama PRIVATE "${LIFELINE_LLAMA_DIR}/src" "${CMAKE_BINARY_DIR}/llama")
    target_include_directories(lifeline_llama SYSTEM PUBLIC "${LIFELINE_LLAMA_DIR}/include")
    # Upstream's warnings are upstream's; the lane's sanitizers, coverage, -O1 and -UNDEBUG as for ggml.
    target_compile_options(lifeline_llama PRIVATE -w)
    target_link_libraries(lifeline_llama PUBLIC ggml PRIVATE lifeline_lane lifeline_ggml_recover)
    # upstream/llama_runtime.cc: the context's limit of outputs (b10068 and later);
    # LIFELINE_LLAMA_NO_N_OUTPUTS_MAX where the tree lacks it
    string(FIND "${_llama_h}" "n_outputs_max" _at)
    if(_at EQUAL -1)
      target_compile_definitions(lifeline_llama INTERFACE LIFELINE_LLAMA_NO_N_OUTPUTS_MAX=1)
    endif()
    # llama_state_seq_load_file with tokens_out NULL (only the count): what llama.h documents since v0.4.0 (its
    # comment "If tokens_out is NULL"); older trees read the tokens into it (fread into NULL: a SEGV measured on
    # b6431..b10068), so LIFELINE_LLAMA_NO_LOAD_FILE_COUNT_ONLY makes that op a no-op there.
    string(FIND "${_llama_h}" "If tokens_out is NULL" _at)
    if(_at EQUAL -1)
      target_compile_definitions(lifeline_llama INTERFACE LIFELINE_LLAMA_NO_LOAD_FILE_COUNT_ONLY=1)
    endif()
    if(_model_file)
      target_compile_definitions(lifeline_llama INTERFACE LIFELINE_LLAMA_MODEL_FILE=1)
      message(STATUS "lifeline: ${LIFELINE_LLAMA_DIR}/include/llama.h has no llama_model_init_from_user: the tiny models are loaded from GGUF files")
    endif()
    set(LIFELINE_LLAMA ON)
  endif()
endif()
