// trace_summary.h — reading a chanflow trace file (docs/runtime.md, "File format (version 1)")
// and summarising it offline: per green thread, time running, runnable and blocked, and on what;
// the channels green threads blocked on longest; the critical path of a GoMachine run.
//
//   Trace t = read_trace("t.json");          // TraceError on bad input; a cut file is accepted
//   Summary s = summarize(t);
//   std::cout << format_summary(s);          // 100-column text
//   std::cout << summary_to_json(s).dump(2); // the same content as a JSON object
//
// Times are integer nanoseconds from the trace's ts 0 (the file's microseconds with 3 decimals,
// rounded). Nothing here blocks or keeps state; every function is safe to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chanflow/core/error.h"

namespace chanflow::tools {

// A trace file that cannot be read or is not a valid chanflow trace: the file cannot be opened,
// is not JSON, is not a trace object, or an event lacks a field the summary needs (or has it with
// the wrong type). what() names the file and, for an event, its index in traceEvents and the
// field ("t.json: event 12 (ph X, cat run): field 'args.g' is missing").
class TraceError : public Error {
 public:
  TraceError(const std::string& message, std::string file, int64_t event_index = -1,
             std::string field = {})
      : Error(message),
        file_(std::move(file)),
        event_index_(event_index),
        field_(std::move(field)) {}

  const std::string& file() const noexcept { return file_; }
  int64_t event_index() const noexcept { return event_index_; }  // -1: not tied to one event
  const std::string& field() const noexcept { return field_; }   // "" when not a field's fault

 private:
  std::string file_;
  int64_t event_index_;
  std::string field_;
};

// One event of traceEvents, with the fields every phase shares decoded and checked. `args` is the
// event's args object as written (an empty object when absent).
struct TraceEvent {
  int64_t index = 0;  // position in the file's traceEvents
  char ph = 0;        // 'X', 'i', 's', 'f', 'C', 'M', ... (other phases are kept, not analysed)
  std::string cat;
  std::string name;
  int64_t ts = 0;   // ns; 0 for metadata
  int64_t dur = 0;  // ns; X events only
  int64_t pid = 0;
  int64_t tid = 0;
  bool has_tid = false;
  std::string id;  // flow id (s/f) as text
  char scope = 0;  // an instant's "s": 'g' global, 'p' process, 't' thread; 0 when absent
  nlohmann::json args = nlohmann::json::object();
};

// A parsed trace. `complete` is false when the file was cut short (events up to the last complete
// one were kept) or when its otherData does not say complete: true.
struct Trace {
  std::string file;
  std::vector<TraceEvent> events;
  bool complete = false;
  bool truncated = false;  // the text ended inside traceEvents or before otherData's end
  int64_t dropped_events = 0;
  std::map<int64_t, std::string> process_names;                     // pid -> name
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;  // (pid, tid) -> name
};

// The largest trace file read_trace accepts by default: 1 GiB (a bounded --trace writes far less;
// this bounds what a wrong path such as /dev/zero costs).
inline constexpr std::uint64_t kDefaultMaxTraceBytes = std::uint64_t{1} << 30;

// Reads and checks the trace at `path`. Throws TraceError (see above), and LimitError (limit
// "--max-trace-size") when the file holds more than `max_bytes`, having read at most that much.
Trace read_trace(const std::string& path, std::uint64_t max_bytes = kDefaultMaxTraceBytes);

// The same from text already in memory; `file` names it in errors.
Trace parse_trace(std::string_view text, const std::string& file);

// Time a thread spent waiting on one (kind, object), e.g. ("chan.recv", "jobs"); for a select,
// on one set of cases (selects on different cases are different entries).
struct BlockedOn {
  std::string kind;
  std::string obj;
  std::vector<std::string> cases;  // a select's cases as "chan.recv a", sorted, each once
  int64_t ns = 0;
  int64_t count = 0;  // parks
};

struct GreenThreadSummary {
  int64_t g = 0;
  std::string name;
  int64_t parent = 0;
  int64_t running_ns = 0;   // sum of its run slices
  int64_t runnable_ns = 0;  // ready, waiting for a worker
  int64_t blocked_ns = 0;   // parked, waiting for a wake
  int64_t slices = 0;
  bool exited = false;
  std::vector<BlockedOn> blocked_on;  // most blocked time first
};

// An OS thread's blocking waits (code on a calling thread: the executor's block 0, a Python
// thread): its "blocked" slices, by what they waited on. A wait lasts from the block to the
// thread running again, so it includes the OS's wake-up latency after the waker's wake.
struct OsThreadSummary {
  int64_t pid = 0;
  int64_t tid = 0;
  std::string name;  // the track's thread_name ("thread 1"); "tid N" when the file names none
  int64_t blocked_ns = 0;
  int64_t waits = 0;
  std::vector<BlockedOn> blocked_on;  // most blocked time first; count = waits
};

// Blocked time on one channel, summed over green threads' parks and OS threads' waits: on a send,
// on a receive, and in a select with a case on it (a select's whole wait counts for each of its
// channels).
struct ChannelSummary {
  std::string name;
  int64_t send_ns = 0;
  int64_t recv_ns = 0;
  int64_t select_ns = 0;
  int64_t total_ns() const;  // the three, saturating
};

struct CriticalStep {
  int64_t node = 0;
  std::string name;
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t wait_ns = 0;  // from the end of the previous step's slice to this one's start
};

// The critical path of one GoMachine run: from the node slice that ends last, back through the
// input whose slice ended last; `steps` runs first node to last. A run is the node slices of one
// trace process with one args.run (all of the process's node slices when they carry none).
struct CriticalPath {
  int64_t pid = 0;
  int64_t run = -1;  // args.run; -1 when the slices carry none
  std::string process;
  std::vector<CriticalStep> steps;
  int64_t total_ns = 0;  // last step's end - first step's start (= durations + waits)
};

struct Summary {
  std::string file;
  bool complete = false;
  bool truncated = false;
  int64_t dropped_events = 0;
  int64_t start_ns = 0;  // earliest ts
  int64_t end_ns = 0;    // latest ts + dur
  int64_t events = 0;
  std::map<std::string, int64_t> events_by_cat;  // "" for events without a cat (metadata)
  std::vector<GreenThreadSummary> gthreads;      // by id
  std::vector<OsThreadSummary> os_threads;       // by (pid, tid); only threads that blocked
  std::vector<ChannelSummary> channels;          // most blocked time first; all of them
  std::vector<CriticalPath> critical_paths;      // by pid, then longest first; none without nodes
};

// Analyses `t` as docs/runtime.md ("Reading a trace") describes. A park whose wake is not in the
// trace (dropped, or the trace ends first) counts as blocked up to the next run slice or the end.
Summary summarize(const Trace& t);

// The summary as text for a 100-column terminal; at most `top_channels` channels are listed.
// Of a process's GoMachine runs the longest critical path is shown in full, the other runs'
// totals on a line (at most `top_channels` of them).
std::string format_summary(const Summary& s, size_t top_channels = 10);

// The summary as a JSON object (schema in docs/runtime.md, "Reading a trace"); durations are
// integer nanoseconds in fields ending in _ns. At most `top_channels` channels.
nlohmann::json summary_to_json(const Summary& s, size_t top_channels = 10);

// What a park waited on, as the summary prints it: "chan.recv jobs"; the kind alone when the
// object is empty or only repeats it ("select").
std::string wait_label(const std::string& kind, const std::string& obj);

// "850ns", "30.3us", "1.25ms", "2.50s": three significant digits.
std::string human_duration(int64_t ns);

}  // namespace chanflow::tools
