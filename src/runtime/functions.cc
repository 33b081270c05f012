// functions.cc — the runtime layer's global functions (chanflow/runtime/functions.h).
//
// Group::wait can end before the green threads do (a DeadlockError, a cancel of the waiting
// green thread), so what the green threads touch — the function, the arguments, the result
// slots — lives in state they share (shared_ptr), never on the caller's stack.
#include "chanflow/runtime/functions.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "chanflow/core/array.h"
#include "chanflow/core/function.h"
#include "chanflow/runtime/group.h"

namespace chanflow {
namespace {

constexpr const char* kCallInGreenThread = "runtime.call_in_green_thread";
constexpr const char* kMapInGreenThreads = "runtime.map_in_green_threads";

// A function, its inputs and one result slot per input.
struct Calls {
  Function f;
  std::vector<ObjectRef> inputs;
  std::vector<ObjectRef> results;
};

ObjectRef call_in_green_thread(std::span<const ObjectRef> args) {
  check_arg_count(kCallInGreenThread, args, 1, SIZE_MAX);
  auto calls = std::make_shared<Calls>();
  calls->f = arg_as<Function>(kCallInGreenThread, args, 0);
  calls->inputs.assign(args.begin() + 1, args.end());
  calls->results.resize(1);
  Group g;
  g.go(kCallInGreenThread, [calls] { calls->results[0] = calls->f(calls->inputs); });
  g.wait();  // everything the green thread wrote happens-before wait() returns
  return std::move(calls->results[0]);
}

ObjectRef map_in_green_threads(std::span<const ObjectRef> args) {
  check_arg_count(kMapInGreenThreads, args, 2);
  auto calls = std::make_shared<Calls>();
  calls->f = arg_as<Function>(kMapInGreenThreads, args, 0);
  const auto items = arg_as<Array<ObjectRef>>(kMapInGreenThreads, args, 1);
  calls->inputs.assign(items.begin(), items.end());
  calls->results.resize(calls->inputs.size());
  Group g;
  for (size_t i = 0; i < calls->inputs.size(); ++i) {
    // Each green thread writes only its own slot; wait() orders every write before the read.
    g.go(kMapInGreenThreads, [calls, i] {
      calls->results[i] = calls->f(std::span<const ObjectRef>(&calls->inputs[i], 1));
    });
  }
  g.wait();
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
