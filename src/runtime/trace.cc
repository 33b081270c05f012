// trace.cc — green-thread events in per-thread buffers, rendered as Chrome trace JSON.
#include "chanflow/runtime/trace.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "chanflow/core/detail/spinlock.h"
#include "chanflow/core/error.h"
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
  SpinLock lock;  // uncontended except while a reader renders
  std::vector<Event> events;
  std::vector<std::pair<uint64_t, std::string>> names;
};

std::mutex g_buffers_mu;
std::vector<std::shared_ptr<ThreadBuffer>>& buffers() {
  static auto* const kBuffers = new std::vector<std::shared_ptr<ThreadBuffer>>();
  return *kBuffers;
}
std::atomic<uint64_t> g_generation{0};

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
      std::lock_guard<std::mutex> g(g_buffers_mu);
      buffers().push_back(t_local.buf);
    }
    ThreadBuffer& b = *t_local.buf;
    std::lock_guard<SpinLock> g(b.lock);
    const uint64_t gen = g_generation.load(std::memory_order_acquire);
    if (t_local.generation != gen) {  // start() cleared the trace
      b.events.clear();
      b.names.clear();
      t_local.generation = gen;
    }
    b.events.push_back(Event{now_ns(), t->id, worker, kind});
    if (kind == TraceKind::kStart) b.names.emplace_back(t->id, display_name(t));
  } catch (...) {
    // Out of memory while tracing: drop the event rather than disturb the program.
  }
}

}  // namespace chanflow::detail

namespace chanflow::trace {

using detail::g_trace_enabled;

void start() {
  {
    std::lock_guard<std::mutex> g(detail::g_buffers_mu);
    for (auto& b : detail::buffers()) {
      std::lock_guard<detail::SpinLock> bl(b->lock);
      b->events.clear();
      b->names.clear();
    }
  }
  detail::g_generation.fetch_add(1, std::memory_order_acq_rel);
  g_trace_enabled.store(true, std::memory_order_release);
}

void stop() { g_trace_enabled.store(false, std::memory_order_release); }

bool enabled() noexcept { return g_trace_enabled.load(std::memory_order_relaxed); }

namespace {
struct Snapshot {
  std::vector<detail::Event> events;
  std::map<uint64_t, std::string> names;
};
Snapshot snapshot() {
  Snapshot s;
  std::lock_guard<std::mutex> g(detail::g_buffers_mu);
  for (auto& b : detail::buffers()) {
    std::lock_guard<detail::SpinLock> bl(b->lock);
    s.events.insert(s.events.end(), b->events.begin(), b->events.end());
    for (auto& [id, name] : b->names) s.names[id] = name;
  }
  std::sort(s.events.begin(), s.events.end(),
            [](const detail::Event& a, const detail::Event& b) { return a.ts_ns < b.ts_ns; });
  return s;
}
}  // namespace

std::size_t event_count() { return snapshot().events.size(); }

std::string to_json() {
  using nlohmann::json;
  Snapshot s = snapshot();
  json events = json::array();
  auto name_of = [&](uint64_t id) {
    auto it = s.names.find(id);
    return it != s.names.end() ? it->second : "#" + std::to_string(id);
  };
  const int64_t t0 = s.events.empty() ? 0 : s.events.front().ts_ns;
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1000.0; };
  // One slice per run of a green thread on a worker: resume -> park or exit.
  std::map<uint64_t, const detail::Event*> running;
  std::map<int, bool> lanes;
  for (const detail::Event& e : s.events) {
    switch (e.kind) {
      case detail::TraceKind::kStart:
        events.push_back({{"name", "go " + name_of(e.task)},
                          {"ph", "i"},
                          {"s", "p"},
                          {"ts", us(e.ts_ns)},
                          {"pid", 1},
                          {"tid", 0},
                          {"args", {{"green_thread", e.task}}}});
        break;
      case detail::TraceKind::kResume:
        running[e.task] = &e;
        break;
      case detail::TraceKind::kPark:
      case detail::TraceKind::kExit: {
        auto it = running.find(e.task);
        if (it != running.end()) {
          const detail::Event& r = *it->second;
          lanes[r.worker] = true;
          events.push_back({{"name", name_of(e.task)},
                            {"ph", "X"},
                            {"ts", us(r.ts_ns)},
                            {"dur", us(e.ts_ns) - us(r.ts_ns)},
                            {"pid", 1},
                            {"tid", r.worker + 1},
                            {"args",
                             {{"green_thread", e.task},
                              {"end", e.kind == detail::TraceKind::kExit ? "exit" : "park"}}}});
          running.erase(it);
        }
        break;
      }
    }
  }
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 1},
                    {"tid", 0},
                    {"args", {{"name", "spawns"}}}});
  for (auto& [lane, unused] : lanes) {
    (void)unused;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", lane + 1},
                      {"args", {{"name", "worker " + std::to_string(lane)}}}});
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
  return doc.dump();
}

void write_json(const std::string& path) {
  std::ofstream f(path);
  if (!f) CHANFLOW_THROW(Error) << "trace::write_json: cannot open " << path << " for writing";
  f << to_json();
  if (!f) CHANFLOW_THROW(Error) << "trace::write_json: writing " << path << " failed";
}

}  // namespace chanflow::trace
