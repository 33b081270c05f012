// stage_trace.h — the pipeline's own trace events (loader batches, worker steps, waits for
// weights, optimiser steps, evaluations) as slices in the runtime's trace (cf::trace), next to the
// green threads, the executor's ops and the GoMachines' nodes it records itself.
//
//   StageTrace st;                                      // process "training pipeline"
//   { auto s = st.slice("worker 0", "step 3");  ... }  // one slice when s goes out of scope
//
// Slices are recorded only while cf::trace is on. Thread-safety: slice/instant may be called from
// any green thread or OS thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "chanflow/runtime/trace.h"

namespace training {

// The trace clock (cf::trace::now_ns): every timing of the pipeline reads it.
inline int64_t steady_now_ns() { return chanflow::trace::now_ns(); }

class StageTrace {
 public:
  StageTrace() : pid_(chanflow::trace::process("training pipeline")) {}

  // A slice on `track` from now until the returned object is destroyed.
  chanflow::trace::ScopedSlice slice(const std::string& track, std::string name) {
    return chanflow::trace::ScopedSlice(track_of(track), "stage", std::move(name));
  }
  // An instant event on `track`.
  void instant(const std::string& track, const std::string& name) {
    chanflow::trace::instant(track_of(track), "stage", name, chanflow::trace::now_ns());
  }

 private:
  chanflow::trace::Track track_of(const std::string& track);

  uint32_t pid_;
  std::mutex mu_;
  std::map<std::string, chanflow::trace::Track> tracks_;
};

}  // namespace training
