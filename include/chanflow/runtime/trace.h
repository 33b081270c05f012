// trace.h — recording green-thread activity as Chrome trace JSON (viewable in Perfetto).
//
//   cf::trace::start();
//   ... run green threads ...
//   cf::trace::stop();
//   cf::trace::write_json("trace.json");     // chrome://tracing or ui.perfetto.dev
//
// Events: a green thread's start, each resume and park on a worker (one slice per run), and its
// exit. Off by default, costing one relaxed load per event site; when on, an event is appended to
// a per-thread buffer (no lock on the hot path).
#pragma once

#include <cstddef>
#include <string>

#include "chanflow/core/export.h"

namespace chanflow::trace {

// Starts recording (clears earlier events). Thread-safe.
CHANFLOW_API void start();
// Stops recording; events stay until the next start(). Thread-safe.
CHANFLOW_API void stop();
// Whether recording is on.
CHANFLOW_API bool enabled() noexcept;
// Events recorded so far (a snapshot).
CHANFLOW_API std::size_t event_count();
// The recorded events as a Chrome trace JSON document.
CHANFLOW_API std::string to_json();
// Writes to_json() to path. Throws Error when the file cannot be written.
CHANFLOW_API void write_json(const std::string& path);

}  // namespace chanflow::trace
