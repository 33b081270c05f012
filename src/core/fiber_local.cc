// fiber_local.cc — the per-thread-of-control word (see core/fiber_local.h).
#include "chanflow/core/fiber_local.h"

namespace chanflow {
namespace {
thread_local void* t_word = nullptr;
}  // namespace

// noinline and a compiler barrier: the thread_local's address is recomputed on the OS thread that
// runs the call, never reused from before a green thread switched workers.
__attribute__((noinline)) void* fiber_local_word() noexcept {
  void* w = t_word;
  asm volatile("" ::: "memory");
  return w;
}

__attribute__((noinline)) void set_fiber_local_word(void* word) noexcept {
  t_word = word;
  asm volatile("" ::: "memory");
}

}  // namespace chanflow
