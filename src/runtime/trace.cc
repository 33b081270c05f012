// trace.cc — green-thread events in per-thread buffers, rendered as Chrome trace JSON.
#include "chanflow/runtime/trace.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "task.h"
#include "trace_impl.h"

namespace chanflow::detail {

std::atomic<bool> g_trace_enabled{false};

namespace {

struct Event {
  int64_t ts_ns;
  uint64_t task;
  int32_t worker;
  TraceKind kind;
};

struct ThreadBuffer {
  os::SpinLock lock;  // uncontended except while a reader renders
  std::vector<Event> events CHANFLOW_GUARDED_BY(lock);
  std::vector<std::pair<uint64_t, std::string>> names CHANFLOW_GUARDED_BY(lock);
  // Events this thread may still keep (reserved from g_reserved), whether the recording's bound
  // is used up, and the events it did not keep.
  std::size_t budget CHANFLOW_GUARDED_BY(lock) = 0;
  bool exhausted CHANFLOW_GUARDED_BY(lock) = false;
  std::size_t dropped CHANFLOW_GUARDED_BY(lock) = 0;

  void clear() CHANFLOW_REQUIRES(lock) {
    events.clear();
    names.clear();
    budget = 0;
    exhausted = false;
    dropped = 0;
  }
};

os::Mutex g_buffers_mu;
// Every thread's buffer.
std::vector<std::shared_ptr<ThreadBuffer>>& buffers() CHANFLOW_REQUIRES(g_buffers_mu) {
  static auto* const kBuffers = new std::vector<std::shared_ptr<ThreadBuffer>>();
  return *kBuffers;
}
std::atomic<uint64_t> g_generation{0};

// The recording's bound and the events reserved against it. A thread reserves kReserveChunk
// events at a time, so the shared counter is touched once per chunk, not per event, and the
// events kept never exceed the bound. Relaxed: they are counts; start() writes them before it
// publishes a new generation (release), which a recorder reads (acquire) before using them.
constexpr std::size_t kReserveChunk = 256;
std::atomic<std::size_t> g_max_events{trace::kDefaultMaxEvents};
std::atomic<std::size_t> g_reserved{0};

// Up to kReserveChunk events of the bound for one thread; 0 when it is used up.
std::size_t reserve_events() noexcept {
  const std::size_t max = g_max_events.load(std::memory_order_relaxed);
  if (max == 0) return kReserveChunk;  // unbounded
  const std::size_t before = g_reserved.fetch_add(kReserveChunk, std::memory_order_relaxed);
  return before >= max ? 0 : std::min(kReserveChunk, max - before);
}

struct Local {
  std::shared_ptr<ThreadBuffer> buf;
  uint64_t generation = ~uint64_t{0};
};
thread_local Local t_local;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void trace_record_slow(TraceKind kind, const Task* t, int worker) noexcept {
  try {
    if (!t_local.buf) {
      t_local.buf = std::make_shared<ThreadBuffer>();
      os::LockGuard g(g_buffers_mu);
      buffers().push_back(t_local.buf);
    }
    ThreadBuffer& b = *t_local.buf;
    os::LockGuard g(b.lock);
    const uint64_t gen = g_generation.load(std::memory_order_acquire);
    if (t_local.generation != gen) {  // start() cleared the trace
      b.clear();
      t_local.generation = gen;
    }
    if (b.budget == 0 && !b.exhausted) {
      b.budget = reserve_events();
      b.exhausted = b.budget == 0;
    }
    if (b.budget == 0) {
      ++b.dropped;
      return;
    }
    --b.budget;
    b.events.push_back(Event{now_ns(), t->id, worker, kind});
    if (kind == TraceKind::kStart) b.names.emplace_back(t->id, display_name(t));
  } catch (...) {
    // Out of memory while tracing: drop the event rather than disturb the program.
  }
}

}  // namespace chanflow::detail

namespace chanflow::trace {

using detail::g_trace_enabled;

void start(std::size_t max_events) {
  {
    os::LockGuard g(detail::g_buffers_mu);
    for (auto& b : detail::buffers()) {
      os::LockGuard bl(b->lock);
      b->clear();
    }
  }
  detail::g_max_events.store(max_events, std::memory_order_relaxed);
  detail::g_reserved.store(0, std::memory_order_relaxed);
  detail::g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_trace_enabled.store(true, std::memory_order_release);
}

void stop() { g_trace_enabled.store(false, std::memory_order_release); }

bool enabled() noexcept { return g_trace_enabled.load(std::memory_order_relaxed); }

namespace {
struct Snapshot {
  std::vector<detail::Event> events;
  std::map<uint64_t, std::string> names;
  std::size_t dropped = 0;
};
Snapshot snapshot() {
  Snapshot s;
  os::LockGuard g(detail::g_buffers_mu);
  for (auto& b : detail::buffers()) {
    os::LockGuard bl(b->lock);
    s.events.insert(s.events.end(), b->events.begin(), b->events.end());
    for (auto& [id, name] : b->names) s.names[id] = name;
    s.dropped += b->dropped;
  }
  std::sort(s.events.begin(), s.events.end(),
            [](const detail::Event& a, const detail::Event& b) { return a.ts_ns < b.ts_ns; });
  return s;
}
}  // namespace

std::size_t event_count() { return snapshot().events.size(); }

std::size_t dropped_count() {
  std::size_t n = 0;
  os::LockGuard g(detail::g_buffers_mu);
  for (auto& b : detail::buffers()) {
    os::LockGuard bl(b->lock);
    n += b->dropped;
  }
  return n;
}

namespace {

// The document is rendered straight to text, never as a JSON tree: a tree costs about 2 KB an
// event, the text about 150 bytes, so a large trace fits in memory and writes in well under a
// second (docs/runtime.md, "Tracing").
void append_string(std::string& out, std::string_view s) {
  // nlohmann's escaping; bytes that are not UTF-8 (a green thread's name may hold any) become
  // U+FFFD instead of an error.
  out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <class... A>
void append_format(std::string& out, const char* format, A... args) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof(buf), format, args...);
  out.append(buf, static_cast<std::size_t>(std::min<int>(n, sizeof(buf) - 1)));
}

// The inside of a JSON array or object given as text ("[a,b]" -> "a,b"); Error when `text` is not
// bracketed by `open` and `close`.
std::string_view inside(std::string_view text, char open, char close, const char* what) {
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != open || text[last] != close) {
    CHANFLOW_THROW(Error) << "trace::to_json: " << what << " is not a JSON " << open << "..."
                          << close;
  }
  std::string_view in = text.substr(first + 1, last - first - 1);
  return in.find_first_not_of(" \t\r\n") == std::string_view::npos ? std::string_view() : in;
}

}  // namespace

