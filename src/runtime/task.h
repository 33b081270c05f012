// task.h — one green thread's control block, placed at the top of its own stack (private).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "chanflow/core/cache_line.h"
#include "chanflow/runtime/detail/wait.h"
#include "stack_pool.h"
#include "trace_impl.h"

namespace chanflow {
class ScopedParkCallback;
}  // namespace chanflow

namespace chanflow::detail {

struct SchedulerImpl;
struct Worker;

struct Task {
  Parker parker;              // first: a Parker* of a green thread is its Task*
  boost::context::fiber ctx;  // the suspended green thread (empty while it runs)
  SchedulerImpl* sched = nullptr;
  Worker* worker = nullptr;  // the worker running it; valid only while it runs
  // Near the stack pointer it was suspended at (set as it switches out; null before its first
  // run): the frames it resumes into start here (resume_lines).
  void* resume_sp = nullptr;
  // Its worker's dispatch count when it switched out: how long ago, in that worker's terms.
  uint64_t park_tick = 0;
  void (*run)(void*) = nullptr;
  void (*destroy)(void*) = nullptr;
  void* fn = nullptr;  // the user's callable, stored on this stack
  std::string name;
  uint64_t id = 0;
  StackSlot slot;
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
  // Tracing (trace_impl.h): when its current run began (0: not traced); the wake that readied it
  // and is recorded with its next run slice (written by its waker; the run queue's release/acquire
  // hands it to the worker that runs it); the wake that started its current run (moved there by
  // trace_run_begin, read by trace_run_end on the same worker); what its last recorded park on a
  // mutex or wait group showed (TraceWaitLabel); the recording that has its name (trace_run_end
  // registers it once per recording; written only by the worker running it).
  int64_t trace_run_ns = 0;
  TraceWake trace_wake;
  TraceWake trace_run_wake;
  TraceWaitLabel trace_wait_label;
  uint64_t trace_named_in = 0;
  bool parked = false;  // parked on a chanflow primitive (reports), guarded by the park
  // The innermost live ScopedParkCallback of this green thread (work_sharing.h), whose chain
  // park() runs before the task blocks. Owner-only: read and written by the green thread itself.
  ScopedParkCallback* park_callbacks = nullptr;
};

// The task header's address in a slot whose top is `top`: the highest kCacheLine-aligned address
// with room for it, so the header starts a line.
inline Task* task_at(char* top) noexcept {
  auto addr = reinterpret_cast<std::uintptr_t>(top) - sizeof(Task);
  addr &= ~static_cast<std::uintptr_t>(kCacheLine - 1);
  return reinterpret_cast<Task*>(addr);
}

// Bytes of a suspended task's stack, from just below its resume_sp up, that are loaded ahead of
// resuming it.
inline constexpr std::size_t kResumePrefetchBytes = 1152;
// Where that span starts: this far below a suspended task's resume_sp (the registers its switch
// saved), or below a new task's callable (the fiber record Boost.Context placed there).
inline constexpr std::size_t kSavedRegistersBytes = 128;
inline constexpr std::size_t kFiberRecordBytes = 512;

// A span of a stack, [from, to).
struct StackLines {
  const char* from = nullptr;
  const char* to = nullptr;
};

// The lines a suspended task touches first when it resumes: its saved registers just below
// resume_sp and the frames of the park it returns through, up to its header. A task that never
// ran starts on the fiber record Boost.Context placed below its callable (make_task_fiber), then
// reads the callable and its header. At most kResumePrefetchBytes of stack either way.
inline StackLines resume_lines(const Task* t) noexcept {
  const char* from = nullptr;
  if (t->resume_sp != nullptr) {
    from = static_cast<const char*>(t->resume_sp) - kSavedRegistersBytes;
  } else if (t->fn != nullptr) {
    from = static_cast<const char*>(t->fn) - kFiberRecordBytes;
  } else {
    return {};
  }
  const char* end = from + kResumePrefetchBytes;
  const char* const header_end = reinterpret_cast<const char*>(t + 1);
  if (end > header_end) end = header_end;
  return {from, end};
}

// Starts loading `lines` for writing; never faults, whatever the addresses hold by then.
inline void prefetch_lines(StackLines lines) noexcept {
  for (const char* p = lines.from; p < lines.to; p += kCacheLine) __builtin_prefetch(p, 1, 3);
}

// The name shown for a task: its own, or "#<id>".
std::string display_name(const Task* t);

}  // namespace chanflow::detail
