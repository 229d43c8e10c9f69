# fuzz-smoke.<target>: a bounded libFuzzer run with a fixed seed, from the checked-in seeds into a fresh
# scratch corpus (the seed directory is only read). Fails when the fuzzer finds anything: a target that fuzzes
# upstream code steps around its known upstream-open findings with guards (core/guards.h), so any crash is one.
#   -DBINARY= -DSEEDS= -DWORK= -DRUNS= [-DDICT=]
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
set(args -seed=1 -runs=${RUNS} -max_total_time=120 -timeout=10 -print_final_stats=1
         -artifact_prefix=${WORK}/artifacts/)
if(DICT AND EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${BINARY} ${args} ${WORK}/corpus ${SEEDS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz-smoke: ${BINARY} exited with ${rc}; artifacts in ${WORK}/artifacts")
endif()