std::string to_json(std::string_view more_events, std::string_view more_other_data) {
  Snapshot s = snapshot();
  auto name_of = [&](uint64_t id) {
    auto it = s.names.find(id);
    return it != s.names.end() ? it->second : "#" + std::to_string(id);
  };
  const int64_t t0 = s.events.empty() ? 0 : s.events.front().ts_ns;
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto next = [&] {
    if (!first) out += ',';
    first = false;
  };
  // One slice per run of a green thread on a worker: resume -> park or exit.
  std::map<uint64_t, const detail::Event*> running;
  std::set<int> lanes;
  for (const detail::Event& e : s.events) {
    switch (e.kind) {
      case detail::TraceKind::kStart:
        next();
        out += "{\"name\":";
        append_string(out, "go " + name_of(e.task));
        append_format(out,
                      ",\"ph\":\"i\",\"s\":\"p\",\"ts\":%.3f,\"pid\":1,\"tid\":0,"
                      "\"args\":{\"green_thread\":%llu}}",
                      us(e.ts_ns), static_cast<unsigned long long>(e.task));
        break;
      case detail::TraceKind::kResume:
        running[e.task] = &e;
        break;
      case detail::TraceKind::kPark:
      case detail::TraceKind::kExit: {
        auto it = running.find(e.task);
        if (it != running.end()) {
          const detail::Event& r = *it->second;
          lanes.insert(r.worker);
          next();
          out += "{\"name\":";
          append_string(out, name_of(e.task));
          append_format(out,
                        ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":1,\"tid\":%d,"
                        "\"args\":{\"green_thread\":%llu,\"end\":\"%s\"}}",
                        us(r.ts_ns), us(e.ts_ns) - us(r.ts_ns), r.worker + 1,
                        static_cast<unsigned long long>(e.task),
                        e.kind == detail::TraceKind::kExit ? "exit" : "park");
          running.erase(it);
        }
        break;
      }
    }
  }
  next();
  out += R"({"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"spawns"}})";
  for (int lane : lanes) {
    next();
    append_format(out,
                  R"({"name":"thread_name","ph":"M","pid":1,"tid":%d,"args":{"name":"worker %d"}})",
                  lane + 1, lane);
  }
  const std::size_t max_events = detail::g_max_events.load(std::memory_order_relaxed);
  if (s.dropped > 0) {  // where the recording stops: a mark a viewer shows
    next();
    append_format(out,
                  R"({"name":"trace limit: %zu events dropped","ph":"i","s":"g","ts":%.3f,)"
                  R"("pid":1,"tid":0,"args":{"dropped_events":%zu,"max_events":%zu}})",
                  s.dropped, s.events.empty() ? 0.0 : us(s.events.back().ts_ns), s.dropped,
                  max_events);
  }
  if (std::string_view more = inside(more_events, '[', ']', "more_events"); !more.empty()) {
    next();
    out += more;
  }
  append_format(out,
                R"(],"displayTimeUnit":"ns","otherData":{"dropped_events":%zu,)"
                R"("max_events":%zu)",
                s.dropped, max_events);
  if (std::string_view more = inside(more_other_data, '{', '}', "more_other_data"); !more.empty()) {
    out += ',';
    out += more;
  }
  out += "}}";
  return out;
}

void write_json(const std::string& path) {
  std::ofstream f(path);
  if (!f) CHANFLOW_THROW(Error) << "trace::write_json: cannot open " << path << " for writing";
  f << to_json();
  if (!f) CHANFLOW_THROW(Error) << "trace::write_json: writing " << path << " failed";
}

}  // namespace chanflow::trace
