// functions.h — the runtime layer's global functions (see chanflow/core/function.h):
//
//   runtime.call_in_green_thread(f, *args)  -> f(*args), run on a new green thread of the
//       scheduler cf::go uses here; the caller waits (an OS thread blocks, a green thread parks)
//       and gets the result, or f's exception rethrown.
//   runtime.map_in_green_threads(f, items: Array) -> Array [f(items[0]), f(items[1]), ...], each
//       call on its own green thread, all concurrently; waits for all of them, then rethrows the
//       exception of the first call (by position) that threw.
//
// Both let code in any language run a function on green threads through the registry, e.g. to
// call a Python-registered function from green threads (it then runs on the Python-callback
// thread while the green thread parks).
#pragma once

#include "chanflow/core/export.h"

namespace chanflow {

// Registers the functions above. Idempotent and thread-safe. They are registered while the
// program loads whenever the scheduler is linked (anything that uses the runtime links it); a
// program that reaches them only through the registry, by name, calls this first to be sure.
CHANFLOW_API void register_runtime_functions();

}  // namespace chanflow
