# The command's features: --help for each subcommand, check, dot (nested clusters), --out (.npy),
# --trace (Chrome trace with op and green-thread events), a missing file and a bad --feed.
# Usage: cmake -DCHANFLOW=... -DPROGRAMS=... -DWORK=... -P check_cli.cmake
function(expect_run want_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    TIMEOUT 60)
  if(NOT rc STREQUAL "${want_rc}")
    message(FATAL_ERROR "${ARGN}: exit '${rc}', want ${want_rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()
function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: '${regex}' not found in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

foreach(sub run check dot)
  expect_run(0 ${CHANFLOW} ${sub} --help)
  expect_match("${OUT}" "FILE" "${sub} --help")
endforeach()
expect_run(0 ${CHANFLOW} --help)

expect_run(0 ${CHANFLOW} check ${PROGRAMS}/fibonacci.pbtxt)
expect_match("${OUT}" "ok \\([0-9]+ blocks, [0-9]+ ops\\)" "check")

expect_run(0 ${CHANFLOW} dot ${PROGRAMS}/fibonacci.pbtxt)
expect_match("${OUT}" "digraph program" "dot")
# select's case bodies are clusters nested inside the select's block cluster, inside block 0's.
expect_match("${OUT}" "subgraph cluster_b0 \\{.*subgraph cluster_b[1-9].*subgraph cluster_b[1-9]"
  "dot nesting")

expect_run(0 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --fetch result --out ${WORK}/out)
if(NOT EXISTS ${WORK}/out/result.npy)
  message(FATAL_ERROR "--out did not write ${WORK}/out/result.npy")
endif()
# Feed the written tensor back into a program variable: the run must accept it.
expect_run(0 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --feed result=${WORK}/out/result.npy
  --fetch result)
expect_match("${OUT}" "result = tensor\\(\\[99\\]" "--feed")

expect_run(0 ${CHANFLOW} run ${PROGRAMS}/fibonacci.pbtxt --fetch result --trace ${WORK}/t.json)
file(READ ${WORK}/t.json trace)
expect_match("${trace}" "\"traceEvents\"" "--trace document")
expect_match("${trace}" "\"cat\":\"op\"" "--trace op events")
expect_match("${trace}" "\"name\":\"select\"" "--trace select op")
expect_match("${trace}" "go@block" "--trace green threads")

expect_run(1 ${CHANFLOW} run ${WORK}/does_not_exist.pbtxt)
expect_match("${ERR}" "^chanflow: " "missing file message")
expect_run(1 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --feed nonsense)
expect_match("${ERR}" "NAME=FILE.npy" "bad --feed message")
expect_run(1 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --fetch no_such_var)
expect_match("${ERR}" "no_such_var" "unknown fetch message")
message(STATUS "chanflow command: all features checked")
