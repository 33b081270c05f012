// trace_summary.cc — the trace reader (strict on fields, tolerant of a file cut short) and the
// offline summary. The format is docs/runtime.md's "File format (version 1)".
#include "trace_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace chanflow::tools {
namespace {

using Json = nlohmann::json;

// nlohmann's messages begin with "[json.exception.parse_error.101] ": keep what follows.
std::string parse_message(std::string_view text) {
  try {
    const Json parsed = Json::parse(text);
    (void)parsed;
  } catch (const Json::exception& e) {
    std::string m = e.what();
    const size_t close = m.find("] ");
    return close == std::string::npos ? m : m.substr(close + 2);
  }
  return "parse error";
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A streamed file cut short ends inside traceEvents (or inside what follows it). Returns the text
// up to the last complete element of traceEvents with the array and the object closed, or "" when
// the text does not look like a cut trace (then it is reported as not JSON). Elements are found
// by bracket depth outside strings, so no JSON is built for the scan.
std::string close_cut_trace(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  if (i == text.size() || text[i] != '{') return {};
  const size_t key = text.find("\"traceEvents\"", i);
  if (key == std::string_view::npos) return {};
  i = key + 13;
  while (i < text.size() && is_space(text[i])) ++i;
  if (i == text.size() || text[i] != ':') return {};
  ++i;
  while (i < text.size() && is_space(text[i])) ++i;
  if (i == text.size() || text[i] != '[') return {};
  size_t last_complete = ++i;
  int depth = 0;
  bool in_string = false;
  bool escape = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (depth == 0) {
        // The array closed: what broke is after it (otherData cut short).
        if (c != ']') return {};
        return std::string(text.substr(0, i + 1)) + "}";
      }
      if (--depth == 0) last_complete = i + 1;
    }
  }
  // What follows the last complete element must be the start of the next one, cut.
  size_t j = last_complete;
  while (j < text.size() && (is_space(text[j]) || text[j] == ',')) ++j;
  if (j < text.size() && text[j] != '{') return {};
  return std::string(text.substr(0, last_complete)) + "]}";
}

// Why `v` is not an int64 ("is not an integer", "is out of range"), or nullptr. JSON has one
// number type: a non-negative integer above 2^63 - 1 parses as an unsigned one, and reading it as
// int64 would wrap it to a negative value.
const char* int64_problem(const Json& v) {
  if (!v.is_number_integer()) return "is not an integer";
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return "is out of range (above 2^63 - 1)";
  }
  return nullptr;
}

// Field access with errors that name the file, the event and the field.
class EventReader {
 public:
  EventReader(const std::string& file, int64_t index, const Json& ev) : file_(file), ev_(ev) {
    index_ = index;
    if (!ev.is_object()) fail("", "is not a JSON object");
    if (const Json* ph = find(ev, "ph"); ph != nullptr && ph->is_string()) ph_ = *ph;
    if (const Json* cat = find(ev, "cat"); cat != nullptr && cat->is_string()) cat_ = *cat;
  }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    std::ostringstream m;
    m << file_ << ": event " << index_;
    if (!ph_.empty()) m << " (ph " << ph_ << (cat_.empty() ? "" : ", cat " + cat_) << ")";
    if (field.empty()) {
      m << ": " << what;
    } else {
      m << ": field '" << field << "' " << what;
    }
    throw TraceError(m.str(), file_, index_, field);
  }

  // The member at a dotted path ("args.wait.kind"), or nullptr when absent.
  const Json* get(const std::string& path) const {
    const Json* at = &ev_;
    size_t from = 0;
    while (true) {
      const size_t dot = path.find('.', from);
      const std::string part = path.substr(from, dot == std::string::npos ? dot : dot - from);
      if (!at->is_object()) return nullptr;
      at = find(*at, part);
      if (at == nullptr || dot == std::string::npos) return at;
      from = dot + 1;
    }
  }

  const Json& need(const std::string& path) const {
    const Json* v = get(path);
    if (v == nullptr) fail(path, "is missing");
    return *v;
  }
  std::string string(const std::string& path) const {
    const Json& v = need(path);
    if (!v.is_string()) fail(path, "is not a string");
    return v.get<std::string>();
  }
  std::string string_or(const std::string& path, const std::string& otherwise) const {
    return get(path) == nullptr ? otherwise : string(path);
  }
  int64_t integer(const std::string& path) const {
    const Json& v = need(path);
    if (const char* problem = int64_problem(v)) fail(path, problem);
    return v.get<int64_t>();
  }
  // Microseconds (a JSON number, up to 3 decimals) as integer nanoseconds.
  int64_t micros(const std::string& path) const {
    const Json& v = need(path);
    if (!v.is_number()) fail(path, "is not a number");
    const double us = v.get<double>();
    // 10^12 us is 11 days: every difference of two times then fits in int64 nanoseconds.
    if (!std::isfinite(us) || std::fabs(us) > 1e12) fail(path, "is out of range");
    return std::llround(us * 1000.0);
  }
  const Json& object(const std::string& path) const {
    const Json& v = need(path);
    if (!v.is_object()) fail(path, "is not an object");
    return v;
  }
  const Json& array(const std::string& path) const {
    const Json& v = need(path);
    if (!v.is_array()) fail(path, "is not an array");
    return v;
  }

 private:
  static const Json* find(const Json& obj, const std::string& key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const std::string& file_;
  int64_t index_;
  const Json& ev_;
  std::string ph_;
  std::string cat_;
};

