// timer.h — the process-wide timer facility: a binary heap served by one timer thread (private).
//
// Timers fire callbacks on the timer thread; a callback must be short and must not block (they
// claim and unpark a parker, try_send on a channel, or cancel a context). timer_remove() returns
// false once a timer fired (or is firing; it then waits until the callback returned), so an owner
// may free the entry right after.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chanflow/runtime/chan.h"

namespace chanflow::detail {

struct TimerEntry {
  Clock::time_point when;
  void (*fire)(TimerEntry*) = nullptr;
  std::ptrdiff_t index = -1;  // position in the heap, -1 when not in it
  uint64_t seq = 0;           // FIFO among equal deadlines
};

void timer_add(TimerEntry* e);
bool timer_remove(TimerEntry* e);
// Timers in the heap or firing right now.
std::size_t timers_pending() noexcept;
// 1 once the timer thread exists.
int timer_threads() noexcept;

}  // namespace chanflow::detail
