// trace_impl.h — the runtime's own trace events and the recording core they share with the
// public API (private).
//
// Every recording site first checks trace_on() (one relaxed load); the hooks below are called only
// when it was true. Events are binary records in a per-OS-thread buffer, rendered as JSON by the
// writer thread (trace.cc).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chanflow/runtime/trace.h"

namespace chanflow::detail {

class ChanBase;
struct Parker;
struct Task;
struct Worker;

extern std::atomic<bool> g_trace_enabled;

// Whether a recording is on: one relaxed load (a site that races with start() or stop() records
// or not; the recording core decides under its own lock).
inline bool trace_on() noexcept { return g_trace_enabled.load(std::memory_order_relaxed); }

// How a run slice ended; kBlocked: not a run slice but an OS thread's blocking wait (os_park).
enum class RunEnd : uint8_t { kPark, kYield, kExit, kBlocked };

// What a recorded object number means (the writer renders the label): a TraceLabel's id (a
// channel's, a named mutex's or wait group's: its name when the recording registered one, else
// "#<id>"), an address ("#0x...", an unnamed mutex or wait group), or a fixed label.
enum class ObjKind : uint8_t { kNone, kLabel, kAddr, kSelect, kSleep, kNilChan };

// The event that made a green thread runnable, kept in its Task until its next run slice is
// recorded (trace_run_end): the wake flow's start is written with that slice, in one record, so a
// wake costs a clock reading and a few stores, not a record of its own. ns == 0: none.
struct TraceWake {
  int64_t ns = 0;
  uint64_t obj = 0;   // per obj_kind
  uint64_t by_g = 0;  // the waking green thread (0: an OS thread)
  uint32_t tid = 0;   // the waker's track (a worker's or an OS thread's: the runtime's process)
  uint8_t by = 0;     // trace.cc's By
  ObjKind obj_kind = ObjKind::kNone;
};

// The label id of the named mutex or wait group a green thread's last recorded park waited on
// (0: unnamed), and the recording that recorded it: for the wake that ends the park, which must
// not read the object (trace_wake). Written by trace_run_end under the object's lock; read by
// the waker, which took that lock since.
struct TraceWaitLabel {
  uint64_t obj = 0;
  uint64_t generation = 0;
};

// A green thread was created by the calling thread (`parent`: the green thread that spawned it,
// or null): the "go" instant, and a "spawn" wake (recorded with its first run).
void trace_go(Task* t, const Task* parent) noexcept;
// w starts running t (call before the switch): the start of t's run slice (which the wake that
// readied it ends), and the run-queue counter when it changed.
void trace_run_begin(Worker* w, Task* t) noexcept;
// t, running on w, switches out (its park's locks still held, so what it waits on is alive) or
// finished: its run slice, with what it parks on and the wake that started it. Leaves the reading
// in w->trace_switch_ns for a direct hand-off's trace_run_begin (the caller clears it).
void trace_run_end(Worker* w, Task* t, RunEnd end) noexcept;
// The caller claimed p, a green thread's parker, and is about to make it runnable: notes in its
// Task when, what woke it (from p's armed reason and fired waiter) and who.
void trace_wake(Parker* p) noexcept;
// The same for p, an OS thread's parker: into *wake, which that thread reads once woken
// (trace_os_block_end). `label` is what its trace_os_block_begin left for the waker.
void trace_os_wake(Parker* p, const TraceWaitLabel& label, TraceWake* wake) noexcept;
// The calling OS thread is about to block in p (the locks of what it waits on still held): notes
// when and on what (in the thread), the waited object's label in *label for the waker, and clears
// *wake.
void trace_os_block_begin(const Parker* p, TraceWaitLabel* label, TraceWake* wake) noexcept;
// The calling OS thread woke from that wait: its "blocked" slice, with the wake flow from *wake
// when a waker noted one (not after a cancel or a timeout).
void trace_os_block_end(const TraceWake& wake) noexcept;
// c's buffered length changed (c's lock held): its counter.
void trace_chan_counter(const ChanBase* c) noexcept;
// Marks the calling thread as the timer thread (its wake-ups are "timer" ones, its track "timer").
void trace_set_timer_thread() noexcept;
// OS threads the recording owns (its writer): 0 or 1 (the deadlock condition counts them).
long trace_threads() noexcept;

// The renderer over bytes laid out as a recording's buffers and spool hold them (for the renderer's
// tests and its fuzzer, fuzz/trace): appends to *out the JSON events of the records in
// data[0, min(n, 64 KiB)) and returns true when every byte was a record emit_record could have
// written; at the first that is not, stops there and returns false. Never reads outside the
// bytes. Not while a recording is on: throws Error then.
bool trace_render_bytes(const unsigned char* data, std::size_t n, std::string* out);

}  // namespace chanflow::detail
