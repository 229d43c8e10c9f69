# One-call registration helpers. Each builds for the current lane (cmake/LifelineLane.cmake) and adds its
# CTest tests; nothing else in the tree needs to know which lane it is in.
#
#   lifeline_add_executable(name SOURCES ... LIBS ...)   any project executable (sanitizer defaults, launcher)
#   lifeline_add_gtest(name SOURCES ... LIBS ... LABELS ...)
#   lifeline_add_fuzz_target(name LIBS ... LABELS ...)   targets/<name>.cc + corpus.<name> (+ fuzz-smoke.<name>)
#   lifeline_register_reproducers()                     one test pair per repro/<id>/ and lane; call last

include(GoogleTest)

set(LIFELINE_CLI ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/harness/py/lifeline_main.py)

function(lifeline_add_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} lifeline_core lifeline_sanitizer_defaults lifeline_lane)
  if(LIFELINE_TEST_LAUNCHER)
    # CTest runs target commands through this (valgrind memcheck in the valgrind lane).
    set_target_properties(${name} PROPERTIES CROSSCOMPILING_EMULATOR "${LIFELINE_TEST_LAUNCHER}")
  endif()
endfunction()

function(lifeline_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  lifeline_add_executable(${name} SOURCES ${ARG_SOURCES} LIBS ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # Only the first label reaches the discovered tests: CMake 3.25's gtest_discover_tests flattens a list
  # value in PROPERTIES, so `unit` sticks and ARG_LABELS do not (`ctest -L python` selects the corpus,
  # reproducer and smoke tests of a label, not its unit tests). Kept here so the labels are declared.
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       TEST_PREFIX "unit." PROPERTIES LABELS "unit;${ARG_LABELS}")
endfunction()

# A fuzz target: targets/<name>.cc linked with libFuzzer (fuzz lane), the replay driver (other lanes) or
# ${LIFELINE_FUZZING_ENGINE} (external engine; built only, nothing registered).
# Registers corpus.<name> (replays corpus/<name>/ in every lane) and, in the fuzz lane, fuzz-smoke.<name>
# (a bounded run with a fixed seed from the seed corpus into a scratch corpus).
function(lifeline_add_fuzz_target name)
  cmake_parse_arguments(ARG "" "SMOKE_RUNS" "LIBS;LABELS" ${ARGN})
  if(NOT ARG_SMOKE_RUNS)
    set(ARG_SMOKE_RUNS 20000)
  endif()
  lifeline_add_executable(${name} SOURCES ${PROJECT_SOURCE_DIR}/targets/${name}.cc LIBS ${ARG_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/targets)
  if(LIFELINE_ENGINE STREQUAL "libfuzzer")
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_compile_definitions(${name} PRIVATE LIFELINE_LIBFUZZER=1)  # libFuzzer flags are valid in argv
  elseif(LIFELINE_ENGINE STREQUAL "external")
    # $LIB_FUZZING_ENGINE goes where OSS-Fuzz puts it, after the objects: a flag (-fsanitize=fuzzer) or an
    # archive holding main() (AFL++'s libAFLDriver.a) both work there.
    target_link_libraries(${name} PRIVATE ${LIFELINE_FUZZING_ENGINE_ARGS})
    if(LIFELINE_ENGINE_IS_LIBFUZZER)
      target_compile_definitions(${name} PRIVATE LIFELINE_LIBFUZZER=1)
    endif()
  else()
    target_sources(${name} PRIVATE $<TARGET_OBJECTS:lifeline_replay_main>)
  endif()
  set_property(GLOBAL PROPERTY LIFELINE_TARGET_LABELS_${name} "${ARG_LABELS}")
  set_property(GLOBAL APPEND PROPERTY LIFELINE_FUZZ_TARGETS ${name})
  if(LIFELINE_ENGINE STREQUAL "external")
    return()  # built for another machine's engine: no CTest registration (.clusterfuzzlite/build.sh)
  endif()

  set(corpus ${PROJECT_SOURCE_DIR}/corpus/${name})
  if(LIFELINE_ENGINE STREQUAL "libfuzzer")
    # -runs=0 executes every seed once and writes nothing into the seed directory. libFuzzer refuses an
    # artifact prefix whose directory does not exist.
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/artifacts)
    add_test(NAME corpus.${name} COMMAND ${name} -runs=0 -artifact_prefix=${CMAKE_BINARY_DIR}/artifacts/ ${corpus})
    add_test(NAME fuzz-smoke.${name}
             COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${name}> -DSEEDS=${corpus}
                     -DWORK=${CMAKE_BINARY_DIR}/fuzz-smoke/${name} -DRUNS=${ARG_SMOKE_RUNS}
                     -DDICT=${PROJECT_SOURCE_DIR}/corpus/${name}.dict
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_fuzz_smoke.cmake)
    set_tests_properties(fuzz-smoke.${name} PROPERTIES LABELS "fuzz-smoke;${ARG_LABELS}" TIMEOUT 300)
  else()
    add_test(NAME corpus.${name} COMMAND ${name} ${corpus})
  endif()
  set_tests_properties(corpus.${name} PROPERTIES LABELS "corpus;${ARG_LABELS}")
endfunction()

# repro/<id>/bug.json lists, per input, the lanes in which the bug must be caught and the signature it
# must be caught with. For each lane listed that is this build's lane:
#   repro.<id>.<lane>.fixed          every input runs clean on the fixed code
#   repro.<id>.<lane>.reintroduced   with LIFELINE_REINTRODUCE=<id>, every input listed for the lane fails
#                                    with its expected crash type and frame
# plus, in every lane, repro.<id>.bug-json, which validates the file. A missing or corrupt bug.json
# registers only that test, which fails naming the file and the problem; configuration goes on.
# New folders are picked up without a CMake edit (the glob is re-checked at build time).
function(lifeline_register_reproducers)
  file(GLOB entries LIST_DIRECTORIES true CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/repro/*)
  foreach(dir IN LISTS entries)
    if(NOT IS_DIRECTORY ${dir})
      continue()
    endif()
    get_filename_component(id ${dir} NAME)
    set(json ${dir}/bug.json)
    add_test(NAME repro.${id}.bug-json COMMAND ${LIFELINE_CLI} repro-check --validate-only --repro-dir ${dir})
    set_tests_properties(repro.${id}.bug-json PROPERTIES LABELS "repro")
    if(NOT EXISTS ${json})
      continue()
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${json})
    file(READ ${json} content)
    string(JSON target ERROR_VARIABLE err GET "${content}" target)
    string(JSON n ERROR_VARIABLE err2 LENGTH "${content}" reproducers)
    if(err OR err2 OR NOT n GREATER 0)
      continue()  # repro.<id>.bug-json says what is wrong
    endif()
    set(lanes "")
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON m ERROR_VARIABLE err LENGTH "${content}" reproducers ${i} expect)
      if(err OR m EQUAL 0)
        continue()
      endif()
      math(EXPR mlast "${m} - 1")
      foreach(j RANGE ${mlast})
        string(JSON lane MEMBER "${content}" reproducers ${i} expect ${j})
        list(APPEND lanes ${lane})
      endforeach()
    endforeach()
    if(NOT LIFELINE_LANE IN_LIST lanes)
      continue()
    endif()
    if(TARGET ${target})
      set(binary $<TARGET_FILE:${target}>)
      get_property(target_labels GLOBAL PROPERTY LIFELINE_TARGET_LABELS_${target})
      set(labels "repro;${target_labels}")
    else()
      set(binary "${CMAKE_BINARY_DIR}/targets/${target}")  # repro-check reports the unknown target
      set(labels "repro")
    endif()
    foreach(mode fixed reintroduced)
      add_test(NAME repro.${id}.${LIFELINE_LANE}.${mode}
               COMMAND ${LIFELINE_CLI} repro-check --repro-dir ${dir} --lane ${LIFELINE_LANE}
                       --mode ${mode} --binary ${binary} -- ${LIFELINE_TEST_LAUNCHER})
      set_tests_properties(repro.${id}.${LIFELINE_LANE}.${mode} PROPERTIES LABELS "${labels}" TIMEOUT 600)
    endforeach()
  endforeach()
endfunction()