// A park's reason: {"kind","obj","cases"}; the cases checked as objects with kind and obj.
void check_wait(const EventReader& r) {
  r.object("args.wait");
  r.string("args.wait.kind");
  r.string("args.wait.obj");
  if (r.get("args.wait.cases") != nullptr) {
    const Json& cases = r.array("args.wait.cases");
    for (size_t c = 0; c < cases.size(); ++c) {
      const std::string at = "args.wait.cases[" + std::to_string(c) + "]";
      if (!cases[c].is_object()) r.fail(at, "is not an object");
      for (const char* key : {"kind", "obj"}) {
        auto it = cases[c].find(key);
        if (it == cases[c].end()) r.fail(at + "." + key, "is missing");
        if (!it->is_string()) r.fail(at + "." + key, "is not a string");
      }
    }
  }
}

// Checks `ev` and decodes it; its args object is moved out (the document is not used after).
TraceEvent read_event(const std::string& file, int64_t index, Json& ev) {
  EventReader r(file, index, ev);
  TraceEvent e;
  e.index = index;
  const std::string ph = r.string("ph");
  if (ph.size() != 1) r.fail("ph", "is not one letter");
  e.ph = ph[0];
  e.cat = r.string_or("cat", "");
  e.name = r.string_or("name", "");
  e.pid = r.integer("pid");
  if (r.get("tid") != nullptr) {
    e.tid = r.integer("tid");
    e.has_tid = true;
  }
  if (r.get("args") != nullptr) r.object("args");
  if (e.ph == 'i' && r.get("s") != nullptr) {
    const std::string scope = r.string("s");
    if (scope != "g" && scope != "p" && scope != "t") r.fail("s", "is not g, p or t");
    e.scope = scope[0];
  }
  if (e.ph != 'M') e.ts = r.micros("ts");
  if (e.ph == 'X') {
    e.dur = r.micros("dur");
    if (e.dur < 0) r.fail("dur", "is negative");
  }
  if (e.ph == 's' || e.ph == 'f') {
    const Json& id = r.need("id");
    if (id.is_string()) {
      e.id = id.get<std::string>();
    } else if (id.is_number_unsigned()) {  // ids are labels: any non-negative integer
      e.id = std::to_string(id.get<uint64_t>());
    } else if (id.is_number_integer()) {
      e.id = std::to_string(id.get<int64_t>());
    } else {
      r.fail("id", "is not a string or an integer");
    }
  }
  // The kinds the summary analyses: their fields are the contract's.
  if (e.ph == 'M' && (e.name == "process_name" || e.name == "thread_name")) {
    r.string("args.name");
    if (e.name == "thread_name") r.integer("tid");
  } else if (e.ph == 'X' && e.cat == "run") {
    r.integer("tid");
    r.integer("args.g");
    const std::string end = r.string("args.end");
    if (end != "park" && end != "yield" && end != "exit") {
      r.fail("args.end", "is '" + end + "', not park, yield or exit");
    }
    if (end == "park") check_wait(r);
  } else if (e.ph == 'i' && e.cat == "gthread" && e.name == "go") {
    r.integer("args.g");
    r.string("args.gname");
    if (r.get("args.parent") != nullptr) r.integer("args.parent");
  } else if (e.ph == 'X' && e.cat == "wait" && e.name == "blocked") {
    r.integer("tid");
    check_wait(r);
  } else if (e.ph == 's' && e.cat == "wake") {
    // Without a green thread: the wake of an OS thread's blocking wait (a "blocked" slice).
    if (r.get("args.g") != nullptr) r.integer("args.g");
  } else if (e.ph == 'X' && e.cat == "node") {
    r.integer("args.node");
    // A run is a GoMachine's run counter; -1 stands for "no args.run" in the summary.
    if (r.get("args.run") != nullptr && r.integer("args.run") < 0)
      r.fail("args.run", "is negative");
    const Json& inputs = r.array("args.inputs");
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (const char* problem = int64_problem(inputs[k])) {
        r.fail("args.inputs[" + std::to_string(k) + "]", problem);
      }
    }
  }
  if (auto args = ev.find("args"); args != ev.end()) e.args = std::move(*args);
  return e;
}

}  // namespace

