// stage_trace.h — the pipeline's own trace events (loader batches, worker steps, waits for
// weights, optimiser steps, evaluations) and the merged Chrome trace of a run.
//
//   StageTrace st;                                   // origin: now
//   { auto s = st.slice("worker 0", "step 3");  ... }  // one "X" event when s goes out of scope
//   std::string json = merge_trace(st, sources);     // + scheduler, executor, GoMachine events
//
// Open the result in ui.perfetto.dev or chrome://tracing. Thread-safety: slice/instant may be
// called from any green thread or OS thread (a mutex guards the event list).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace train_digits {

int64_t steady_now_ns();

class StageTrace {
 public:
  explicit StageTrace(bool enabled = true) : enabled_(enabled), origin_ns_(steady_now_ns()) {}

  class Slice {
   public:
    Slice(StageTrace* t, std::string track, std::string name)
        : t_(t), track_(std::move(track)), name_(std::move(name)), begin_(steady_now_ns()) {}
    Slice(const Slice&) = delete;
    Slice& operator=(const Slice&) = delete;
    ~Slice() {
      if (t_ != nullptr) t_->add(track_, name_, begin_, steady_now_ns());
    }

   private:
    StageTrace* t_;
    std::string track_, name_;
    int64_t begin_;
  };
  // A slice on `track` from now until the returned object is destroyed.
  Slice slice(std::string track, std::string name) {
    return Slice(enabled_ ? this : nullptr, std::move(track), std::move(name));
  }
  // A complete slice [begin_ns, end_ns] (steady clock).
  void add(const std::string& track, const std::string& name, int64_t begin_ns, int64_t end_ns);
  // An instant event.
  void instant(const std::string& track, const std::string& name);

  bool enabled() const noexcept { return enabled_; }
  int64_t origin_ns() const noexcept { return origin_ns_; }
  // The events as a JSON array (pid 3, one tid per track), microseconds since origin_ns().
  std::string events_json() const;

 private:
  struct Event {
    std::string track, name;
    int64_t begin_ns, end_ns;  // end < 0: instant
  };
  bool enabled_;
  int64_t origin_ns_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<std::string> tracks_;
};

// Another trace document to merge: its JSON (an object with traceEvents, or an array), the
// steady-clock time its timestamps count from, and the pid its events get (pid_base + their own
// pid - 1) with a process name.
struct TraceSource {
  std::string json;
  int64_t origin_ns = 0;
  int pid_base = 1;
  std::string process_name;
};

// One Chrome trace document: the stage events (pid 3, "training pipeline") and every source,
// shifted to the stage trace's origin. Throws chanflow::Error if a source is not valid JSON.
std::string merge_trace(const StageTrace& stages, const std::vector<TraceSource>& sources);

}  // namespace train_digits
