// block_hook.h — two hooks for schedulers built on top of the runtime's (the GoMachine's node
// runners use them): a callback run when the current green thread is about to block, and the
// number of workers that could share its work.
//
//   detail::set_block_hook(&hand_off_my_queue, &runner);  // before running foreign code
//   if (detail::scheduler_worker_count() > 1) share_my_queue();
//
// Like Go's hand-off of a P when a goroutine enters a system call: a green thread that keeps a
// private queue of work must give that queue away when it blocks, or the work waits on it.
#pragma once

#include "chanflow/core/export.h"

namespace chanflow::detail {

// Installs `fn(arg)`, called on the calling green thread each time it is about to park in a
// chanflow primitive (channel, select, mutex, wait group, timer, sleep). The call happens inside
// the park, possibly with the primitive's internal lock held: fn must not block, park, or use
// channels, mutexes or wait groups; it may spawn green threads (go). nullptr removes the hook. The
// hook belongs to the green thread (it ends with it). No-op on a plain OS thread.
CHANFLOW_API void set_block_hook(void (*fn)(void*), void* arg) noexcept;

// The number of worker threads of the calling green thread's scheduler; 0 outside a green thread.
CHANFLOW_API int scheduler_worker_count() noexcept;

// While on, green threads that the calling green thread spawns go to the tail of its worker's run
// queue, where an idle worker can steal them at once, instead of its runnext slot, which thieves
// leave to the spawner for 3 µs (the spawner is expected to park soon and run the child itself).
// For green threads spawned precisely so that another worker picks them up (the GoMachine's
// tickets). Per green thread; no-op on a plain OS thread or with one worker.
CHANFLOW_API void set_spawn_for_others(bool on) noexcept;

}  // namespace chanflow::detail