namespace {

// Parses `text` into `doc` while decoding each element of the top-level traceEvents array into
// `t.events` as soon as it is parsed, and discarding it from the tree: the document never holds
// the events (a 100k-event trace would take hundreds of MB as a tree). The first bad event's
// TraceError is kept in `error`, to be thrown once the document's version was checked (a file
// from another writer is reported as that, not as its first odd event). Returns false when the
// text is not JSON.
bool parse_events(std::string_view text, const std::string& file, Trace& t, Json& doc,
                  std::optional<TraceError>& error) {
  t.events.clear();
  error.reset();
  bool in_events = false;
  int64_t index = 0;
  const Json::parser_callback_t on_value = [&](int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    if (depth == 1 && event == E::key) {
      in_events = parsed.is_string() && parsed.get_ref<const std::string&>() == "traceEvents";
      return true;
    }
    if (depth != 2 || !in_events || event == E::object_start || event == E::array_start) {
      return true;
    }
    // A whole element: an object's end, an array's end or a scalar.
    if (!error) {
      try {
        t.events.push_back(read_event(file, index, parsed));
      } catch (TraceError& e) {
        error.emplace(std::move(e));
      }
    }
    ++index;
    return false;
  };
  doc = Json::parse(text, on_value, /*allow_exceptions=*/false);
  return !doc.is_discarded();
}

}  // namespace

Trace parse_trace(std::string_view text, const std::string& file) {
  Trace t;
  t.file = file;
  Json doc;
  std::optional<TraceError> bad_event;
  if (!parse_events(text, file, t, doc, bad_event)) {
    const std::string closed = close_cut_trace(text);
    if (closed.empty() || !parse_events(closed, file, t, doc, bad_event)) {
      throw TraceError(file + ": not JSON: " + parse_message(text), file);
    }
    t.truncated = true;
  }
  const bool is_object = doc.is_object();
  auto events = is_object ? doc.find("traceEvents") : doc.end();
  if (!is_object || events == doc.end() || !events->is_array()) {
    throw TraceError(file +
                         ": not a chanflow trace: expected a JSON object with a traceEvents array "
                         "(docs/runtime.md, \"File format (version 1)\")",
                     file, -1, "traceEvents");
  }
  if (auto other = doc.find("otherData"); other != doc.end()) {
    if (!other->is_object()) {
      throw TraceError(file + ": field 'otherData' is not an object", file, -1, "otherData");
    }
    auto version = other->find("chanflow_trace");
    if (version == other->end()) {
      throw TraceError(file +
                           ": not a chanflow trace version 1: otherData.chanflow_trace is "
                           "missing (a Chrome trace from another writer, or an older chanflow)",
                       file, -1, "otherData.chanflow_trace");
    }
    if (!version->is_number_integer() || version->get<int64_t>() != 1) {
      throw TraceError(file + ": unsupported chanflow trace version " + version->dump() +
                           " (this chanflow reads version 1)",
                       file, -1, "otherData.chanflow_trace");
    }
    if (auto d = other->find("dropped_events"); d != other->end()) {
      // A count: a non-negative int64.
      const char* problem = int64_problem(*d);
      if (problem == nullptr && d->get<int64_t>() < 0) problem = "is negative";
      if (problem != nullptr) {
        throw TraceError(file + ": field 'otherData.dropped_events' " + problem +
                             (d->is_number() ? " (" + d->dump() + ")" : ""),
                         file, -1, "otherData.dropped_events");
      }
      t.dropped_events = d->get<int64_t>();
    }
    auto complete = other->find("complete");
    t.complete =
        !t.truncated && complete != other->end() && complete->is_boolean() && complete->get<bool>();
  }
  if (bad_event) throw *bad_event;
  for (const TraceEvent& e : t.events) {
    if (e.ph == 'M' && e.name == "process_name") {
      t.process_names[e.pid] = e.args["name"].get<std::string>();
    } else if (e.ph == 'M' && e.name == "thread_name") {
      t.thread_names[{e.pid, e.tid}] = e.args["name"].get<std::string>();
    }
  }
  return t;
}

Trace read_trace(const std::string& path, std::uint64_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceError(path + ": cannot open the trace file", path);
  // Chunked, so a source without an end costs at most max_bytes and a chunk before the error.
  constexpr size_t kChunk = size_t{1} << 16;
  std::string text;
  std::vector<char> chunk(kChunk);
  while (f) {
    f.read(chunk.data(), static_cast<std::streamsize>(kChunk));
    const auto got = static_cast<size_t>(f.gcount());
    if (got > max_bytes - text.size()) {  // text.size() <= max_bytes
      throw LimitError(path + ": the trace file is larger than the limit of " +
                           std::to_string(max_bytes) + " bytes (--max-trace-size)",
                       "--max-trace-size");
    }
    text.append(chunk.data(), got);
  }
  if (f.bad()) throw TraceError(path + ": cannot read the trace file", path);
  return parse_trace(text, path);
}

