// fork.h — the runtime in a fork()ed child: the same objects, new threads (private).
//
// fork() copies the calling thread only. The runtime's threads (every scheduler's workers, the
// timer thread, the trace writer) and whatever locks they held do not exist in the child. The
// handlers registered here (pthread_atfork) make the child a working chanflow process:
//   prepare  takes the process-wide locks whose data the child keeps (the timer heap, the deadlock
//            registry, the trace registries, the stack-chunk table), so none is copied mid-update;
//   parent   releases them;
//   child    releases them and resets what belonged to the threads that are gone: every Scheduler
//            object gets a new, empty implementation whose workers start at its first go() (the
//            parent's green threads are dropped); the timer heap is emptied (its entries were
//            the parent's sleeps and deadlines) and its thread starts again at the next timer;
//            a trace recording in progress is not continued (nothing of it is written by the
//            child); deadlock detection counts the child's threads afresh, and in the parent
//            leaves out of its baseline the helper threads that other libraries' fork handlers
//            ended (deadlock.cc).
// See docs/runtime.md, "fork".
#pragma once

namespace chanflow::detail {

// Registers the handlers once per process (idempotent). Called while the runtime loads (with
// deadlock detection's thread baseline, deadlock.cc), before any thread of its own exists.
void register_fork_handlers() noexcept;

// The pieces, each in the file that owns the state (called by the handlers only, in this order
// for prepare and the reverse for parent/child).
void timer_prepare_fork() noexcept;
void timer_after_fork(bool child) noexcept;
void deadlock_prepare_fork() noexcept;
// In the child: returns the schedulers registered at the fork (the registry is emptied; their
// SchedulerImpl list stays linked through next_sched).
struct SchedulerImpl;
SchedulerImpl* deadlock_after_fork(bool child) noexcept;
void trace_prepare_fork() noexcept;
void trace_after_fork(bool child) noexcept;
void stack_pool_prepare_fork() noexcept;
void stack_pool_after_fork() noexcept;
// In the child: gives each scheduler of `registered` (a next_sched list) a new implementation.
void schedulers_after_fork_child(SchedulerImpl* registered) noexcept;

}  // namespace chanflow::detail
