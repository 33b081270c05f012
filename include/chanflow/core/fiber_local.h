// fiber_local.h — one pointer-sized word per thread of control. Public, with one owner: the
// tensor layer keeps the current MemoryBudget in it and the runtime carries it with each green
// thread; any other writer would overwrite the budget (save and restore it around your own use).
//
// A thread of control is a plain OS thread or a green thread. An OS thread's word is a
// thread_local. A green thread's word follows the green thread, not the worker running it: the
// runtime saves the word when the green thread switches out and restores it when it resumes,
// maybe on another worker; a new green thread starts with nullptr.
//
//   void* saved = fiber_local_word();
//   set_fiber_local_word(&budget_state);   // this thread of control's allocations ...
//   set_fiber_local_word(saved);
#pragma once

#include "chanflow/core/export.h"

namespace chanflow {

// The calling thread of control's word (nullptr until set). Out of line, like every accessor of
// a thread_local a green thread may use (object_pool.h says why): never cached across a switch.
CHANFLOW_API void* fiber_local_word() noexcept;
// Sets the calling thread of control's word.
CHANFLOW_API void set_fiber_local_word(void* word) noexcept;

}  // namespace chanflow
