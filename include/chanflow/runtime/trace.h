// trace.h — the one trace of a chanflow process: tracks, slices, instants, flows and counters on
// one clock, streamed as Chrome trace JSON (Perfetto, chrome://tracing, `chanflow trace`).
//
//   cf::trace::start({.path = "run.json"});          // events stream to run.json from now on
//   const cf::trace::Track t = cf::trace::thread(cf::trace::process("loader"), "reader");
//   const int64_t t0 = cf::trace::now_ns();
//   ... work ...
//   cf::trace::slice(t, "stage", "read batch", t0, cf::trace::now_ns());
//   cf::trace::stop();                                // flushes, writes otherData, closes
//
// The runtime records into it by itself while it is on: each run of a green thread on a worker
// (with what it parked on), its creation, the event that woke it (a flow arrow to its next run),
// buffered channels' occupancy and the run-queue length; the executor adds op slices and the
// GoMachine node slices. The file format is docs/runtime.md, "Tracing" (format version 1).
//
// Costs and bounds. Off, every recording site costs one relaxed load (enabled()). On, an event is
// appended in binary form to a buffer of the calling OS thread (no lock, no shared write per
// record); full buffers go to a writer thread that renders them as JSON and writes them to the file
// as they come. A program that records faster than the writer renders (a busy green-thread
// program records millions of events a second) makes it fall behind: from then on it spools the
// buffers as they are to a nameless file beside the output, and stop() renders them (it then
// takes about 0.1 s per million events). CHANFLOW_TRACE_SPOOL=auto (that), always (spool from
// the start: cheapest) or never (render only; a writer that falls behind drops). At most
// Options::max_events events are written (later ones are counted as dropped), and at most
// Options::buffer_bytes of buffers wait for the writer: when it still falls behind, a full
// buffer's events are dropped and counted, never queued without bound, and new events are
// dropped and counted at once until the writer has room again. The count is in "otherData"
// ("dropped_events") and a "dropped" mark. A recording that ends by stop() — also when the
// program was cancelled or signalled and stops the trace on its way out — leaves a complete JSON
// document (so does exit() with a recording on: an atexit handler stops it); one cut short (the
// process killed) leaves a prefix that readers accept: the events rendered until then (not the
// spooled ones).
//
// Thread-safety: every function may be called from any green thread or OS thread. start() and
// stop() are serialised among themselves; a recording call that races with stop() is either in
// the file or not, never half.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chanflow/core/export.h"

