# The command's features: --help for each subcommand, --version, exit status 2 for every kind of
# usage error, check, dot (nested clusters), --out (.npy), --trace (Chrome trace with op and
# green-thread events), programs from standard input and in either format whatever their name,
# a missing file, a bad --feed, a deadlock reported once, the program size bound, --timeout and the
# --trace-limit of a run that never ends; trace summary and trace html.
# Usage: cmake -DCHANFLOW=... -DPROGRAMS=... -DWORK=... -DVERSION=... -DPROTOC=... -DPROTO_DIR=...
#        -DTESTDATA=... -P check_cli.cmake
function(expect_run want_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    TIMEOUT 60)
  if(NOT rc STREQUAL "${want_rc}")
    message(FATAL_ERROR "${ARGN}: exit '${rc}', want ${want_rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()
# expect_run_stdin(<want_rc> <input file> <command...>): the same, with the file on stdin.
function(expect_run_stdin want_rc input)
  execute_process(COMMAND ${ARGN} INPUT_FILE ${input} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err TIMEOUT 60)
  if(NOT rc STREQUAL "${want_rc}")
    message(FATAL_ERROR "${ARGN} < ${input}: exit '${rc}', want ${want_rc}\nstdout: ${out}\n"
      "stderr: ${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()
function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: '${regex}' not found in:\n${text}")
  endif()
endfunction()
function(expect_no_match text regex what)
  if(text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: '${regex}' must not be in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

foreach(sub run check dot)
  expect_run(0 ${CHANFLOW} ${sub} --help)
  expect_match("${OUT}" "FILE" "${sub} --help")
endforeach()
expect_run(0 ${CHANFLOW} --help)
expect_match("${OUT}" "--version" "--help lists --version")

# --version: the CMake project version, on stdout.
expect_run(0 ${CHANFLOW} --version)
expect_match("${OUT}" "^chanflow ${VERSION}\n$" "--version")

# Usage errors exit 2 with CLI11's message on stderr, whatever their kind (CLI11's own statuses
# are 105 to 114) and whichever level of the command they occur at.
set(_go ${PROGRAMS}/go_op.pbtxt)
set(_usage_errors
  "no command|"
  "unknown command|frob"
  "unknown option|run;--bogus;${_go}"
  "unknown top-level option|--bogus;run;${_go}"
  "missing option argument|run;${_go};--out"
  "missing FILE|run"
  "missing FILE for check|check"
  "bad value|run;${_go};--workers;many"
  "out-of-range value|run;${_go};--workers;-1"
  "negative --max-threads|run;${_go};--max-threads;-1"
  "bad --max-memory unit|run;${_go};--max-memory;16Q"
  "bad size unit|check;${_go};--max-program-size;1x"
  "bad duration unit|run;${_go};--timeout;1x"
  "duration without a unit|run;${_go};--timeout;10"
  "negative duration|run;${_go};--timeout;-1s"
  "zero duration|run;${_go};--timeout;0"
  "negative trace limit|run;${_go};--trace-limit;-5"
  "extra positional|run;${_go};${_go}"
  "extra positional for dot|dot;${_go};${_go}")
foreach(_case IN LISTS _usage_errors)
  string(FIND "${_case}" "|" _bar)
  string(SUBSTRING "${_case}" 0 ${_bar} _what)
  math(EXPR _bar "${_bar} + 1")
  string(SUBSTRING "${_case}" ${_bar} -1 _args)
  expect_run(2 ${CHANFLOW} ${_args})
  expect_match("${ERR}" "Run with --help" "usage error (${_what}): CLI11's message")
  if(NOT OUT STREQUAL "")
    message(FATAL_ERROR "usage error (${_what}): nothing belongs on stdout, got: ${OUT}")
  endif()
endforeach()
expect_run(2 ${CHANFLOW} frob)
expect_match("${ERR}" "unknown command 'frob'" "unknown command named")

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

# A program on standard input ("-"), text or binary.
expect_run_stdin(0 ${PROGRAMS}/go_op.pbtxt ${CHANFLOW} run - --fetch result)
expect_match("${OUT}" "result = tensor\\(\\[99\\]" "run - (text on stdin)")
expect_run_stdin(0 ${PROGRAMS}/fibonacci.pbtxt ${CHANFLOW} check -)
expect_match("${OUT}" "<stdin>: ok" "check - (text on stdin)")

# The format comes from the content, not the name: the binary encoding (made by protoc from the
# text) under .pb, .pbtxt and no extension; the text under .pb and no extension.
execute_process(COMMAND ${PROTOC} --encode=chanflow.ir.pb.ProgramDesc -I${PROTO_DIR}
    ${PROTO_DIR}/program.proto
  INPUT_FILE ${_go} OUTPUT_FILE ${WORK}/go_op.pb RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "protoc --encode failed (${rc}): ${err}")
endif()
file(COPY_FILE ${WORK}/go_op.pb ${WORK}/binary_named.pbtxt)
file(COPY_FILE ${WORK}/go_op.pb ${WORK}/binary_no_extension)
file(COPY_FILE ${_go} ${WORK}/text_named.pb)
file(COPY_FILE ${_go} ${WORK}/text_no_extension)
foreach(_f go_op.pb binary_named.pbtxt binary_no_extension text_named.pb text_no_extension)
  expect_run(0 ${CHANFLOW} run ${WORK}/${_f} --fetch result)
  expect_match("${OUT}" "result = tensor\\(\\[99\\]" "run ${_f}")
endforeach()
expect_run_stdin(0 ${WORK}/go_op.pb ${CHANFLOW} run - --fetch result)
expect_match("${OUT}" "result = tensor\\(\\[99\\]" "run - (binary on stdin)")
# Neither format: a control byte (so binary is tried first) in front of text that is no program.
# The message names both attempts.
string(ASCII 1 _ctl)
file(WRITE ${WORK}/neither.pb "${_ctl}not a program\n")
expect_run(1 ${CHANFLOW} check ${WORK}/neither.pb)
expect_match("${ERR}" "^chanflow: program error: .*neither.pb is neither a binary-format nor a "
  "text-format program" "neither format")
expect_match("${ERR}" "As binary: .*As text: " "neither format names both attempts")

expect_run(1 ${CHANFLOW} run ${WORK}/does_not_exist.pbtxt)
expect_match("${ERR}" "^chanflow: " "missing file message")
expect_run(1 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --feed nonsense)
expect_match("${ERR}" "NAME=FILE.npy" "bad --feed message")
expect_run(1 ${CHANFLOW} run ${PROGRAMS}/go_op.pbtxt --fetch no_such_var)
expect_match("${ERR}" "no_such_var" "unknown fetch message")
# A deadlock is reported once: "chanflow: deadlock: every thread ...", not "deadlock: deadlock:".
file(WRITE ${WORK}/deadlock.pbtxt [=[
# Block 0 receives on an unbuffered channel nobody sends on.
blocks {
  idx: 0
  parent_idx: -1
  vars { name: "ch" type { type: CHANNEL channel { data_type: INT64 capacity: 0 } } }
  vars { name: "r" type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 } } } }
  vars { name: "ok" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BOOL } } } }
  ops {
    outputs { parameter: "Out" arguments: "ch" }
    type: "channel_create"
    attrs { name: "data_type" type: INT i: 3 }
    attrs { name: "capacity" type: INT i: 0 }
  }
  ops {
    inputs { parameter: "Channel" arguments: "ch" }
    outputs { parameter: "Out" arguments: "r" }
    outputs { parameter: "Status" arguments: "ok" }
    type: "channel_recv"
  }
}
]=])
expect_run(1 ${CHANFLOW} run ${WORK}/deadlock.pbtxt --fetch r --workers 2)
expect_match("${ERR}" "^chanflow: deadlock: every thread" "deadlock message")
expect_match("${ERR}" "op 1 \\('channel_recv'\\)" "deadlock names the waiting op")
expect_no_match("${ERR}" "deadlock: deadlock" "deadlock said once")
# The program file's size is bounded (--max-program-size, default 1G) for every command that reads
# one, without reading past the bound: /dev/zero ends with a LimitError at once, not when memory
# runs out; so does standard input; a program within the bound loads.
foreach(sub run check dot)
  expect_run(1 ${CHANFLOW} ${sub} /dev/zero --max-program-size 64K)
  expect_match("${ERR}" "^chanflow: limit exceeded: /dev/zero: .*65536 bytes.*--max-program-size"
    "${sub}: size limit names the file, the bound and the option")
