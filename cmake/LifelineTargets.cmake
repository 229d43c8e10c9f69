# One-call registration helpers. Each builds for the current lane (cmake/LifelineLane.cmake) and adds its
# CTest tests; nothing else in the tree needs to know which lane it is in.
#
#   lifeline_add_executable(name SOURCES ... LIBS ...)   any project executable (sanitizer defaults, launcher)
#   lifeline_add_gtest(name SOURCES ... LIBS ... LABELS ... LANES ...)
#   lifeline_add_fuzz_target(name LIBS ... LABELS ...)   targets/<name>.cc + corpus.<name>, regression.<name>
#                                                       (+ fuzz-smoke.<name>)
#   lifeline_register_reproducers()                     one test pair per repro/<id>/ and lane; call last

include(GoogleTest)

# -S: no site module. The CLI imports the standard library only, and ctest starts it about 950 times a fresh
# clone's run (a reproducer check each); site's search of the installed packages was 10 of its 60-70 ms.
set(LIFELINE_CLI ${Python3_EXECUTABLE} -S ${PROJECT_SOURCE_DIR}/cli/lifeline_main.py)
# The lane's fuzz targets and their labels, written afresh by every configure (lifeline_add_fuzz_target).
file(WRITE ${CMAKE_BINARY_DIR}/fuzz-targets.txt "")
# ... and the upstream targets it cannot build on its source, each with why (lifeline_add_unavailable_target).
file(WRITE ${CMAKE_BINARY_DIR}/skipped-targets.txt "")

function(lifeline_add_executable name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} lifeline_core lifeline_sanitizer_defaults lifeline_lane)
  if(LIFELINE_TEST_LAUNCHER)
    # CTest runs target commands through this (valgrind memcheck in the valgrind lane).
    set_target_properties(${name} PROPERTIES CROSSCOMPILING_EMULATOR "${LIFELINE_TEST_LAUNCHER}")
  endif()
endfunction()

