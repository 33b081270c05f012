// block.h — the one way a chanflow primitive blocks its caller (private).
//
// Every blocking call (channel send and receive, select, Mutex::lock, WaitGroup::wait, sleep, a
// nil channel) follows one protocol, written here once:
//
//   1. Under the lock of what it waits on, the caller links its Waiter record(s) — which live in
//      its own frame — into the wait queue(s), and arms its Parker with what it waits on.
//   2. It parks. The lock is released only once a waker may wake it (after the switch on a green
//      thread, before the futex sleep on an OS thread): a waker needs that lock to find the
//      Waiter, so no wake-up is lost (wait.h).
//   3. Exactly one of two things ends the wait. A waker wins Parker::try_claim(), records which
//      Waiter fired, and unparks it: block() returns. Or the wait is canceled (deadlock detection,
//      scheduler teardown): the caller removes what it linked — the waker that would have found
//      it can no longer claim the parker — and throws (DeadlockError on an OS thread; a green
//      thread unwinds with FiberUnwind). A canceled wait never returns.
//
//   WaitGroup::wait, for example:
//     lock_.lock();
//     if (count_ == 0) { lock_.unlock(); return; }
//     Waiter w;
//     block_in(lock_, waiters_, w, WaitReason::kWaitGroup, this);  // returns with lock_ released
//
// block() is the general form (any Lock with unlock(); the caller links and cleans up),
// block_in() waits in one WaitQueue, block_in_all() in several at once (select). Only the
// scheduler's own drain parks without it (it unwinds green threads on cancel, it does not throw).
//
// Checked locking: each takes the lock held and returns with it released (CHANFLOW_RELEASE), so
// Clang's analysis checks that a caller holds the lock it hands over and does not touch it after.
// Lock must be a capability (thread_annotations.h). A lock the caller took as something else (a
// channel's lock, the timer heap's) is handed over through a scoped adapter whose constructor
// names the lock it adopts (ChanLock, chan_ops.h).
#pragma once

#include <cstdint>

#include "chanflow/core/thread_annotations.h"
#include "chanflow/runtime/detail/wait.h"

namespace chanflow::detail {

// park()'s callback: the lock is released on the far side of the switch, where the analysis
// cannot follow it.
template <class Lock>
void unlock_thunk(void* lock) noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<Lock*>(lock)->unlock();
}

// Nothing to release: a wait that no one can end (the nil channel). A capability so that block()'s
// annotation applies to it: the caller "takes" it with lock() before handing it over.
struct CHANFLOW_CAPABILITY("mutex") NoLock {
  void lock() noexcept CHANFLOW_ACQUIRE() {}
  void unlock() noexcept CHANFLOW_RELEASE() {}
};

// Nothing extra to undo on cancel.
struct NoCleanup {
  void operator()() const noexcept {}
};

// Step 2 and 3 for any wait: `lock` (held, with unlock()) guards what the caller linked its
// waiters into; `reason`, `obj` and `ws[0..n)` describe the wait (deadlock reports, traces).
// Returns once a waker claimed `p` (p->fired: the waiter that fired; the waker's writes visible).
// On cancel: calls on_cancel() — without `lock`, which it must retake itself to unlink — then
// throws. Not analysed inside: park() releases `lock` through its callback, on the far side of
// the switch; callers are checked against CHANFLOW_RELEASE(lock).
template <class Lock, class OnCancel>
void block(Lock& lock, Parker* p, WaitReason reason, const void* obj, const Waiter* ws, uint32_t n,
           OnCancel&& on_cancel) CHANFLOW_RELEASE(lock) CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  p->arm(reason, obj, ws, n);
  if (park(p, &unlock_thunk<Lock>, &lock) == Parker::kCanceled) {
    on_cancel();
    throw_park_canceled(p);
  }
}

// A wait in one queue: links `w` (its parker is set here; the caller sets the rest) at the tail
// of `q`, which `lock` (held) guards, and blocks. Returns with `lock` released once a waker
// claimed the caller: it has already unlinked `w`. On cancel: retakes `lock`, unlinks `w`, runs
// also() (still under `lock`: undo what the wait announced), releases `lock` and throws.
template <class Lock, class Also = NoCleanup>
void block_in(Lock& lock, WaitQueue& q, Waiter& w, WaitReason reason, const void* obj,
              Also&& also = Also{}) CHANFLOW_RELEASE(lock) {
  Parker* p = current_parker();
  w.parker = p;
  q.push_back(&w);
  block(lock, p, reason, obj, &w, 1, [&] {
    lock.lock();
    q.remove(&w);
    also();
    lock.unlock();
  });
}

// A wait in several queues at once (select): ws[0..n), their parker set here and the rest by the
// caller, are linked each at the tail of queue_of(ws[i]), all guarded by `locks` (held: lock()
// and unlock() take and release every one). Returns the waiter that fired, with `locks` released
// and every other waiter unlinked. On cancel: unlinks them all and throws.
template <class Locks, class QueueOf>
Waiter* block_in_all(Locks& locks, Waiter* ws, uint32_t n, QueueOf&& queue_of)
    CHANFLOW_RELEASE(locks) {
  Parker* p = current_parker();
  for (uint32_t i = 0; i < n; ++i) {
    ws[i].parker = p;
    queue_of(ws[i]).push_back(&ws[i]);
  }
  auto unlink_all = [&] {
    locks.lock();
    for (uint32_t i = 0; i < n; ++i) queue_of(ws[i]).remove(&ws[i]);  // the winner is unlinked
    locks.unlock();
  };
  block(locks, p, WaitReason::kSelect, nullptr, ws, n, unlink_all);
  unlink_all();
  return p->fired;
}

}  // namespace chanflow::detail