namespace {

// Sums of durations saturate: a hostile file's slices may add up past int64 (each is bounded by
// the reader, their count is not).
void add_to(int64_t& sum, int64_t ns) {
  if (__builtin_add_overflow(sum, ns, &sum)) sum = ns > 0 ? INT64_MAX : INT64_MIN;
}

// A thread's waits by what they waited on: (kind, object, a select's case labels sorted and
// joined), so that two selects on different cases are two entries.
using BlockedMap = std::map<std::tuple<std::string, std::string, std::string>, BlockedOn>;

// `blocked` as a list, most blocked time first.
std::vector<BlockedOn> blocked_list(BlockedMap& blocked) {
  std::vector<BlockedOn> on;
  for (auto& [key, b] : blocked) on.push_back(std::move(b));
  std::stable_sort(on.begin(), on.end(),
                   [](const BlockedOn& a, const BlockedOn& b) { return a.ns > b.ns; });
  return on;
}

struct GState {
  GreenThreadSummary s;
  int64_t created = -1;  // ts of its go event, -1 when not in the trace
  std::vector<const TraceEvent*> slices;
  std::vector<int64_t> wakes;
  BlockedMap blocked;
};

// Adds one wait of `ns` on `wait` (a WAIT object) to a thread's `blocked` and to the channels.
void add_blocked(BlockedMap& blocked, std::map<std::string, ChannelSummary>& channels,
                 const Json& wait, int64_t ns) {
  const std::string kind = wait["kind"].get<std::string>();
  const std::string obj = wait["obj"].get<std::string>();
  // A select's cases as labels, sorted, each once; the channels among them, each once.
  std::vector<std::string> cases;
  std::set<std::string> case_channels;
  if (auto cs = wait.find("cases"); cs != wait.end()) {
    for (const Json& c : *cs) {
      const std::string ck = c["kind"].get<std::string>();
      const std::string co = c["obj"].get<std::string>();
      cases.push_back(wait_label(ck, co));
      if (ck.rfind("chan.", 0) == 0) case_channels.insert(co);
    }
    std::sort(cases.begin(), cases.end());
    cases.erase(std::unique(cases.begin(), cases.end()), cases.end());
  }
  std::string joined;
  for (const std::string& c : cases) joined += c + '\n';
  BlockedOn& b = blocked[{kind, obj, joined}];
  if (b.count == 0) {
    b.kind = kind;
    b.obj = obj;
    b.cases = std::move(cases);
  }
  add_to(b.ns, ns);
  b.count += 1;
  auto channel = [&](const std::string& name) -> ChannelSummary& {
    ChannelSummary& c = channels[name];
    c.name = name;
    return c;
  };
  if (kind == "chan.send") add_to(channel(obj).send_ns, ns);
  if (kind == "chan.recv") add_to(channel(obj).recv_ns, ns);
  if (kind == "select") {
    for (const std::string& name : case_channels) add_to(channel(name).select_ns, ns);
  }
}

void summarize_gthread(GState& g, int64_t trace_end, std::map<std::string, ChannelSummary>& ch) {
  auto by_ts = [](const TraceEvent* a, const TraceEvent* b) {
    return a->ts != b->ts ? a->ts < b->ts : a->index < b->index;
  };
  std::sort(g.slices.begin(), g.slices.end(), by_ts);
  std::sort(g.wakes.begin(), g.wakes.end());
  GreenThreadSummary& s = g.s;
  s.slices = static_cast<int64_t>(g.slices.size());
  if (g.slices.empty()) {
    // Created but never ran within the trace: runnable from creation to the end.
    if (g.created >= 0) s.runnable_ns = std::max<int64_t>(0, trace_end - g.created);
    return;
  }
  const int64_t first = g.slices.front()->ts;
  int64_t ready = g.created;
  if (ready < 0 && !g.wakes.empty() && g.wakes.front() <= first) ready = g.wakes.front();
  if (ready >= 0) add_to(s.runnable_ns, std::max<int64_t>(0, first - ready));
  for (size_t k = 0; k < g.slices.size(); ++k) {
    const TraceEvent& sl = *g.slices[k];
    const int64_t end = sl.ts + sl.dur;
    add_to(s.running_ns, sl.dur);
    const std::string how = sl.args["end"].get<std::string>();
    // A slice after an exit is a later green thread with the same id (ids are per scheduler and
    // a process may run several): its time is counted, the gap between them is not.
    s.exited = how == "exit";
    if (s.exited) continue;
    const int64_t next = k + 1 < g.slices.size() ? g.slices[k + 1]->ts : trace_end;
    const int64_t gap = std::max<int64_t>(0, next - end);
    if (how == "yield") {
      add_to(s.runnable_ns, gap);
      continue;
    }
    // Parked: blocked up to the wake that came after this slice began (a waker may find the
    // green thread in a wait queue before its switch-out ends), runnable from there.
    auto w = std::upper_bound(g.wakes.begin(), g.wakes.end(), sl.ts);
    int64_t blocked = gap;
    if (w != g.wakes.end() && *w <= next) {
      const int64_t woke = std::clamp(*w, end, std::max(end, next));
      blocked = woke - end;
    }
    add_to(s.blocked_ns, blocked);
    add_to(s.runnable_ns, gap - blocked);
    add_blocked(g.blocked, ch, sl.args["wait"], blocked);
  }
  s.blocked_on = blocked_list(g.blocked);
}

// From the node slice that ends last, back through the input whose slice ended last (ties: the
// lower node id, then the slice earlier in the trace). A node that ran more than once on the
// process contributes each slice; an input is taken only among slices that ended by the time the
// current one ended and are not on the path yet, which also ends the walk on malformed inputs
// that name a later node or the node itself.
//
// In O(n log n) for n slices plus the inputs of the path's slices: each node's slices are sorted
// latest end first (ties in trace order), and a node's best slice for the current step is the
// first one in that order that is not on the path and ends by the current slice's end. Both
// conditions only exclude more as the walk goes on (each step ends no later than the one before;
// a slice on the path stays on it), so a cursor per node skips each slice at most once. (Scanning
// every slice of every input at each step was quadratic: 20,000 slices of a few nodes took 17 s.)
CriticalPath critical_path(int64_t pid, int64_t run, const std::vector<const TraceEvent*>& slices,
                           const Trace& t) {
  auto end_of = [&](size_t i) { return slices[i]->ts + slices[i]->dur; };
  auto slice_end = [](const TraceEvent* e) { return e->ts + e->dur; };
  struct NodeSlices {
    std::vector<size_t> by_end;  // indices into `slices`, latest end first
    size_t next = 0;             // the first of by_end that may still be taken
  };
  std::unordered_map<int64_t, NodeSlices> by_node;
  for (size_t i = 0; i < slices.size(); ++i) {
    by_node[slices[i]->args["node"].get<int64_t>()].by_end.push_back(i);
  }
  for (auto& [node, ns] : by_node) {
    std::stable_sort(ns.by_end.begin(), ns.by_end.end(),
                     [&](size_t a, size_t b) { return end_of(a) > end_of(b); });
  }
  std::vector<const TraceEvent*> chain;
  std::vector<bool> on_path(slices.size(), false);
  std::optional<size_t> cur;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (!cur || end_of(i) > end_of(*cur)) cur = i;
  }
  while (cur) {
    on_path[*cur] = true;
    chain.push_back(slices[*cur]);
    std::optional<size_t> best;
    int64_t best_node = 0;
    for (const Json& in : slices[*cur]->args["inputs"]) {
      const int64_t n = in.get<int64_t>();
      auto it = by_node.find(n);
      if (it == by_node.end()) continue;
      NodeSlices& ns = it->second;
      while (ns.next < ns.by_end.size() &&
             (on_path[ns.by_end[ns.next]] || end_of(ns.by_end[ns.next]) > end_of(*cur))) {
        ++ns.next;
      }
      if (ns.next == ns.by_end.size()) continue;
      const size_t e = ns.by_end[ns.next];
      if (!best || end_of(e) > end_of(*best) || (end_of(e) == end_of(*best) && n < best_node)) {
        best = e;
        best_node = n;
      }
    }
    cur = best;
  }
  std::reverse(chain.begin(), chain.end());
  CriticalPath p;
  p.pid = pid;
  p.run = run;
  auto name = t.process_names.find(pid);
  p.process = name == t.process_names.end() ? "pid " + std::to_string(pid) : name->second;
  for (size_t k = 0; k < chain.size(); ++k) {
    const TraceEvent* e = chain[k];
    CriticalStep step;
    step.node = e->args["node"].get<int64_t>();
    step.name = e->name;
    step.start_ns = e->ts;
    step.dur_ns = e->dur;
    step.wait_ns = k == 0 ? 0 : std::max<int64_t>(0, e->ts - slice_end(chain[k - 1]));
    p.steps.push_back(step);
  }
  if (!chain.empty()) p.total_ns = slice_end(chain.back()) - chain.front()->ts;
  return p;
}

}  // namespace

