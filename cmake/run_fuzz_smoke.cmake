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
# -timeout=25 unless the target's settings name one: the per-input limit of `lifeline fuzz` (cli/lifeline/options.py
# per_input_timeout) and of the OSS-Fuzz build's .options. With 10, the first input that met a new ggml-vulkan
# pipeline (mul_mat after soft_max) timed out in a fresh clone's suite: lavapipe compiles each pipeline on first
# use, 9.8 s for that input alone with an empty Mesa shader cache (2 s once cached), more with the lane's other
# tests running beside it.
set(args ${flags} -seed=1 -runs=${RUNS} -max_total_time=120 -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/)
if(NOT flags MATCHES "-timeout=")
  list(APPEND args -timeout=25)
endif()
if(DICT AND EXISTS ${DICT})
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND ${BINARY} ${args} ${WORK}/corpus ${SEEDS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzz-smoke: ${BINARY} exited with ${rc}; artifacts in ${WORK}/artifacts")
endif()
