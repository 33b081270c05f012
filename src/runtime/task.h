// task.h — one green thread's control block, placed at the top of its own stack (private).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "chanflow/runtime/detail/wait.h"
#include "stack_pool.h"

namespace chanflow::detail {

struct SchedulerImpl;
struct Worker;

struct Task {
  Parker parker;              // first: a Parker* of a green thread is its Task*
  boost::context::fiber ctx;  // the suspended green thread (empty while it runs)
  SchedulerImpl* sched = nullptr;
  Worker* worker = nullptr;  // the worker running it; valid only while it runs
  void (*run)(void*) = nullptr;
  void (*destroy)(void*) = nullptr;
  void* fn = nullptr;  // the user's callable, stored on this stack
  std::string name;
  uint64_t id = 0;
  StackSlot slot;
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
  bool parked = false;            // parked on a chanflow primitive (reports), guarded by the park
  bool spawn_for_others = false;  // its spawns skip runnext (detail::set_spawn_for_others)
  // Called by park() before the task blocks (detail::set_block_hook); owner-only.
  void (*block_hook)(void*) = nullptr;
  void* block_hook_arg = nullptr;
};

// The task header's address in a slot whose top is `top`.
inline Task* task_at(char* top) noexcept {
  auto addr = reinterpret_cast<std::uintptr_t>(top) - sizeof(Task);
  addr &= ~static_cast<std::uintptr_t>(63);
  return reinterpret_cast<Task*>(addr);
}

// The name shown for a task: its own, or "#<id>".
std::string display_name(const Task* t);

}  // namespace chanflow::detail
