# fuzz-smoke.<target>: a bounded libFuzzer run with a fixed seed, from the checked-in seeds into a fresh
# scratch corpus (the seed directory is only read). Fails when the fuzzer finds anything: a target that fuzzes
# upstream code steps around its known upstream-open findings with guards (core/guards.h), so any crash is one.
# The target's own settings (targets/<TARGET>.options) come first, as in every run lifeline starts.
#   -DBINARY= -DTARGET= -DSEEDS= -DWORK= -DRUNS= -DPYTHON= -DCLI_MAIN= [-DDICT=]
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
execute_process(COMMAND ${PYTHON} ${CLI_MAIN} libfuzzer-flags ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz-smoke: the settings of ${TARGET} cannot be read: ${err}")
endif()
string(REPLACE "\n" ";" flags "${flags}")
list(REMOVE_ITEM flags "")
set(args ${flags} -seed=1 -runs=${RUNS} -max_total_time=120 -timeout=10 -print_final_stats=1
         -artifact_prefix=${WORK}/artifacts/)
if(DICT AND EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${BINARY} ${args} ${WORK}/corpus ${SEEDS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz-smoke: ${BINARY} exited with ${rc}; artifacts in ${WORK}/artifacts")
endif()
