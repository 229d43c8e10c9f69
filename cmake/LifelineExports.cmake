# `lifeline export`'s standalone reproducers, generated, built and checked in the lane that builds their
# exporter (cli/lifeline/export.py, EXPORTERS: ggml_graph_topology_export in asan):
#
#   build/<lane>/exports/<id>/<input>.c   generated at build time from repro/<id>/<input> by the exporter
#                                         (never checked in)
#   build/<lane>/exports/<id>/<input>     that file compiled on its own, linked with the pinned ggml only
#                                         (ggml, ggml-base, ggml-cpu) and the lane's flags (lifeline_lane:
#                                         sanitizers, -O1 -g, -UNDEBUG); no lifeline library, no compiled-in
#                                         sanitizer options
#   repro.<id>.<lane>.export              runs each and checks it fails with its signature (bug.json's
#                                         "export" signature, else the lane's): `lifeline export-check`
#
# So an exported program that stops reproducing its finding fails the suite. As for the reproducer tests,
# CMake never parses bug.json: `lifeline export-plan` prints what to build.

function(lifeline_register_exports)
  if(NOT TARGET ggml_graph_topology_export OR NOT LIFELINE_LANE STREQUAL "asan")
    return()
  endif()
  get_filename_component(root "${LIFELINE_REPRO_DIR}" ABSOLUTE)
  lifeline_read_cli_plan(export-plan ${root} "the export tests" lines)
  foreach(line IN LISTS lines)
    string(REPLACE "|" ";" fields "${line}")
    list(GET fields 1 id)
    list(GET fields 3 exporter)
    list(GET fields 4 inputs)
    if(NOT TARGET ${exporter})
      continue()  # an exporter this build does not have: export-check fails naming the missing programs
    endif()
    string(REPLACE "," ";" inputs "${inputs}")
    set(dir ${CMAKE_BINARY_DIR}/exports/${id})
    foreach(input IN LISTS inputs)
      add_custom_command(OUTPUT ${dir}/${input}.c
        COMMAND $<TARGET_FILE:${exporter}> --label ${id}/${input} -- ${root}/${id}/${input} ${dir}/${input}.c
        DEPENDS ${exporter} ${root}/${id}/${input}
        COMMENT "lifeline export: ${id}/${input} as a standalone C file")
      string(MAKE_C_IDENTIFIER "export_${id}_${input}" name)
      add_executable(${name} ${dir}/${input}.c)
      set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${dir} OUTPUT_NAME ${input} C_STANDARD 11
                                               LINKER_LANGUAGE CXX)
      target_include_directories(${name} PRIVATE ${LIFELINE_GGML_DIR}/include)
      target_link_libraries(${name} PRIVATE ggml ggml-base ggml-cpu lifeline_lane)
    endforeach()
    add_test(NAME repro.${id}.${LIFELINE_LANE}.export
             COMMAND ${LIFELINE_CLI} export-check --repro-dir ${root}/${id} --lane ${LIFELINE_LANE} --exe-dir ${dir})
    set_tests_properties(repro.${id}.${LIFELINE_LANE}.export PROPERTIES LABELS "repro;upstream;upstream-open" TIMEOUT 300)
  endforeach()
endfunction()
