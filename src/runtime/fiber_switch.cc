// fiber_switch.cc — the fiber creation and the two switches (see fiber_switch.h for why they live
// alone in this file).
#include "fiber_switch.h"

#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <memory>
#include <mutex>
#include <vector>

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

boost::context::fiber make_task_fiber(Task* t, char* top) noexcept {
  boost::context::stack_context sctx;
  sctx.sp = top;
  sctx.size = static_cast<std::size_t>(top - t->slot.bottom());
  // Creating the fiber jumps onto its stack and straight back; nothing instrumented runs there.
  return boost::context::fiber(std::allocator_arg,
                               boost::context::preallocated(top, sctx.size, sctx), PoolOwnedStack{},
                               [t](boost::context::fiber&& sink) -> boost::context::fiber {
                                 t->sink = std::move(sink);
                                 san::finish_switch(nullptr, nullptr, nullptr);
                                 task_body(t);
                                 // The last switch: this fiber's stack is dead from here on
                                 // (nullptr: no fake stack to keep), and TSan's current fiber
                                 // becomes the worker's before Boost jumps there.
                                 Worker* w = t->worker;
                                 san::start_switch(nullptr, w->stack_bottom, w->stack_size);
                                 san::tsan_switch(w->tsan_fiber);
                                 return std::move(t->sink);
                               });
}

void enter_task(Worker* w, Task* t) noexcept {
  (void)w;
  void* fake = nullptr;
  san::start_switch(&fake, t->slot.bottom(), w->sched->pool.usable());
  san::tsan_switch(t->tsan_fiber);
  t->ctx = std::move(t->ctx).resume();
  san::finish_switch(fake, nullptr, nullptr);
}

void leave_task(Task* t) noexcept {
  Worker* w = t->worker;
  san::start_switch(&t->asan_fake, w->stack_bottom, w->stack_size);
  san::tsan_switch(w->tsan_fiber);
  t->sink = std::move(t->sink).resume();
  san::finish_switch(t->asan_fake, nullptr, nullptr);
}

}  // namespace chanflow::detail
