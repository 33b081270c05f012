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
//   enter_task(w, t);                      // worker: run t until it parks or finishes
//   leave_task(t);                         // green thread: back to its worker (park, yield)
#pragma once

#include <boost/context/fiber.hpp>

namespace chanflow::detail {

struct Task;
struct Worker;

// Runs a task's body: the user's function, the uncaught-exception policy, the callable's
// destructor and the final canary check. Defined in scheduler.cc; called on the task's stack.
void task_body(Task* t) noexcept;

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

// Worker side: switches to t (announcing the switch to ASan and TSan) and returns when t parks,
// yields or finishes (t->ctx is empty then). Call on w's OS thread.
void enter_task(Worker* w, Task* t) noexcept;

// Task side: switches back to the worker running t; returns when t is resumed, maybe on another
// worker.
void leave_task(Task* t) noexcept;

}  // namespace chanflow::detail