namespace chanflow::trace {

// start()'s bound on the events written unless told otherwise (a JSON file of about 15 MB).
inline constexpr std::size_t kDefaultMaxEvents = 100'000;
// start()'s bound on the buffers waiting for the writer unless told otherwise.
inline constexpr std::size_t kDefaultBufferBytes = std::size_t{4} << 20;

struct Options {
  // Where the events stream to (created or truncated by start(); Error if it cannot be opened).
  // Empty: kept in memory until the next start(), for to_json().
  std::string path{};
  // At most this many events are written (0: no bound); later ones are dropped and counted.
  std::size_t max_events = kDefaultMaxEvents;
  // At most about this many bytes of recorded, not yet written events exist at once (each OS
  // thread that records holds a buffer of 64 KiB of them, not counted). Events that find no room
  // are dropped and counted.
  std::size_t buffer_bytes = kDefaultBufferBytes;
};

// Starts a recording: stops the current one first (as stop()), opens the output and starts the
// writer thread. Throws Error when options.path cannot be opened (the trace stays off).
CHANFLOW_API void start(const Options& options = {});
// Ends the recording: later events are not recorded, the ones recorded are written, then the
// track names, a "stop" mark and "otherData" ({"chanflow_trace": 1, "dropped_events": N,
// "max_events": M, "complete": true}); the file is closed. Blocks until written. A no-op when
// off. Throws Error when writing the file failed (the recording is over all the same).
// `mark`, when not empty, is a global mark of that name written with "stop" at the same time,
// such as "cancelled": like "stop" it is written whatever the event bound dropped.
CHANFLOW_API void stop(std::string_view mark = {});
// Whether a recording is on. One relaxed load.
CHANFLOW_API bool enabled() noexcept;
// Events written by the current or last recording, and events it dropped. Snapshots; exact once
// stop() returned.
CHANFLOW_API std::size_t event_count() noexcept;
CHANFLOW_API std::size_t dropped_count() noexcept;
// The JSON document of the last in-memory recording (Options::path empty), complete once stop()
// returned; "" when the last recording went to a file.
CHANFLOW_API std::string to_json();

// The trace clock: steady, in nanoseconds, on std::chrono::steady_clock's epoch. Where the
// kernel keeps time with the TSC, a reading is one rdtsc (about half the cost of clock_gettime)
// scaled by a rate measured once, over 20 ms, by the first start() or now_ns() of the process
// (which waits for it); it then agrees with the steady clock to a few parts per million of the
// time since. CHANFLOW_TRACE_CLOCK=steady makes it the steady clock. The file's timestamps are
// microseconds since the recording's start() on this clock. Never blocks once calibrated.
CHANFLOW_API int64_t now_ns() noexcept;

// Where an event is drawn: a process and one of its threads. Tracks are registered by name
// (below) and live as long as the process; ids are allocated, never chosen by the caller.
struct Track {
  uint32_t pid = 0;
  uint32_t tid = 0;
};
// The pid of the process track named `name`: the same one for the same name. Thread-safe.
CHANFLOW_API uint32_t process(std::string_view name);
// A new thread track named `name` in process `pid` (each call allocates one; keep it).
CHANFLOW_API Track thread(uint32_t pid, std::string_view name);

// Recording. Each is a no-op when off. `args`, when not empty, must be a JSON object ("{...}")
// and is copied into the event as it is (Error when it is not bracketed as one; its inside is
// the caller's to keep valid); `cat` and `name` are escaped. Timestamps are now_ns()
// readings. Never blocks (events are dropped and counted rather than waited for).
//
// A complete slice [begin_ns, end_ns] on `t` ("ph":"X").
CHANFLOW_API void slice(Track t, std::string_view cat, std::string_view name, int64_t begin_ns,
                        int64_t end_ns, std::string_view args = {});
// An instant at ts_ns ("ph":"i") with scope 't' (thread), 'p' (process) or 'g' (global).
CHANFLOW_API void instant(Track t, std::string_view cat, std::string_view name, int64_t ts_ns,
                          std::string_view args = {}, char scope = 't');
// A counter sample ("ph":"C") of process t.pid: `args` holds the series, e.g. {"len":3,"cap":8}.
CHANFLOW_API void counter(Track t, std::string_view cat, std::string_view name, int64_t ts_ns,
                          std::string_view args);
// A flow arrow from (t, ts_ns) of flow_begin to the slice of flow_end's track that encloses or
// starts at its ts_ns; `id` pairs them (flow_id()).
CHANFLOW_API uint64_t flow_id() noexcept;
CHANFLOW_API void flow_begin(Track t, std::string_view cat, std::string_view name, uint64_t id,
                             int64_t ts_ns, std::string_view args = {});
CHANFLOW_API void flow_end(Track t, std::string_view cat, std::string_view name, uint64_t id,
                           int64_t ts_ns);

// A slice on `t` from construction to destruction (nothing when off at construction). `cat` must
// outlive it (a string literal).
class ScopedSlice {
 public:
  ScopedSlice(Track t, std::string_view cat, std::string name)
      : t_(t), cat_(cat), name_(std::move(name)), begin_(enabled() ? now_ns() : -1) {}
  ScopedSlice(const ScopedSlice&) = delete;
  ScopedSlice& operator=(const ScopedSlice&) = delete;
  ~ScopedSlice() {
    if (begin_ >= 0) slice(t_, cat_, name_, begin_, now_ns());
  }

 private:
  Track t_;
  std::string_view cat_;
  std::string name_;
  int64_t begin_;
};

}  // namespace chanflow::trace
