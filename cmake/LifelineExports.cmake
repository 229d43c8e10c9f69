# `lifeline export`'s standalone reproducers, generated, built and checked in the asan lane (cli/lifeline/export*.py,
# EXPORTERS: ggml_graph_topology and ggml_vulkan_graph_topology export C on ggml, whisper_string_handoff C on
# whisper.h, torch_capsule_lifecycle Python), and in the fuzz lane for llama_memory_differential (C on llama.h,
# linked with the lane's llama.cpp and ggml; build/fuzz/exports/<id>/, repro.<id>.fuzz.export):
#
#   build/asan/exports/<id>/<input>.c|.py  generated at build time from repro/<id>/<input>: the target decodes
#                                          the input into its program (`--program decode`), the exporter writes
#                                          it in upstream's terms (`lifeline export-source`; never checked in)
#   build/asan/exports/<id>/<input>        a C file compiled on its own, linked with the lane's ggml only (the pinned one, or --ggml-source's) (ggml,
#                                          ggml-base, ggml-cpu; ggml-vulkan's sources for the Vulkan target) and
#                                          the lane's flags (lifeline_lane: sanitizers, -O1, line tables, -UNDEBUG); no
#                                          lifeline library, no compiled-in sanitizer options
#   repro.<id>.asan.export                 runs each and checks it fails with its signature (bug.json's "export"
#                                          signature, else the lane's; a Python file with its AssertionError):
#                                          `lifeline export-check`. Against another ggml source (--ggml-source) the
#                                          lane does not build the C programs: the test does, and one that does not
#                                          compile there (an API that tree lacks) is skipped with the error
#
# So an exported program that stops reproducing its finding fails the suite. As for the reproducer tests,
# CMake never parses bug.json: `lifeline export-plan` prints what to build.

function(lifeline_register_exports)
  # The asan lane checks every exporter's files but llama_memory_differential's, which the fuzz lane checks (its
  # target is built in the fuzz and tsan lanes only; EXPORTERS' "lane" says which, and export-plan lists by it).
  if(NOT LIFELINE_LANE STREQUAL "asan" AND NOT LIFELINE_LANE STREQUAL "fuzz")
    return()
  endif()
  get_filename_component(root "${LIFELINE_REPRO_DIR}" ABSOLUTE)
  lifeline_read_cli_plan(export-plan ${root} "the export tests" lines)
  file(GLOB _exporters CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cli/lifeline/exporters/*.py)
  file(GLOB _export_modules CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cli/lifeline/export*.py)  # export.py and its parts
  set(_generator ${_exporters} ${_export_modules})
  foreach(line IN LISTS lines)
    string(REPLACE "|" ";" fields "${line}")
    list(GET fields 1 id)
    list(GET fields 2 target)
    list(GET fields 3 ext)
    list(GET fields 4 inputs)
    if(NOT TARGET ${target})
      # A target this lane cannot build (no ggml, no torch): the export test is registered as skipped, with the
      # reason, as the target's own tests are.
      get_property(unavailable GLOBAL PROPERTY LIFELINE_UNAVAILABLE_UPSTREAM_TARGETS)
      get_property(reason GLOBAL PROPERTY LIFELINE_UNAVAILABLE_REASON_${target})
      if(target IN_LIST unavailable OR LIFELINE_GGML_SKIP_REASON)
        lifeline_add_upstream_skip(repro.${id}.${LIFELINE_LANE}.export ${reason})
      endif()
      continue()
    endif()
    string(REPLACE "," ";" inputs "${inputs}")
    set(dir ${CMAKE_BINARY_DIR}/exports/${id})
    set(sources)
    set(executables)
    foreach(input IN LISTS inputs)
      add_custom_command(OUTPUT ${dir}/${input}.${ext}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
        COMMAND ${LIFELINE_CLI} export-source --repro-dir ${root}/${id} --input ${input} --out ${dir}/${input}.${ext}
        DEPENDS ${target} ${root}/${id}/${input} ${root}/${id}/bug.json ${_generator}
        COMMENT "lifeline export: ${id}/${input} as a standalone ${ext} file")
      list(APPEND sources ${dir}/${input}.${ext})
      if(ext STREQUAL "c")
        string(MAKE_C_IDENTIFIER "export_${id}_${input}" name)
        add_executable(${name} ${dir}/${input}.c)
        list(APPEND executables ${name})
        if(LIFELINE_GGML_OTHER_SOURCE)
          # Against another ggml source a program may not compile (an API the tree lacks): its test builds it.
          set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
        endif()
        set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${dir} OUTPUT_NAME ${input} C_STANDARD 11
                                                 LINKER_LANGUAGE CXX)
        if(target STREQUAL "whisper_string_handoff")  # whisper.h and whisper.cpp's own ggml, as the lane built them
          target_link_libraries(${name} PRIVATE lifeline_whisper lifeline_lane)
        elseif(target STREQUAL "llama_memory_differential")  # llama.h and the lane's ggml, as the lane built them
          target_link_libraries(${name} PRIVATE lifeline_llama lifeline_lane)
        else()
          target_include_directories(${name} PRIVATE ${LIFELINE_GGML_DIR}/include)
          target_link_libraries(${name} PRIVATE ggml ggml-base ggml-cpu lifeline_lane)
        endif()
        if(target STREQUAL "ggml_vulkan_graph_topology")
          target_link_libraries(${name} PRIVATE lifeline_ggml_vulkan)  # ggml-vulkan's own sources, built per lane
        endif()
      endif()
    endforeach()
    if(ext STREQUAL "py")
      string(MAKE_C_IDENTIFIER "export_${id}" name)
      add_custom_target(${name} ALL DEPENDS ${sources})
    endif()
    set(other "")
    if(ext STREQUAL "c" AND LIFELINE_GGML_OTHER_SOURCE)  # as for the pinned reproducer tests
      set(other --other-source "${LIFELINE_GGML_OTHER_SOURCE}" --build ${CMAKE_BINARY_DIR} ${executables})
    endif()
    add_test(NAME repro.${id}.${LIFELINE_LANE}.export
             COMMAND ${LIFELINE_CLI} export-check --repro-dir ${root}/${id} --lane ${LIFELINE_LANE} --exe-dir ${dir}
                     ${other})
    set_tests_properties(repro.${id}.${LIFELINE_LANE}.export PROPERTIES LABELS "repro;upstream;upstream-open" TIMEOUT 300)
    if(other)
      # One build at a time in the lane's folder: ninja takes no lock of its own.
      set_tests_properties(repro.${id}.${LIFELINE_LANE}.export PROPERTIES SKIP_RETURN_CODE 77
                           RESOURCE_LOCK lifeline-lane-build)
    endif()
  endforeach()
endfunction()
