// timer.h — after(): a channel that fires once after a duration (Go's time.After).
//
//   cf::select(cf::on_recv(results, [&](auto r) { ... }),
//              cf::on_recv(cf::after(100ms), [](auto) { throw Timeout(); }));
//
// Timers are served by one process-wide timer thread (a binary heap). sleep_for() is in
// scheduler.h.
#pragma once

#include <chrono>

#include "chanflow/core/export.h"
#include "chanflow/runtime/chan.h"

namespace chanflow {

// A channel (capacity 1) that receives the current time once, at least d from now. Never blocks.
// Thread-safe. The timer is not cancelable and keeps its channel alive until it fired.
CHANFLOW_API Chan<Clock::time_point> after(std::chrono::nanoseconds d);

}  // namespace chanflow
