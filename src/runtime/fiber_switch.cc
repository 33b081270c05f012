// fiber_switch.cc — the fiber creation and the two switches (see fiber_switch.h for why they live
// alone in this file).
#include "fiber_switch.h"

#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <memory>
#include <mutex>
#include <vector>

#include "chanflow/core/fiber_local.h"
#include "sanitizer.h"
#include "scheduler_impl.h"

namespace chanflow::detail {
namespace {

// Boost.Context's allocator hook: the stack belongs to the pool, the worker returns it.
struct PoolOwnedStack {
  boost::context::stack_context allocate() { return {}; }
  void deallocate(boost::context::stack_context& /*sctx*/) noexcept {}
};

#if defined(CHANFLOW_TSAN)
// Idle TSan fibers kept for reuse (each holds ~0.8 MB of libtsan state).
constexpr std::size_t kKeepTsanFibers = 1024;
std::mutex g_tsan_fibers_mu;
std::vector<void*>* g_tsan_fibers = new std::vector<void*>();  // never destroyed (exit order)
#endif

}  // namespace

void* tsan_fiber_acquire() noexcept {
#if defined(CHANFLOW_TSAN)
  {
    std::lock_guard<std::mutex> lock(g_tsan_fibers_mu);
    if (!g_tsan_fibers->empty()) {
      void* f = g_tsan_fibers->back();
      g_tsan_fibers->pop_back();
      return f;
    }
  }
  return san::tsan_create();
#else
  return nullptr;
#endif
}

void tsan_fiber_release(void* fiber) noexcept {
#if defined(CHANFLOW_TSAN)
  if (fiber == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(g_tsan_fibers_mu);
    if (g_tsan_fibers->size() < kKeepTsanFibers) {
      g_tsan_fibers->push_back(fiber);
      return;
    }
  }
  san::tsan_destroy(fiber);
#else
  (void)fiber;
#endif
}

namespace {

// Arrival on t's stack, right after the switch: who switched here says what to do with the
// fiber `from` the switch delivers. A worker resuming t passes its own context (kept as w->home,
// the context t returns to); a task handing off directly passes itself, suspended, and is settled
// here, on t's stack, as its worker would have settled it.
void land(Task* t, boost::context::fiber&& from) noexcept {
  Worker* w = t->worker;  // set by whoever resumed t
  Task* prev = w->switched_from;
  if (prev == nullptr) {
    w->home = std::move(from);
    return;
  }
  w->switched_from = nullptr;
  prev->ctx = std::move(from);
  settle_switched_out(w, prev);
}

// The switch from a task's stack to `next`'s, or to the worker's when next is nullptr. Returns
// what the switch back delivers. `fake`: where ASan keeps this stack's fake frames meanwhile.
boost::context::fiber switch_from_task(Worker* w, Task* next, void** fake) noexcept {
  if (next != nullptr) {
    san::start_switch(fake, next->slot.bottom(), w->sched->pool.usable());
    san::tsan_switch(next->tsan_fiber);
    return std::move(next->ctx).resume();
  }
  san::start_switch(fake, w->stack_bottom, w->stack_size);
  san::tsan_switch(w->tsan_fiber);
  return std::move(w->home).resume();
}

}  // namespace

boost::context::fiber make_task_fiber(Task* t, char* top) noexcept {
  boost::context::stack_context sctx;
  sctx.sp = top;
  sctx.size = static_cast<std::size_t>(top - t->slot.bottom());
  // Creating the fiber jumps onto its stack and straight back; nothing instrumented runs there.
  return boost::context::fiber(std::allocator_arg,
                               boost::context::preallocated(top, sctx.size, sctx), PoolOwnedStack{},
                               [t](boost::context::fiber&& from) -> boost::context::fiber {
                                 san::finish_switch(nullptr, nullptr, nullptr);
                                 land(t, std::move(from));
                                 // A new green thread starts with no fiber-local word, not
                                 // the one the worker's previous green thread left.
                                 set_fiber_local_word(nullptr);
                                 task_body(t);
                                 // The last switch, always to the worker's own context (no
                                 // hand-off): the worker frees this stack on its own hot stack,
                                 // not on the next task's, which in a long chain is cold
                                 // (docs/runtime.md, "Scheduler").
                                 // No fake stack to keep: this stack is dead from here on.
                                 Worker* w = t->worker;
                                 san::start_switch(nullptr, w->stack_bottom, w->stack_size);
                                 san::tsan_switch(w->tsan_fiber);
                                 return std::move(w->home);
                               });
}

void enter_task(Worker* w, Task* t) noexcept {
  void* fake = nullptr;
  san::start_switch(&fake, t->slot.bottom(), w->sched->pool.usable());
  san::tsan_switch(t->tsan_fiber);
  boost::context::fiber from = std::move(t->ctx).resume();
  san::finish_switch(fake, nullptr, nullptr);
  w->current->ctx = std::move(from);  // the task that came back (empty: it finished)
}

void leave_task(Task* t, Task* next) noexcept {
  // Where and when t switched out: what a worker about to resume it prefetches, and whether it
  // needs to (task.h: resume_lines; scheduler.cc: prefetch_if_cold).
  t->resume_sp = __builtin_frame_address(0);
  t->park_tick = t->worker->dispatches.load(std::memory_order_relaxed);
  // The fiber-local word follows t (core/fiber_local.h): kept on t's stack while it is away,
  // put back on whichever worker resumes it.
  void* const word = fiber_local_word();
  boost::context::fiber from = switch_from_task(t->worker, next, &t->asan_fake);
  san::finish_switch(t->asan_fake, nullptr, nullptr);
  land(t, std::move(from));
  set_fiber_local_word(word);
}

}  // namespace chanflow::detail