endforeach()
expect_run_stdin(1 ${_go} ${CHANFLOW} check - --max-program-size 100)
expect_match("${ERR}" "limit exceeded: <stdin>: .* 100 bytes" "size limit on stdin")
expect_run(0 ${CHANFLOW} check ${_go} --max-program-size 64k)

# --timeout DURATION (Go's syntax): a bad one is a usage error naming it; one that does not pass
# changes nothing (2562047h is past the clock's range: no deadline; every other one is minutes, so
# that a sanitizer build on a loaded host finishes well within it); one that passes stops the run
# with status 124 (as coreutils' timeout) and names what was still running. The run never ends on
# its own and is traced with --trace-limit: the file keeps at most the limit of events and counts
# the dropped ones.
expect_run(2 ${CHANFLOW} run ${_go} --timeout 1x)
expect_match("${ERR}" "unknown unit 'x' in duration '1x'" "bad --timeout named")
expect_run(2 ${CHANFLOW} run ${_go} --timeout=-1s)
expect_match("${ERR}" "'-1s' is not positive" "negative --timeout named")
foreach(_d 1m30s 2h45m .5h 1.5h 300000000us 2562047h)
  expect_run(0 ${CHANFLOW} run ${_go} --fetch result --timeout ${_d})
  expect_match("${OUT}" "result = tensor\\(\\[99\\]" "--timeout ${_d} that does not pass")
