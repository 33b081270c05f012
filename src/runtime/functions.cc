// functions.cc — the runtime layer's global functions (chanflow/runtime/functions.h).
//
// The waiting caller can leave before the green threads end (WaitGroup::wait throws a
// DeadlockError), so what a green thread touches — the function, its arguments, its result and
// error slots — lives in state shared with the caller (shared_ptr), never on the caller's stack.
// Each green thread drops its share, and its error stays in that state, before it counts itself
// done: when wait() returns, the caller holds the last share, so the arguments, the function and
// the exception objects are released by the call itself (on the caller's thread), not later by a
// green thread that is still finishing.
#include "chanflow/runtime/functions.h"

#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/function.h"
#include "chanflow/runtime/detail/wait.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/wait_group.h"

namespace chanflow {
namespace {

constexpr const char* kCallInGreenThread = "runtime.call_in_green_thread";
constexpr const char* kMapInGreenThreads = "runtime.map_in_green_threads";

// One function called once per argument list, each call on its own green thread.
struct Calls {
  Function f;
  std::vector<std::vector<ObjectRef>> args;
  std::vector<ObjectRef> results;
  std::vector<std::exception_ptr> errors;
};

// Runs every call of `calls` on its own green thread (named `name`) and waits for all of them;
// then rethrows the error of the first call (by index) that threw. A green thread that cannot be
// started ends the loop: the ones started are waited for, then the spawn's error is thrown.
void run_calls(const char* name, const std::shared_ptr<Calls>& calls) {
  const size_t n = calls->args.size();
  calls->results.resize(n);
  calls->errors.resize(n);
  auto wg = std::make_shared<WaitGroup>();
  std::exception_ptr spawn_error;
  for (size_t i = 0; i < n; ++i) {
    wg->add(1);
    try {
      go(name, [share = calls, wg, i]() mutable {
        try {
          const std::shared_ptr<Calls> c = std::move(share);  // dropped before done()
          try {
            c->results[i] = c->f(c->args[i]);
          } catch (const FiberUnwind&) {
            throw;  // the scheduler tears down: unwind this green thread
          } catch (...) {
            c->errors[i] = std::current_exception();
          }
        } catch (const FiberUnwind&) {
          wg->done();
          throw;
        }
        wg->done();
      });
    } catch (...) {
      wg->done();
      spawn_error = std::current_exception();
      break;
    }
  }
  wg->wait();  // every write of the green threads happens-before it returns
  if (spawn_error) std::rethrow_exception(spawn_error);
  for (const std::exception_ptr& e : calls->errors) {
    if (e) std::rethrow_exception(e);
  }
}

ObjectRef call_in_green_thread(std::span<const ObjectRef> args) {
  check_arg_count(kCallInGreenThread, args, 1, SIZE_MAX);
  auto calls = std::make_shared<Calls>();
  calls->f = arg_as<Function>(kCallInGreenThread, args, 0);
  calls->args.emplace_back(args.begin() + 1, args.end());
  run_calls(kCallInGreenThread, calls);
  return std::move(calls->results[0]);
}

ObjectRef map_in_green_threads(std::span<const ObjectRef> args) {
  check_arg_count(kMapInGreenThreads, args, 2);
  auto calls = std::make_shared<Calls>();
  calls->f = arg_as<Function>(kMapInGreenThreads, args, 0);
  for (const ObjectRef& item : arg_as<Array<ObjectRef>>(kMapInGreenThreads, args, 1)) {
    calls->args.push_back({item});
  }
  run_calls(kMapInGreenThreads, calls);
  Array<ObjectRef> out;
  out.reserve(calls->results.size());
  for (ObjectRef& r : calls->results) out.push_back(std::move(r));
  return out;
}

}  // namespace

void register_runtime_functions() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_func(kCallInGreenThread, Function(call_in_green_thread));
    register_func(kMapInGreenThreads, Function(map_in_green_threads));
  });
}

}  // namespace chanflow
