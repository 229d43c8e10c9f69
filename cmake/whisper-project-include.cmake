# Included into whisper.cpp's own CMake run right after its project() call (CMAKE_PROJECT_INCLUDE, set by
# cmake/LifelineWhisper.cmake): once every target is defined, ggml's libraries compile at -O0 after the lane's
# -O1 (sanitizers and coverage as the lane has them) while whisper.cpp itself keeps -O1. Measured in the asan
# lane (2026-11-27): the whole build took 173 CPU-s at -O1 and 57 at -O0; with src/whisper.cpp at -O0 a model
# load took 1-1.5 s (libstdc++'s maps of the 51,865-token vocabulary, instantiated in whisper.cpp), which every
# bind of a fuzz input pays.
# LIFELINE_WHISPER_GGML_OPTIONS (from cmake/LifelineWhisper.cmake): -O0, and the UBSan checks that recover in ggml's
# objects only (core/suppressions/ubsan-upstream.supp names the findings suppressed there).
separate_arguments(_lifeline_ggml_options UNIX_COMMAND "${LIFELINE_WHISPER_GGML_OPTIONS}")
cmake_language(DEFER CALL set_property TARGET ggml-base ggml-cpu ggml APPEND PROPERTY COMPILE_OPTIONS
               ${_lifeline_ggml_options})
# LIFELINE_WHISPER_GGML_DEFINITIONS: ggml-base's build-time settings (cmake/LifelineWhisper.cmake says which and why).
if(LIFELINE_WHISPER_GGML_DEFINITIONS)
  cmake_language(DEFER CALL set_property TARGET ggml-base APPEND PROPERTY COMPILE_DEFINITIONS
                 ${LIFELINE_WHISPER_GGML_DEFINITIONS})
endif()
# ggml-cpu's vector kernels stay at -O1: at -O0 each half-float conversion of the decoder's logits product is a
# call (ggml_lookup_fp16_to_fp32: 18% of a corpus replay's time in perf, 2026-11-27); the file compiles in seconds.
cmake_language(DEFER CALL set_source_files_properties ${CMAKE_SOURCE_DIR}/ggml/src/ggml-cpu/vec.cpp
               DIRECTORY ${CMAKE_SOURCE_DIR}/ggml/src PROPERTIES COMPILE_OPTIONS -O1)
