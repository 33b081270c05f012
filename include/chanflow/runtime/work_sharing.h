// work_sharing.h — what a scheduler built on top of the runtime needs from it: a DAG runner (the
// GoMachine's node runners, say) that keeps its own queue of ready work on a green thread and
// must give that work away when it cannot run it.
//
//   void hand_off(void* runner) { static_cast<Runner*>(runner)->share_my_queue(); }
//
//   void run_ready(Runner& self) {                       // on a green thread
//     cf::Scheduler* s = cf::current_scheduler();
//     self.share = s->workers() > 1;                     // anyone to share with?
//     cf::ScopedParkCallback on_park(&hand_off, &self);  // give the queue away before parking
//     while (...) {
//       if (self.share && self.has_spare_work())         // a ticket for an idle worker
//         s->go_for_others("ticket", [&] { take_shared_work(); });
//       run_one(self);                                   // may block on a channel: on_park fires
//     }
//   }
//
// Three pieces, each with its contract at its declaration:
//  * ScopedParkCallback (here): a callback run as the green thread is about to park in a chanflow
//    primitive — Go's hand-off of a P when a goroutine enters a system call. A green thread that
//    holds a private queue must give it away when it blocks, or that work waits on it.
//  * Scheduler::go_for_others (scheduler.h): spawn a green thread where an idle worker steals it
//    at once, not in the spawner's runnext slot, which thieves leave to the spawner for a while.
//  * current_scheduler() (scheduler.h): the calling green thread's scheduler, so a runner can ask
//    how many workers could share its work (workers()) and spawn on the same scheduler.
// And scheduler_for_go() (scheduler.h): the scheduler cf::go would use here, the fallback for a
// layer whose options leave the scheduler unset.
#pragma once

#include "chanflow/core/export.h"
#include "chanflow/runtime/scheduler.h"

namespace chanflow {

namespace detail {
struct ParkCallbackAccess;
}  // namespace detail

// While this object is alive, fn(arg) is called on the green thread that created it each time
// that green thread is about to park in a chanflow primitive: a channel send or receive (timers'
// and contexts' channels included), select, Mutex::lock, WaitGroup::wait, sleep_for — every call
// that parks the green thread and lets its worker run others. Not called for yield() (the green
// thread stays runnable) nor when the operation completes without parking.
//
// Nesting: several may be alive on one green thread (a runner inside a runner); each park calls
// all of them, innermost (most recently created) first. They form a stack: destroy them in the
// reverse order of creation, on the green thread that created them (checked; a violation aborts).
//
// Constraints on fn, because it runs inside the park, possibly with the primitive's internal
// spin lock held and after the green thread enqueued itself as a waiter:
//  * it must not block, park, or use channels, select, Mutex, WaitGroup, timers or sleep_for;
//  * it must not create or destroy a ScopedParkCallback;
//  * it must not throw (an exception escaping fn terminates the process); fn must not be null;
//  * it may start green threads (go, Scheduler::go, go_for_others) and take short non-chanflow
//    locks (a spin lock around a shared queue), and it should be short: the primitive's other
//    users may be waiting for its lock.
// fn runs on the parking green thread, so it sees that thread's state without synchronisation.
//
// On a plain OS thread the object does nothing (an OS thread that parks keeps its thread; fn is
// never called). Not copyable or movable: the object is linked into its green thread's list.
class CHANFLOW_API ScopedParkCallback {
 public:
  ScopedParkCallback(void (*fn)(void*), void* arg) noexcept;
  ~ScopedParkCallback();
  ScopedParkCallback(const ScopedParkCallback&) = delete;
  ScopedParkCallback& operator=(const ScopedParkCallback&) = delete;

 private:
  friend struct detail::ParkCallbackAccess;

  void (*fn_)(void*);
  void* arg_;
  void* task_;                    // the green thread's control block; null on an OS thread
  ScopedParkCallback* previous_;  // the next outer callback of the same green thread
};

}  // namespace chanflow