endforeach()
set(_endless ${TESTDATA}/endless_ping_pong.pbtxt)
expect_run(124 ${CHANFLOW} run ${_endless} --workers 2 --timeout 300ms --trace ${WORK}/endless.json
  --trace-limit 500)
expect_match("${ERR}" "^chanflow: deadline exceeded: --timeout 300ms passed; still running: block [0-9]+, op [0-9]+ \\('[a-z_]+'\\) on the calling thread; block [0-9]+, op [0-9]+ \\('[a-z_]+'\\) in green thread go@block1#1\n$"
  "--timeout message")
file(READ ${WORK}/endless.json _trace)
string(JSON _dropped GET "${_trace}" otherData dropped_events)
string(JSON _complete GET "${_trace}" otherData complete)
string(JSON _events LENGTH "${_trace}" traceEvents)
if(_dropped LESS_EQUAL 0 OR NOT _complete)
  message(FATAL_ERROR "--trace-limit 500 on a run that never ends: dropped ${_dropped} events "
    "(want > 0), complete ${_complete}")
endif()
# 500 events, plus the few process and thread names and the marks (cancelled, dropped, stop).
if(_events GREATER 520 OR _events LESS 100)
  message(FATAL_ERROR "--trace-limit 500: ${_events} trace events")
endif()
# Limits of a run. A `while` that starts a go block per iteration, each parked forever in a
# receive: --max-threads stops it at the go op (without a limit it ends in a deadlock after 5000).
set(_i64 [=[type { type: LOD_TENSOR lod_tensor { tensor { data_type: INT64 dims: 1 } } }]=])
set(_bool [=[type { type: LOD_TENSOR lod_tensor { tensor { data_type: BOOL dims: 1 } } }]=])
set(_fill [=[type: "fill_constant" attrs { name: "shape" type: INTS ints: 1 }
    attrs { name: "dtype" type: INT i: 3 } attrs { name: "value" type: FLOAT f:]=])
set(_loop_head [=[
  vars { name: "i" @I64@ }
  vars { name: "n" @I64@ }
  vars { name: "cond" @BOOL@ }
  ops { outputs { parameter: "Out" arguments: "i" } @FILL@ 0 } }
  ops { outputs { parameter: "Out" arguments: "n" } @FILL@ @N@ } }
  ops { inputs { parameter: "X" arguments: "i" } inputs { parameter: "Y" arguments: "n" }
    outputs { parameter: "Out" arguments: "cond" } type: "less_than" }
  ops { inputs { parameter: "X" arguments: "i" arguments: "n" }
    inputs { parameter: "Condition" arguments: "cond" }
    outputs { parameter: "Out" arguments: "i" arguments: "cond" } type: "while"
    attrs { name: "sub_block" type: BLOCK block_idx: 1 } }
}]=])
set(_loop_tail [=[
  ops { inputs { parameter: "X" arguments: "i" } outputs { parameter: "Out" arguments: "i" }
    type: "increment" attrs { name: "step" type: FLOAT f: 1 } }
  ops { inputs { parameter: "X" arguments: "i" } inputs { parameter: "Y" arguments: "n" }
    outputs { parameter: "Out" arguments: "cond" } type: "less_than" }
}]=])
string(REPLACE "@N@" "5000" _head "${_loop_head}")
file(WRITE ${WORK}/parked_go_loop.pbtxt "blocks { idx: 0 parent_idx: -1
  vars { name: \"never\" type { type: CHANNEL channel { data_type: FP64 capacity: 0 } } }
  ops { outputs { parameter: \"Out\" arguments: \"never\" } type: \"channel_create\"
    attrs { name: \"data_type\" type: INT i: 6 } attrs { name: \"capacity\" type: INT i: 0 } }
${_head}
blocks { idx: 1 parent_idx: 0
  ops { inputs { parameter: \"X\" arguments: \"never\" } type: \"go\"
    attrs { name: \"sub_block\" type: BLOCK block_idx: 2 } }
${_loop_tail}
blocks { idx: 2 parent_idx: 1
  vars { name: \"r\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP64 } } } }
  vars { name: \"ok\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BOOL } } } }
  ops { inputs { parameter: \"Channel\" arguments: \"never\" } outputs { parameter: \"Out\" arguments: \"r\" }
    outputs { parameter: \"Status\" arguments: \"ok\" } type: \"channel_recv\" }
}
")
# A `while` that keeps a new 1 MiB tensor per iteration alive in a buffered channel nobody reads
# (100 MiB in all): --max-memory stops it at the allocating op.
string(REPLACE "@N@" "100" _head "${_loop_head}")
file(WRITE ${WORK}/hoarding_loop.pbtxt "blocks { idx: 0 parent_idx: -1
  vars { name: \"hoard\" type { type: CHANNEL channel { data_type: FP32 capacity: 100 } } }
  ops { outputs { parameter: \"Out\" arguments: \"hoard\" } type: \"channel_create\"
    attrs { name: \"data_type\" type: INT i: 5 } attrs { name: \"capacity\" type: INT i: 100 } }
${_head}
blocks { idx: 1 parent_idx: 0
  vars { name: \"x\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 262144 } } } }
  vars { name: \"sent\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: BOOL } } } }
  ops { outputs { parameter: \"Out\" arguments: \"x\" } type: \"fill_constant\"
    attrs { name: \"shape\" type: INTS ints: 262144 } attrs { name: \"dtype\" type: INT i: 5 }
    attrs { name: \"value\" type: FLOAT f: 1 } }
  ops { inputs { parameter: \"Channel\" arguments: \"hoard\" } inputs { parameter: \"X\" arguments: \"x\" }
    outputs { parameter: \"Status\" arguments: \"sent\" } type: \"channel_send\" }
${_loop_tail}
")
foreach(_f parked_go_loop hoarding_loop)
  file(READ ${WORK}/${_f}.pbtxt _text)
  string(REPLACE "@I64@" "${_i64}" _text "${_text}")
  string(REPLACE "@BOOL@" "${_bool}" _text "${_text}")
  string(REPLACE "@FILL@" "${_fill}" _text "${_text}")
  file(WRITE ${WORK}/${_f}.pbtxt "${_text}")
endforeach()
expect_run(0 ${CHANFLOW} check ${WORK}/parked_go_loop.pbtxt)
expect_run(1 ${CHANFLOW} run ${WORK}/parked_go_loop.pbtxt --max-threads 1000 --workers 2)
expect_match("${ERR}" "^chanflow: limit exceeded: block 1, op 0 \\('go'\\): go: the run already has 1000 live green threads.*--max-threads"
  "--max-threads names the op, the value and the option")
expect_run(1 ${CHANFLOW} run ${WORK}/parked_go_loop.pbtxt --workers 2)
expect_match("${ERR}" "^chanflow: deadlock" "5000 parked go blocks are within the default limit")
expect_run(1 ${CHANFLOW} run ${WORK}/hoarding_loop.pbtxt --max-memory 16M --workers 1)
expect_match("${ERR}" "^chanflow: limit exceeded: block 1, op 0 \\('fill_constant'\\): tensor memory: allocating 1048576 bytes.*limit of 16777216 bytes.*--max-memory"
  "--max-memory 16M names the op, the value and the option")
expect_run(0 ${CHANFLOW} run ${WORK}/hoarding_loop.pbtxt --max-memory 128M)
expect_run(0 ${CHANFLOW} run ${WORK}/hoarding_loop.pbtxt --max-memory 0)
# --workers above the scheduler's kMaxWorkers (1024) is the library's LimitError, refused before
# any worker starts (20,000 workers would take about a minute and 1.5 GB to start).
string(TIMESTAMP _t0 "%s")
expect_run(1 ${CHANFLOW} run ${_go} --workers 20000)
string(TIMESTAMP _t1 "%s")
expect_match("${ERR}" "^chanflow: limit exceeded: scheduler: 20000 workers requested, more than the limit of 1024"
  "--workers 20000")
math(EXPR _secs "${_t1} - ${_t0}")
if(_secs GREATER 5)
  message(FATAL_ERROR "--workers 20000 took ${_secs} s to be refused: threads were started first")
endif()
# Malformed environment variables are refused with their name and value, not ignored.
foreach(_env "CHANFLOW_WORKERS=abc" "CHANFLOW_STACK_SIZE=abc")
  expect_run(1 ${CMAKE_COMMAND} -E env ${_env} ${CHANFLOW} run ${_go} --fetch result)
  string(REPLACE "=" "='" _named "${_env}")
  expect_match("${ERR}" "^chanflow: error: environment variable ${_named}' is not a number"
    "${_env} is refused")
endforeach()
# trace summary and trace html on the hand-written traces (the numbers are worked out in
# trace_summary_test.cc): text, --json, a file cut short, and bad input (status 1, one line naming
# the file, the event and the field).
set(_traces ${TESTDATA}/traces)
expect_run(0 ${CHANFLOW} trace summary ${_traces}/producer_consumer.json)
expect_match("${OUT}" "^trace [^\n]*producer_consumer.json: complete\n" "trace summary header")
expect_match("${OUT}" "19 events, 0 dropped" "trace summary event count")
expect_match("${OUT}" "\n +3  consumer +15\\.0us +6\\.75us +30\\.2us +2  exited\n"
  "trace summary: the consumer's row")
expect_match("${OUT}" "\n +blocked on chan\\.recv jobs +30\\.2us  1 park\n"
  "trace summary: what the consumer blocked on")
expect_match("${OUT}" "\n  jobs +30\\.2us +0ns +30\\.2us +0ns\n" "trace summary: channel jobs")
expect_run(0 ${CHANFLOW} trace summary --json ${_traces}/producer_consumer.json)
string(JSON _name GET "${OUT}" green_threads 2 name)
string(JSON _blocked GET "${OUT}" green_threads 2 blocked_ns)
string(JSON _on GET "${OUT}" green_threads 2 blocked_on 0 obj)
string(JSON _chan GET "${OUT}" channels 0 recv_ns)
string(JSON _complete GET "${OUT}" complete)
if(NOT "${_name}|${_blocked}|${_on}|${_chan}|${_complete}" STREQUAL "consumer|30250|jobs|30250|ON")
  message(FATAL_ERROR "trace summary --json: got ${_name}|${_blocked}|${_on}|${_chan}|${_complete}"
    "\n${OUT}")
endif()
expect_run(0 ${CHANFLOW} trace summary ${_traces}/gomachine.json --top 1)
expect_match("${OUT}" "critical path of gomachine \\(pid 3\\): 4 nodes, 65\\.0us" "critical path")
expect_run(0 ${CHANFLOW} trace summary ${_traces}/truncated.json)
expect_match("${OUT}" "INCOMPLETE\n  the file was cut short" "trace summary of a cut file")
expect_run(1 ${CHANFLOW} trace summary ${_traces}/missing_field.json)
expect_match("${ERR}" "^chanflow: bad trace: [^\n]*missing_field.json: event 2 \\(ph X, cat run\\): field 'args.g' is missing\n$"
  "trace summary: an event without a field")
expect_run(1 ${CHANFLOW} trace summary ${_traces}/not_json.json)
expect_match("${ERR}" "^chanflow: bad trace: [^\n]*not_json.json: not JSON: " "trace summary: not JSON")
expect_run(1 ${CHANFLOW} trace summary ${WORK}/no_such_trace.json)
expect_match("${ERR}" "no_such_trace.json: cannot open" "trace summary: a missing file")
expect_run(1 ${CHANFLOW} trace summary /dev/zero --max-trace-size 1M)
expect_match("${ERR}" "^chanflow: limit exceeded: /dev/zero: the trace file is larger than the limit of 1048576 bytes \\(--max-trace-size\\)"
  "trace summary: an endless file stops at the bound")
expect_run(0 ${CHANFLOW} trace html ${_traces}/select.json -o ${WORK}/select.html)
file(READ ${WORK}/select.html _html)
expect_match("${_html}" "<script type=\"application/json\" id=\"trace-data\">" "trace html data")
expect_match("${_html}" "<td>stuck</td>" "trace html summary table")
expect_no_match("${_html}" "https?://" "trace html loads nothing")
expect_run(1 ${CHANFLOW} trace html ${_traces}/select.json -o ${WORK}/no/such/dir/r.html)
expect_match("${ERR}" "cannot write" "trace html: an unwritable output")
foreach(_args "trace" "trace;summary" "trace;html;${_traces}/select.json" "trace;frob"
    "trace;summary;${_traces}/select.json;--top;many")
  expect_run(2 ${CHANFLOW} ${_args})
  expect_match("${ERR}" "Run with --help" "usage error: ${_args}")
endforeach()
foreach(_sub summary html)
  expect_run(0 ${CHANFLOW} trace ${_sub} --help)
  expect_match("${OUT}" "FILE" "trace ${_sub} --help")
endforeach()

message(STATUS "chanflow command: all features checked")
