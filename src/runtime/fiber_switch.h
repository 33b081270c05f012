// fiber_switch.h — creating a green thread's fiber and switching between it and its worker
// (private).
//
// These are the only places where control jumps between stacks. They live in their own
// translation unit, which a ThreadSanitizer build compiles without TSan's function entry/exit
// hooks (see CMakeLists.txt): a switch enters a function on one fiber and returns from it on
// another, and Boost's fiber entry function never returns at all, so hooks there would push onto
// one fiber's shadow call stack and pop from another's. Without them every fiber's shadow stack
// is balanced, which is what lets a TSan fiber be reused by a later green thread.
//
//   t->ctx = make_task_fiber(t, top);      // suspended, not yet run
//   enter_task(w, t);                      // worker: run t (and whatever it hands off to)
//   leave_task(t, next);                   // green thread: to `next` directly, or the worker
//
// A green thread that parks or yields while its worker has another task ready locally switches
// straight to that task (leave_task with next != nullptr) instead of bouncing through the
// worker's own context: one stack switch per hand-off instead of two. The task that lands then
// finishes the switched-out task's bookkeeping (settle_switched_out) — on its own stack, exactly
// what the worker would have done on its stack. A finishing green thread always returns to the
// worker, which frees its stack (see make_task_fiber for why).
#pragma once

#include <boost/context/fiber.hpp>

namespace chanflow::detail {

struct Task;
struct Worker;

// Runs a task's body: the user's function, the uncaught-exception policy, the callable's
// destructor and the final canary check. Defined in scheduler.cc; called on the task's stack.
void task_body(Task* t) noexcept;

// Defined in scheduler.cc. What a worker does once `prev` is switched out (prev->ctx holds its
// suspended fiber): run the park's after-step (unlocks) and count the park. Runs on the stack of
// the task that landed next on w's OS thread. (The worker's own loop uses the same step, where
// prev->ctx may also be empty: the task finished and is freed.)
void settle_switched_out(Worker* w, Task* prev) noexcept;

// Defined in scheduler.cc. A runnable task of w's own (runnext, then the local queue) to switch
// to directly from `from`, which is about to park or yield; nullptr when the worker
// should look for work itself (nothing local, or its periodic turn at the global queue). A task
// returned is already w's current one and `from` is recorded as the task to settle. Only for a
// task about to park or yield (a finishing one returns to the worker).
Task* take_hand_off(Worker* w, Task* from) noexcept;

// ThreadSanitizer builds: a TSan fiber for a new green thread, from a process-wide cache of
// fibers whose green threads finished, else newly created. libtsan's fiber creation allocates
// and zeroes ~0.8 MB (milliseconds) and at most 8128 threads and fibers may be alive at once, so
// fibers are recycled, like stacks. Reuse hides no race: the green thread that used a fiber
// before finished, and its end happens-before this acquire (the cache's mutex). Returns nullptr
// in other builds. Thread-safe.
void* tsan_fiber_acquire() noexcept;
// Returns a fiber no green thread runs on any more (kept up to a cap, else destroyed).
// Thread-safe; a no-op for nullptr.
void tsan_fiber_release(void* fiber) noexcept;

// A suspended fiber that runs task_body(t) on t's stack below `top` when first resumed, then
// switches back to the worker that runs it. Never blocks.
boost::context::fiber make_task_fiber(Task* t, char* top) noexcept;

// Worker side: switches to t (announcing the switch to ASan and TSan) and returns when a task
// running on w switches back to the worker: t, or a task reached from t by direct hand-offs.
// That task is w->current; its ctx holds it suspended, or is empty if it finished. Call on w's
// OS thread.
void enter_task(Worker* w, Task* t) noexcept;

// Task side: switches t out — to `next` (from take_hand_off), or to the worker running t when
// next is nullptr — and returns when t is resumed, maybe on another worker.
void leave_task(Task* t, Task* next) noexcept;

}  // namespace chanflow::detail