int64_t ChannelSummary::total_ns() const {
  int64_t sum = send_ns;
  add_to(sum, recv_ns);
  add_to(sum, select_ns);
  return sum;
}

Summary summarize(const Trace& t) {
  Summary s;
  s.file = t.file;
  s.complete = t.complete;
  s.truncated = t.truncated;
  s.dropped_events = t.dropped_events;
  s.events = static_cast<int64_t>(t.events.size());
  bool any_time = false;
  for (const TraceEvent& e : t.events) {
    s.events_by_cat[e.cat] += 1;
    if (e.ph == 'M') continue;
    s.start_ns = any_time ? std::min(s.start_ns, e.ts) : e.ts;
    s.end_ns = any_time ? std::max(s.end_ns, e.ts + e.dur) : e.ts + e.dur;
    any_time = true;
  }
  std::map<int64_t, GState> gs;
  std::map<std::pair<int64_t, int64_t>, std::vector<const TraceEvent*>> nodes;  // (pid, run)
  std::map<std::string, ChannelSummary> channels;
  std::map<std::pair<int64_t, int64_t>, std::pair<OsThreadSummary, BlockedMap>> os;  // (pid, tid)
  for (const TraceEvent& e : t.events) {
    if (e.ph == 'X' && e.cat == "run") {
      GState& g = gs[e.args["g"].get<int64_t>()];
      g.slices.push_back(&e);
      if (g.s.name.empty()) g.s.name = e.name;
    } else if (e.ph == 'i' && e.cat == "gthread" && e.name == "go") {
      GState& g = gs[e.args["g"].get<int64_t>()];
      g.s.name = e.args["gname"].get<std::string>();
      g.s.parent = e.args.value("parent", int64_t{0});
      g.created = e.ts;
    } else if (e.ph == 's' && e.cat == "wake" && e.args.contains("g")) {
      gs[e.args["g"].get<int64_t>()].wakes.push_back(e.ts);
    } else if (e.ph == 'X' && e.cat == "node") {
      nodes[{e.pid, e.args.value("run", int64_t{-1})}].push_back(&e);
    } else if (e.ph == 'X' && e.cat == "wait" && e.name == "blocked") {
      auto& [thread, blocked] = os[{e.pid, e.tid}];
      add_to(thread.blocked_ns, e.dur);
      thread.waits += 1;
      add_blocked(blocked, channels, e.args["wait"], e.dur);
    }
  }
  for (auto& [key, entry] : os) {
    OsThreadSummary& thread = entry.first;
    thread.pid = key.first;
    thread.tid = key.second;
    auto name = t.thread_names.find(key);
    thread.name = name == t.thread_names.end() ? "tid " + std::to_string(key.second) : name->second;
    thread.blocked_on = blocked_list(entry.second);
    s.os_threads.push_back(std::move(thread));
  }
  for (auto& [id, g] : gs) {
    g.s.g = id;
    summarize_gthread(g, s.end_ns, channels);
    s.gthreads.push_back(std::move(g.s));
  }
  for (auto& [name, c] : channels) s.channels.push_back(c);
  std::stable_sort(
      s.channels.begin(), s.channels.end(),
      [](const ChannelSummary& a, const ChannelSummary& b) { return a.total_ns() > b.total_ns(); });
  for (const auto& [key, slices] : nodes) {
    s.critical_paths.push_back(critical_path(key.first, key.second, slices, t));
  }
  std::stable_sort(s.critical_paths.begin(), s.critical_paths.end(),
                   [](const CriticalPath& a, const CriticalPath& b) {
                     return a.pid != b.pid ? a.pid < b.pid : a.total_ns > b.total_ns;
                   });
  return s;
}

