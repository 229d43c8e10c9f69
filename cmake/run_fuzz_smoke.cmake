# fuzz-smoke.<target>: a bounded libFuzzer run with a fixed seed, from the checked-in seeds into a fresh
# scratch corpus (the seed directory is only read). Fails when the fuzzer finds anything, except, with
# -DALLOW_UPSTREAM_OPEN=ON (targets that fuzz upstream code), a crash that `lifeline triage` matches to an
# upstream-open finding in repro/: the run stops there and that is reported, not failed.
#   -DBINARY= -DSEEDS= -DWORK= -DRUNS= [-DDICT=] [-DALLOW_UPSTREAM_OPEN=ON -DCLI=<lifeline cli as a list> -DTARGET=]
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
set(args -seed=1 -runs=${RUNS} -max_total_time=120 -timeout=10 -print_final_stats=1
         -artifact_prefix=${WORK}/artifacts/)
if(DICT AND EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${BINARY} ${args} ${WORK}/corpus ${SEEDS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB artifacts ${WORK}/artifacts/*)
  if(ALLOW_UPSTREAM_OPEN AND artifacts)
    execute_process(COMMAND ${CLI} triage --allow-upstream-open --target ${TARGET} --lane fuzz ${artifacts}
                    RESULT_VARIABLE trc)
    if(trc EQUAL 0)
      message(STATUS "fuzz-smoke: stopped on a known upstream-open finding (above); nothing else found")
      return()
    endif()
  endif()
  message(FATAL_ERROR "fuzz-smoke: ${BINARY} exited with ${rc}; artifacts in ${WORK}/artifacts")
endif()
