// deadlock.h — detecting that nothing can ever wake a blocked OS thread (private).
//
// The condition (checked when the last worker of a scheduler falls asleep, when the last timer
// fires, and when an OS thread starts waiting): every green thread of every scheduler is parked,
// no timer is pending, and every OS thread of the process is either a chanflow worker or timer
// thread, a thread that existed before main (sanitizer and BLAS helpers), or an OS thread parked
// in a chanflow call. A plain thread doing anything else might still wake a waiter, so its mere
// existence suspends detection (waiters then recheck every 50 ms).
#pragma once

#include <cstdint>
#include <string>

#include "chanflow/runtime/detail/wait.h"

namespace chanflow::detail {

struct SchedulerImpl;

void deadlock_register_scheduler(SchedulerImpl* s);
void deadlock_unregister_scheduler(SchedulerImpl* s);

// Called after the system may have gone quiet; cheap when no OS thread waits.
void deadlock_poke() noexcept;

void os_waiter_add(Parker* p);
void os_waiter_remove(Parker* p);
// OS threads parked now (each registered before it releases what it waits on). Lock-free: a
// test waits on it for an OS thread to block, where polling the object's own lock would compete
// with the thread taking it.
int os_waiter_count() noexcept;
// The calling OS thread's spins before a futex sleep since it began (os_park, park.cc), and how
// many of them saw the wait end (woken without a futex sleep). Tests only.
struct OsSpins {
  uint64_t spins = 0;
  uint64_t wakes = 0;
};
OsSpins os_spins() noexcept;

enum class DeadlockState { kNo, kForeignThreads, kYes };
// For a parked OS thread: if the deadlock condition holds and p's wait can still be canceled,
// cancels it, writes the report and returns kYes.
DeadlockState deadlock_check_and_cancel(Parker* p, std::string* report);

// Tests only: when set, called between the two readings of the deadlock condition (on the
// checking thread, under the registry lock), so a test can act exactly where a race would.
void set_deadlock_check_hook(void (*fn)()) noexcept;

// "send on chan 0x… (cap 0)", "select on 2 channels", ...
std::string describe_wait(const Parker* p);

}  // namespace chanflow::detail