std::string wait_label(const std::string& kind, const std::string& obj) {
  return obj.empty() || obj == kind ? kind : kind + " " + obj;
}

std::string human_duration(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const double v = std::fabs(static_cast<double>(ns));
  if (v < 1000) return sign + std::to_string(static_cast<int64_t>(v)) + "ns";
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  char buf[32];
  for (size_t u = 0; u < std::size(kUnits); ++u) {
    const double x = v / kUnits[u].scale;
    // Rounded to three significant digits, 999.6 would print as 1000: the next unit says it.
    if (x >= 999.5 && u + 1 < std::size(kUnits)) continue;
    const int decimals = x < 9.995 ? 2 : x < 99.95 ? 1 : 0;
    std::snprintf(buf, sizeof buf, "%s%.*f%s", sign, decimals, x, kUnits[u].unit);
    return buf;
  }
  return buf;  // not reached: the last unit always returns
}

namespace {

std::string fit(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 2) + "..";
}

std::string with_commas(int64_t n) {
  std::string d = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(d.size()) - 3; i > 0; i -= 3) d.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + d;
}

// One line per (kind, object) a thread waited on, `noun` counting the waits ("park", "wait"),
// a select's cases on lines of their own, wrapped at 100 columns.
void put_blocked_on(std::ostringstream& o, const std::vector<BlockedOn>& on, const char* noun) {
  char line[512];
  for (const BlockedOn& b : on) {
    std::snprintf(line, sizeof line, "  %6s    blocked on %-42s %10s  %lld %s%s\n", "",
                  fit(wait_label(b.kind, b.obj), 42).c_str(), human_duration(b.ns).c_str(),
                  static_cast<long long>(b.count), noun, b.count == 1 ? "" : "s");
    o << line;
    std::string cases = "              cases:";
    for (size_t i = 0; i < b.cases.size(); ++i) {
      const std::string item = " " + b.cases[i] + (i + 1 < b.cases.size() ? "," : "");
      if (cases.size() + item.size() > 100) {
        o << cases << "\n";
        cases = "                    ";
      }
      cases += item;
    }
    if (!b.cases.empty()) o << cases << "\n";
  }
}

}  // namespace