# `source` (a text file, relative to the current source directory) as `const char var[]` in
# <out_dir>/<file name>.inc, rewritten only when the text changes; editing `source` re-runs configuration.
function(lifeline_embed_text out_dir source var)
  set(path ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  file(READ ${path} text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  get_filename_component(name ${source} NAME)
  set(content "// Generated from ${source} by lifeline_embed_text (cmake/LifelineTargets.cmake).\n")
  string(APPEND content "constexpr const char ${var}[] = R\"LIFELINE(${text})LIFELINE\";\n")
  set(old "")
  if(EXISTS ${out_dir}/${name}.inc)
    file(READ ${out_dir}/${name}.inc old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${out_dir}/${name}.inc "${content}")
  endif()
endfunction()

# LANES: the lanes besides asan that build and run the binary, by what each lane is for (DESIGN.md's lane
# table): tsan the tests of code that runs on several threads, lsan the DLPack ledger's and accounting
# oracle's, valgrind what only memcheck checks (the client requests' glue) and the negative control. The fuzz
# lane builds the fuzz binaries, never the unit tests: it compiles the same code with asan's sanitizers, so its runs
# of them repeated asan's, at 45 s of its ctest (2026-11-28). The coverage lane builds targets only.
function(lifeline_add_gtest name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS;LANES" ${ARGN})
  if(NOT LIFELINE_LANE STREQUAL "asan" AND NOT LIFELINE_LANE IN_LIST ARG_LANES)
    return()
  endif()
  lifeline_add_executable(${name} SOURCES ${ARG_SOURCES} LIBS ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  # A test's own files compile at -O0, after the lane's -O1 (sanitizers, coverage and everything else as the lane
  # has them): the code under test is in the libraries, built at the lane's -O1. At -O1 clang spent 2 to 2.5 times
  # as long on them (eval_test.cc 7.8 s against 3.1 s, graph/codec_test.cc 10.9 s against 5.0 s, asan lane),
  # in every lane that builds them.
  set_property(SOURCE ${ARG_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -O0)
  # Nor libFuzzer's coverage instrumentation (the asan lane compiles as the fuzz lane, LifelineLane.cmake): only a
  # fuzz target reads the counters, and no lane that fuzzes builds a test binary. The libraries keep it. Without it
  # a test's file compiled in about three quarters of the time (graph/codec_test.cc, 2026-11-28).
  if(LIFELINE_SANCOV)
    set_property(SOURCE ${ARG_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -fno-sanitize=fuzzer-no-link)
  endif()
  # Only the first label reaches the discovered tests: CMake 3.25's gtest_discover_tests flattens a list
  # value in PROPERTIES, so `unit` sticks and ARG_LABELS do not (`ctest -L python` selects the corpus,
  # reproducer and smoke tests of a label, not its unit tests). Kept here so the labels are declared.
  if(LIFELINE_TEST_LAUNCHER)
    lifeline_add_gtest_batch(${name} "unit;${ARG_LABELS}")
    return()
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
                       TEST_PREFIX "unit." PROPERTIES LABELS "unit;${ARG_LABELS}")
endfunction()

# The lanes whose tests run under a launcher (valgrind): the binary runs once, as the test unit.<name>, and
# each of its cases is still a test of its own, unit.<Suite>.<Case>, passing only when the run's XML report
# says it passed (tests/lanes/gtest_batch.py, which says why). The cases are listed when the binary is built;
# ctest includes the list, or a failing test naming the binary when it is missing.
function(lifeline_add_gtest_batch name labels)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/gtest-batch)
  set(xml ${dir}/${name}.xml)
  set(cases ${dir}/${name}_cases.cmake)
  set(batch ${PROJECT_SOURCE_DIR}/tests/lanes/gtest_batch.py)
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${Python3_EXECUTABLE} ${batch} discover $<TARGET_FILE:${name}> ${cases} ${name} ${xml} ${labels}
    VERBATIM)
  add_test(NAME unit.${name}
           COMMAND ${Python3_EXECUTABLE} ${batch} run ${xml} -- ${LIFELINE_TEST_LAUNCHER} $<TARGET_FILE:${name}>)
  # COST: the longest tests of the lane, started first.
  set_tests_properties(unit.${name} PROPERTIES LABELS "${labels}" FIXTURES_SETUP gtest.${name} COST 1000
                       TIMEOUT 900)
  set(include ${dir}/${name}_include.cmake)
  file(WRITE ${include}
       "if(EXISTS [==[${cases}]==])\n"
       "  include([==[${cases}]==])\n"
       "else()\n"
       "  add_test(unit.${name}.cases-not-listed [==[${Python3_EXECUTABLE}]==] -c [==[import sys; print('FAIL: ${name} is not built, so its cases are not listed (${cases})'); sys.exit(1)]==])\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include})
endfunction()

# Executable `name` from targets/<source>.cc in `dir`, linked with the lane's engine: libFuzzer (fuzz lane),
# ${LIFELINE_FUZZING_ENGINE} (external engine) or the replay driver (other lanes). Registers nothing.
function(lifeline_add_fuzz_executable name source dir)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  lifeline_add_executable(${name} SOURCES ${PROJECT_SOURCE_DIR}/targets/${source}.cc LIBS ${ARG_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${dir} OUTPUT_NAME ${source})
  if(LIFELINE_PROGRAM_CODEC)
    # LIFELINE_TARGET_CODEC (harness/programs/common/codec.h) defines the target's codec. Only here: the libraries
    # compile the same with and without codecs, so the fuzz lane can take the asan lane's (LifelineLane.cmake).
    target_compile_definitions(${name} PRIVATE LIFELINE_PROGRAM_CODEC)
  endif()
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
endfunction()

# A fuzz target: targets/<name>.cc linked with libFuzzer (fuzz lane), the replay driver (other lanes) or
# ${LIFELINE_FUZZING_ENGINE} (external engine; built only, nothing registered).
# Registers fuzz-smoke.<name> where the lane fuzzes it (the fuzz lane; the tsan lane for "threads" targets): a
# bounded run with a fixed seed from the seed corpus into a scratch corpus, which any crash fails; corpus.<name>
# (replays corpus/<name>/) in the lanes without it; and regression.<name> (corpus/regression/<name>/, when there
# is one) in every lane but fuzz.
# NO_VALGRIND_CORPUS: the valgrind lane does not replay corpus/<name>/ (its reproducers still run there): for a
# target whose inputs take seconds each under memcheck.
# SEEDS_IN_FUZZ_SMOKE: nor does the asan lane: the fuzz lane's fuzz-smoke.<name> runs every seed on the same objects
# (taken from the asan lane's compiler cache) with the same sanitizer options, and with libFuzzer's leak check after
# each input, which the target's .options leave on. For a target whose seeds take seconds each.
function(lifeline_add_fuzz_target name)
  cmake_parse_arguments(ARG "NO_VALGRIND_CORPUS;SEEDS_IN_FUZZ_SMOKE" "SMOKE_RUNS;TSAN_SMOKE_RUNS" "LIBS;LABELS" ${ARGN})
  if(NOT ARG_SMOKE_RUNS)
    set(ARG_SMOKE_RUNS 20000)
  endif()
  # TSAN_SMOKE_RUNS: the tsan lane's run count where SMOKE_RUNS would cost that lane too much time.
  if(ARG_TSAN_SMOKE_RUNS AND LIFELINE_LANE STREQUAL "tsan")
    set(ARG_SMOKE_RUNS ${ARG_TSAN_SMOKE_RUNS})
  endif()
  # The tsan lane builds only the targets that start threads (label "threads"): in the others TSan has no second
  # thread to watch, and none of their reproducers lists the lane.
  if(LIFELINE_LANE STREQUAL "tsan" AND NOT "threads" IN_LIST ARG_LABELS)
    return()
  endif()
  lifeline_add_fuzz_executable(${name} ${name} ${CMAKE_BINARY_DIR}/targets LIBS ${ARG_LIBS})
  set_property(GLOBAL PROPERTY LIFELINE_TARGET_LIBS_${name} "${ARG_LIBS}")
  set_property(GLOBAL PROPERTY LIFELINE_TARGET_LABELS_${name} "${ARG_LABELS}")
  set_property(GLOBAL APPEND PROPERTY LIFELINE_FUZZ_TARGETS ${name})
  if(LIFELINE_ENGINE STREQUAL "external")
    return()  # built for another machine's engine: no CTest registration (.clusterfuzzlite/build.sh)
  endif()

  # What `lifeline fuzz` may run from this lane: one line per target, its name and labels (lifeline/paths.py).
  file(APPEND ${CMAKE_BINARY_DIR}/fuzz-targets.txt "${name} ${ARG_LABELS}\n")

  set(corpus ${PROJECT_SOURCE_DIR}/corpus/${name})
  # The tsan lane fuzzes (and smoke-tests) only the targets that start threads: elsewhere TSan has no second
  # thread to watch, and its libFuzzer build costs what the fuzz lane's smoke tests already cover.
  set(smoke ON)
  if(LIFELINE_LANE STREQUAL "tsan" AND NOT "threads" IN_LIST ARG_LABELS)
    set(smoke OFF)
  endif()
  # corpus.<name> where no fuzz-smoke.<name> runs: fuzz-smoke starts by running every seed (libFuzzer's INITED
  # pass runs the whole seed corpus whatever -runs says) and fails on any crash, so beside it a replay of the
  # same seeds with the same binary would only run them twice.
  if(NOT (LIFELINE_ENGINE STREQUAL "libfuzzer" AND smoke) AND
     NOT (ARG_NO_VALGRIND_CORPUS AND LIFELINE_LANE STREQUAL "valgrind") AND
     NOT (ARG_SEEDS_IN_FUZZ_SMOKE AND LIFELINE_LANE STREQUAL "asan"))
    lifeline_add_replay_test(corpus.${name} ${name} ${corpus})
    set_tests_properties(corpus.${name} PROPERTIES LABELS "corpus;${ARG_LABELS}")
  endif()
  if(LIFELINE_ENGINE STREQUAL "libfuzzer" AND smoke)
    add_test(NAME fuzz-smoke.${name}
             COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${name}> -DTARGET=${name} -DSEEDS=${corpus}
                     -DPYTHON=${Python3_EXECUTABLE} -DCLI_MAIN=${PROJECT_SOURCE_DIR}/cli/lifeline_main.py
                     -DWORK=${CMAKE_BINARY_DIR}/fuzz-smoke/${name} -DRUNS=${ARG_SMOKE_RUNS}
                     -DDICT=${PROJECT_SOURCE_DIR}/corpus/${name}.dict
                     -P ${PROJECT_SOURCE_DIR}/cmake/run_fuzz_smoke.cmake)
    set_tests_properties(fuzz-smoke.${name} PROPERTIES LABELS "fuzz-smoke;${ARG_LABELS}" TIMEOUT 300
                         COST 100)  # among the longest of a lane (10-80 s): started before the short ones
  endif()
  # regression.<name>: the coverage-merged regression corpus beside the seeds (corpus/regression/<name>/,
  # `lifeline corpus merge --into regression`), replayed the same way in every lane that builds the target but
  # fuzz, whose objects and sanitizer options are the asan lane's (it takes them from the compiler cache): there
  # the replay would run the same code on the same inputs a second time.
  lifeline_regression_corpus(${name} regression)
  if(regression AND NOT LIFELINE_LANE STREQUAL "fuzz")
    lifeline_add_replay_test(regression.${name} ${name} ${regression})
    set_tests_properties(regression.${name} PROPERTIES LABELS "corpus;regression;${ARG_LABELS}" TIMEOUT 600)
  endif()
  foreach(test corpus.${name} regression.${name} fuzz-smoke.${name})
    if(TEST ${test})
      lifeline_ggml_test_processors(${name} ${test})
    endif()
  endforeach()
endfunction()

# Test `test`: target `target` runs every input of `dir` once. With libFuzzer, -runs=0 executes each and writes
# nothing into `dir` (libFuzzer refuses an artifact prefix whose directory does not exist); elsewhere the replay
# driver runs them.
# The target's `entropic = 0` (targets/<target>.options, read by `lifeline libfuzzer-flags` as for every run lifeline
# starts) is passed on: entropic keeps per-feature frequencies for every input libFuzzer loads, -runs=0 included,
# which made corpus.ggml_graph_topology's 729 runs take 10.9 s instead of 2.9 s (fuzz lane, 2026-11-27); it only
# schedules mutations, so what a replay checks is the same. The target's other settings change what is detected
# (detect_leaks) and stay out. Settings that cannot be read fail fuzz-smoke.<target>, which reads them too.
function(lifeline_add_replay_test test target dir)
  if(LIFELINE_ENGINE STREQUAL "libfuzzer")
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/artifacts)
    set(options ${PROJECT_SOURCE_DIR}/targets/${target}.options)
    if(EXISTS ${options})
      set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${options})
    endif()
    # Asked once per target (its corpus and regression replays both come here).
    get_property(asked GLOBAL PROPERTY LIFELINE_LIBFUZZER_FLAGS_${target} SET)
    if(NOT asked)
      execute_process(COMMAND ${LIFELINE_CLI} libfuzzer-flags ${target} OUTPUT_VARIABLE flags ERROR_QUIET)
      string(REPLACE "\n" ";" flags "${flags}")
      set_property(GLOBAL PROPERTY LIFELINE_LIBFUZZER_FLAGS_${target} "${flags}")
    endif()
    get_property(flags GLOBAL PROPERTY LIFELINE_LIBFUZZER_FLAGS_${target})
    set(entropic "")
    if("-entropic=0" IN_LIST flags)
      set(entropic -entropic=0)
    endif()
    add_test(NAME ${test} COMMAND ${target} -runs=0 ${entropic} -artifact_prefix=${CMAKE_BINARY_DIR}/artifacts/ ${dir})
  else()
    add_test(NAME ${test} COMMAND ${target} ${dir})
  endif()
endfunction()

# corpus/regression/<name>/ in `out_var` when it holds inputs, else "". Adding or removing a file there
# re-runs configuration, so a new regression corpus is registered without a CMake edit.
function(lifeline_regression_corpus name out_var)
  set(dir ${PROJECT_SOURCE_DIR}/corpus/regression/${name})
  set(${out_var} "" PARENT_SCOPE)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/corpus/regression)  # a target's folder made there: configure again
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${PROJECT_SOURCE_DIR}/corpus/regression)
  endif()
  if(IS_DIRECTORY ${dir})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${dir})
    file(GLOB inputs ${dir}/*)
    if(inputs)
      set(${out_var} ${dir} PARENT_SCOPE)
    endif()
  endif()
endfunction()

# repro/<id>/bug.json lists, per input, the lanes in which the bug must be caught and the signature it
# must be caught with. For each lane listed that is this build's lane:
#   repro.<id>.<lane>.fixed          every input runs clean on the fixed code
#   repro.<id>.<lane>.reintroduced   with LIFELINE_REINTRODUCE=<id>, every input listed for the lane fails
#                                    with its expected crash type and frame
# A finding in upstream code that upstream has not fixed ("status": "upstream-open") has no fixed code and no
# switch; instead:
#   repro.<id>.<lane>.pinned         every input still fails with its signature on the pinned upstream
#                                    (with the finding's guard off, LIFELINE_UNGUARD=<guard>, when it has one)
#   repro.<id>.<lane>.guarded        with a "guard": every input runs clean with every guard on
# A documented bug forward-ported into upstream ("upstream_variant": target, patch, reproducers) adds:
#   repro.<id>.upstream.<lane>.fixed         the inputs run clean on the target built against upstream
#   repro.<id>.upstream.<lane>.reintroduced  ... and fail with their signature on the build with the patch
# Upstream tests of a lane that wants upstream ggml but has no source are registered as skipped, with the
# reason. Every lane also gets repro.<id>.bug-json, which validates the file. A missing, corrupt or invalid
# bug.json registers only that test, which fails naming the file and the problem; configuration goes on.
# New folders are picked up without a CMake edit (the glob is re-checked at build time).
#
# CMake never parses bug.json: `lifeline repro-plan` (cli/lifeline/plan.py) reads every folder through
# cli/lifeline/repro.py, the reader repro-check uses, and prints what to register for this lane. If it
# fails, configuration stops with its message. LIFELINE_REPRO_DIR points it at another copy of repro/
# (tests/cli/test_configure.py configures one with a malformed bug.json).
set(LIFELINE_REPRO_DIR "${PROJECT_SOURCE_DIR}/repro" CACHE PATH "the folder of reproducers, repro/<bug-id>/")

# repro-check tests `names` (one per mode in `modes`), or, when `target` needs upstream ggml that this lane
# lacks, the same names as skipped tests.
function(_lifeline_repro_tests id dir target binary labels prefix modes extra)
  get_property(target_labels GLOBAL PROPERTY LIFELINE_TARGET_LABELS_${target})
  set(all_labels repro ${labels} ${target_labels})
  foreach(mode IN LISTS modes)
    set(test repro.${id}.${prefix}${LIFELINE_LANE}.${mode})
    get_property(unavailable GLOBAL PROPERTY LIFELINE_UNAVAILABLE_UPSTREAM_TARGETS)
    if(target IN_LIST unavailable)
      get_property(reason GLOBAL PROPERTY LIFELINE_UNAVAILABLE_REASON_${target})
      if(reason)
        lifeline_add_upstream_skip(${test} "${reason}")
      else()
        lifeline_add_upstream_skip(${test})
      endif()
      continue()
    endif()
    string(REPLACE "@MODE@" "${mode}" bin "${binary}")
    # Built from another ggml source (--ggml-source): an input that runs clean there is "not reproduced on this
    # source: fixed?", a skip with that reason (repro.py NOT_REPRODUCED_EXIT), not a failure; and an upstream variant's
    # input that already fails with the bug's signature on the unpatched build of that source shows the source has
    # the bug, a skip with that reason too.
    set(other "")
    if((mode STREQUAL "pinned" OR (mode STREQUAL "fixed" AND prefix STREQUAL "upstream.")) AND LIFELINE_GGML_OTHER_SOURCE)
      lifeline_target_runs_ggml(${target} runs)
      if(runs)
        set(other --other-source "${LIFELINE_GGML_OTHER_SOURCE}")
      endif()
    endif()
    add_test(NAME ${test}
             COMMAND ${LIFELINE_CLI} repro-check --repro-dir ${dir} --lane ${LIFELINE_LANE} --mode ${mode}
                     ${extra} ${other} --binary ${bin} -- ${LIFELINE_TEST_LAUNCHER})
    set_tests_properties(${test} PROPERTIES LABELS "${all_labels}" TIMEOUT 600)
    lifeline_ggml_test_processors(${target} ${test})
    if(other)
      set_tests_properties(${test} PROPERTIES SKIP_RETURN_CODE 77)
    endif()
  endforeach()
endfunction()

# The lines `lifeline <verb> --lane <lane> --repro-root <root>` prints (the plans of repro-plan and
# export-plan), in `out`. When it fails, configuration stops with its message: `what` cannot be registered.
function(lifeline_read_cli_plan verb root what out)
  execute_process(COMMAND ${LIFELINE_CLI} ${verb} --lane ${LIFELINE_LANE} --repro-root ${root}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE plan ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "`lifeline ${verb} --lane ${LIFELINE_LANE} --repro-root ${root}` failed (${rc}), "
                        "so ${what} cannot be registered:\n${err}${plan}")
  endif()
  if(err)
    message(WARNING "lifeline ${verb}: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${plan}")
  list(REMOVE_ITEM lines "")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# The plan's line for each folder, in plan_<id>: repro|id|status|target|modes|variant target|patch|modes.
macro(_lifeline_read_repro_plan root)
  lifeline_read_cli_plan(repro-plan ${root} "the reproducer tests" lines)
  foreach(line IN LISTS lines)
    string(REPLACE "|" ";" fields "${line}")
    list(LENGTH fields n)
    if(n EQUAL 8)
      list(GET fields 0 kind)
      list(GET fields 1 id)
    endif()
    if(NOT n EQUAL 8 OR NOT kind STREQUAL "repro")
      message(FATAL_ERROR "lifeline repro-plan printed a line this CMake does not read: '${line}'")
    endif()
    set(plan_${id} "${fields}")
  endforeach()
endmacro()

function(lifeline_register_reproducers)
  get_filename_component(root "${LIFELINE_REPRO_DIR}" ABSOLUTE)
  # Configure again when a folder or a file in one comes or goes (a missing input or patch makes a bug.json
  # invalid), when a bug.json changes, and when the bug list or the CLI that reads bug.json changes.
  file(GLOB entries LIST_DIRECTORIES true CONFIGURE_DEPENDS ${root}/*)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${root}/*)
  file(GLOB bug_jsons ${root}/*/bug.json)
  file(GLOB cli_sources ${PROJECT_SOURCE_DIR}/cli/lifeline/*.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${bug_jsons} ${PROJECT_SOURCE_DIR}/core/bug_list.def ${PROJECT_SOURCE_DIR}/core/guard_list.def
               ${cli_sources})
  _lifeline_read_repro_plan(${root})
  foreach(dir IN LISTS entries)
    if(NOT IS_DIRECTORY ${dir})
      continue()
    endif()
    get_filename_component(id ${dir} NAME)
    add_test(NAME repro.${id}.bug-json COMMAND ${LIFELINE_CLI} repro-check --validate-only --repro-dir ${dir})
    set_tests_properties(repro.${id}.bug-json PROPERTIES LABELS "repro")
    if(NOT DEFINED plan_${id})
      message(FATAL_ERROR "lifeline repro-plan printed no line for ${dir}")
    endif()
    list(GET plan_${id} 2 status)  # "invalid": repro.<id>.bug-json says what is wrong
    list(GET plan_${id} 3 target)
    list(GET plan_${id} 4 modes)
    list(GET plan_${id} 5 vtarget)
    list(GET plan_${id} 6 vpatch)
    list(GET plan_${id} 7 vmodes)

    if(NOT modes STREQUAL "-")
      string(REPLACE "," ";" modes "${modes}")
      set(binary "${CMAKE_BINARY_DIR}/targets/${target}")  # repro-check reports an unknown target
      if(TARGET ${target})
        set(binary $<TARGET_FILE:${target}>)
      endif()
      set(labels "")
      if(status STREQUAL "upstream-open")
        set(labels "upstream-open")
      endif()
      _lifeline_repro_tests(${id} ${dir} ${target} "${binary}" "${labels}" "" "${modes}" "")
    endif()

    # The upstream variant: built here when this lane has upstream ggml.
    if(NOT vmodes STREQUAL "-")
      string(REPLACE "," ";" vmodes "${vmodes}")
      set(variant_error "")
      set(variant_skip "")
      if(TARGET ${vtarget} AND vpatch STREQUAL "-")  # no patch: the switch acts on the target as it is
        set(vbinary $<TARGET_FILE:${vtarget}>)
      elseif(TARGET ${vtarget})
        lifeline_add_upstream_variant(variant ${id} ${vtarget} ${dir}/${vpatch})
        set(vbinary "$<IF:$<STREQUAL:@MODE@,fixed>,$<TARGET_FILE:${vtarget}>,$<TARGET_FILE:${variant}>>")
      else()
        set(vbinary "${CMAKE_BINARY_DIR}/targets/${vtarget}")
      endif()
      if(variant_error)  # the patch does not apply to this lane's ggml: those tests fail saying why
        foreach(mode IN LISTS vmodes)
          lifeline_add_upstream_failure(repro.${id}.upstream.${LIFELINE_LANE}.${mode} "${variant_error}")
        endforeach()
      elseif(variant_skip)  # ... on another ggml source: skipped, saying why
        foreach(mode IN LISTS vmodes)
          lifeline_add_upstream_skip(repro.${id}.upstream.${LIFELINE_LANE}.${mode}
                                     "not built on this source: ${variant_skip}")
        endforeach()
      else()
        _lifeline_repro_tests(${id} ${dir} ${vtarget} "${vbinary}" "upstream" "upstream." "${vmodes}"
                              "--variant;upstream")
      endif()
    endif()
  endforeach()
endfunction()
