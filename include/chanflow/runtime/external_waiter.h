// external_waiter.h — an OS thread that waits only for the outside world, and does not hold back
// deadlock detection.
//
// Deadlock detection (runtime.md) reports a deadlock only when every OS thread of the process is
// accounted for: a plain OS thread might still wake a waiter, so while one lives nothing is
// reported. A thread that waits for something outside the process — a signal, typically — and
// then only cancels a Context or closes a channel cannot end a deadlock by itself; it declares so:
//
//   std::thread([ctx] {
//     cf::ScopedExternalWaiter quiet;        // deadlock detection does not wait for this thread
//     wait_for_a_signal();                   // e.g. read() on a self-pipe a signal handler writes
//     ctx.cancel();
//   });
#pragma once

#include "chanflow/core/export.h"

namespace chanflow {

// While it lives, the calling OS thread is not counted as a thread that may wake a chanflow
// waiter. Construct it on that OS thread, never on a green thread. It counts a thread without
// identifying it, so any thread may destroy it: a thread that hands the waiter work destroys it
// before waiting for that work, so the waiter counts again from that moment (not only once it
// woke up). Never blocks.
class CHANFLOW_API ScopedExternalWaiter {
 public:
  ScopedExternalWaiter();
  ~ScopedExternalWaiter();
  ScopedExternalWaiter(const ScopedExternalWaiter&) = delete;
  ScopedExternalWaiter& operator=(const ScopedExternalWaiter&) = delete;
};

// Deadlock detection takes the threads that existed when chanflow was loaded (the main thread
// aside) for helpers that never wake a waiter: sanitizer and BLAS threads. A binding loaded into a
// program that already runs threads of its own — the Python module, imported after the script
// started threads — declares that `n` of them are such threads, which may send and receive: from
// then on they count as plain threads (while one exists, detection waits for it). Thread-safe.
// Never blocks.
CHANFLOW_API void count_preexisting_threads_as_plain(long n) noexcept;

}  // namespace chanflow