std::string format_summary(const Summary& s, size_t top_channels) {
  std::ostringstream o;
  char line[512];
  o << "trace " << s.file << ": " << (s.complete ? "complete" : "INCOMPLETE") << "\n";
  if (s.truncated) o << "  the file was cut short: read up to its last complete event\n";
  if (!s.complete && !s.truncated) o << "  the writer did not mark it complete\n";
  std::snprintf(line, sizeof line, "  span %s .. %s (%s), %s events, %s dropped\n",
                human_duration(s.start_ns).c_str(), human_duration(s.end_ns).c_str(),
                human_duration(s.end_ns - s.start_ns).c_str(), with_commas(s.events).c_str(),
                with_commas(s.dropped_events).c_str());
  o << line;
  std::string cats = "  by cat:";
  for (const auto& [cat, n] : s.events_by_cat) {
    const std::string item =
        " " + (cat.empty() ? std::string("(none)") : cat) + " " + with_commas(n) + ",";
    if (cats.size() + item.size() > 99) {
      o << cats << "\n";
      cats = "         ";
    }
    cats += item;
  }
  if (!s.events_by_cat.empty()) cats.pop_back();
  o << cats << "\n\n";

  o << "green threads (" << s.gthreads.size() << ")\n";
  if (!s.gthreads.empty()) {
    std::snprintf(line, sizeof line, "  %6s  %-32s %10s %10s %10s %7s  %s\n", "g", "name",
                  "running", "runnable", "blocked", "slices", "state");
    o << line;
  }
  for (const GreenThreadSummary& g : s.gthreads) {
    std::snprintf(line, sizeof line, "  %6lld  %-32s %10s %10s %10s %7lld  %s\n",
                  static_cast<long long>(g.g), fit(g.name, 32).c_str(),
                  human_duration(g.running_ns).c_str(), human_duration(g.runnable_ns).c_str(),
                  human_duration(g.blocked_ns).c_str(), static_cast<long long>(g.slices),
                  g.exited ? "exited" : "live");
    o << line;
    put_blocked_on(o, g.blocked_on, "park");
  }
  if (!s.os_threads.empty()) {
    o << "\nOS threads that blocked (" << s.os_threads.size() << ")\n";
    std::snprintf(line, sizeof line, "  %6s  %-32s %10s %7s\n", "tid", "name", "blocked", "waits");
    o << line;
  }
  for (const OsThreadSummary& t : s.os_threads) {
    std::snprintf(line, sizeof line, "  %6lld  %-32s %10s %7lld\n", static_cast<long long>(t.tid),
                  fit(t.name, 32).c_str(), human_duration(t.blocked_ns).c_str(),
                  static_cast<long long>(t.waits));
    o << line;
    put_blocked_on(o, t.blocked_on, "wait");
  }

  const size_t shown = std::min(top_channels, s.channels.size());
  o << "\ntop channels by blocked time (" << shown << " of " << s.channels.size() << ")\n";
  if (shown > 0) {
    std::snprintf(line, sizeof line, "  %-40s %10s %10s %10s %10s\n", "channel", "total", "send",
                  "recv", "select");
    o << line;
  }
  for (size_t i = 0; i < shown; ++i) {
    const ChannelSummary& c = s.channels[i];
    std::snprintf(line, sizeof line, "  %-40s %10s %10s %10s %10s\n", fit(c.name, 40).c_str(),
                  human_duration(c.total_ns()).c_str(), human_duration(c.send_ns).c_str(),
                  human_duration(c.recv_ns).c_str(), human_duration(c.select_ns).c_str());
    o << line;
  }
  for (size_t first = 0, next; first < s.critical_paths.size(); first = next) {
    // The process's runs are [first, next), longest first.
    for (next = first + 1; next < s.critical_paths.size() &&
                           s.critical_paths[next].pid == s.critical_paths[first].pid;
         ++next) {
    }
    const CriticalPath& p = s.critical_paths[first];
    o << "\ncritical path of " << p.process << " (pid " << p.pid << ")";
    if (p.run >= 0) {
      o << ", run " << p.run;
      if (next - first > 1) o << " (the longest of " << next - first << " runs)";
    }
    o << ": " << p.steps.size() << " node" << (p.steps.size() == 1 ? "" : "s") << ", "
      << human_duration(p.total_ns) << "\n";
    std::snprintf(line, sizeof line, "  %6s  %-40s %10s %10s %10s\n", "node", "name", "start",
                  "duration", "wait");
    o << line;
    for (const CriticalStep& st : p.steps) {
      std::snprintf(line, sizeof line, "  %6lld  %-40s %10s %10s %10s\n",
                    static_cast<long long>(st.node), fit(st.name, 40).c_str(),
                    human_duration(st.start_ns).c_str(), human_duration(st.dur_ns).c_str(),
                    human_duration(st.wait_ns).c_str());
      o << line;
    }
    if (next - first > 1) {
      std::string runs = "  other runs:";
      const size_t shown_runs = std::min(next - first - 1, top_channels);
      for (size_t k = first + 1; k < first + 1 + shown_runs; ++k) {
        const std::string item = " run " + std::to_string(s.critical_paths[k].run) + " " +
                                 human_duration(s.critical_paths[k].total_ns) + ",";
        if (runs.size() + item.size() > 99) {
          o << runs << "\n";
          runs = "             ";
        }
        runs += item;
      }
      runs.pop_back();
      if (next - first - 1 > shown_runs)
        runs += " and " + std::to_string(next - first - 1 - shown_runs) + " more";
      o << runs << "\n";
    }
  }
  return o.str();
}

nlohmann::json summary_to_json(const Summary& s, size_t top_channels) {
  Json j;
  j["file"] = s.file;
  j["complete"] = s.complete;
  j["truncated"] = s.truncated;
  j["dropped_events"] = s.dropped_events;
  j["span"] = {{"start_ns", s.start_ns}, {"end_ns", s.end_ns}, {"dur_ns", s.end_ns - s.start_ns}};
  Json by_cat = Json::object();
  for (const auto& [cat, n] : s.events_by_cat) by_cat[cat] = n;
  j["events"] = {{"total", s.events}, {"by_cat", by_cat}};
  auto blocked_on = [](const std::vector<BlockedOn>& list, const char* count) {
    Json on = Json::array();
    for (const BlockedOn& b : list) {
      on.push_back({{"kind", b.kind},
                    {"obj", b.obj},
                    {"cases", b.cases},
                    {"blocked_ns", b.ns},
                    {count, b.count}});
    }
    return on;
  };
  Json gts = Json::array();
  for (const GreenThreadSummary& g : s.gthreads) {
    const Json on = blocked_on(g.blocked_on, "parks");
    gts.push_back({{"g", g.g},
                   {"name", g.name},
                   {"parent", g.parent},
                   {"running_ns", g.running_ns},
                   {"runnable_ns", g.runnable_ns},
                   {"blocked_ns", g.blocked_ns},
                   {"slices", g.slices},
                   {"exited", g.exited},
                   {"blocked_on", on}});
  }
  j["green_threads"] = gts;
  Json os = Json::array();
  for (const OsThreadSummary& t : s.os_threads) {
    os.push_back({{"pid", t.pid},
                  {"tid", t.tid},
                  {"name", t.name},
                  {"blocked_ns", t.blocked_ns},
                  {"waits", t.waits},
                  {"blocked_on", blocked_on(t.blocked_on, "waits")}});
  }
  j["os_threads"] = os;
  Json chans = Json::array();
  for (size_t i = 0; i < std::min(top_channels, s.channels.size()); ++i) {
    const ChannelSummary& c = s.channels[i];
    chans.push_back({{"name", c.name},
                     {"total_ns", c.total_ns()},
                     {"send_ns", c.send_ns},
                     {"recv_ns", c.recv_ns},
                     {"select_ns", c.select_ns}});
  }
  j["channels"] = chans;
  j["channels_total"] = s.channels.size();
  Json paths = Json::array();
  for (const CriticalPath& p : s.critical_paths) {
    Json steps = Json::array();
    for (const CriticalStep& st : p.steps) {
      steps.push_back({{"node", st.node},
                       {"name", st.name},
                       {"start_ns", st.start_ns},
                       {"dur_ns", st.dur_ns},
                       {"wait_ns", st.wait_ns}});
    }
    paths.push_back({{"pid", p.pid},
                     {"run", p.run},
                     {"process", p.process},
                     {"total_ns", p.total_ns},
                     {"nodes", steps}});
  }
  j["critical_paths"] = paths;
  return j;
}

}  // namespace chanflow::tools
