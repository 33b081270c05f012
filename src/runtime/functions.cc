// functions.cc — the runtime layer's global functions (chanflow/runtime/functions.h).
#include "chanflow/runtime/functions.h"

#include <cstdint>
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

ObjectRef call_in_green_thread(std::span<const ObjectRef> args) {
  check_arg_count(kCallInGreenThread, args, 1, SIZE_MAX);
  const Function f = arg_as<Function>(kCallInGreenThread, args, 0);
  const std::span<const ObjectRef> rest = args.subspan(1);  // the caller's; alive until we return
  ObjectRef result;
  Group g;
  g.go(kCallInGreenThread, [&] { result = f(rest); });
  g.wait();  // everything the green thread wrote happens-before wait() returns
  return result;
}

ObjectRef map_in_green_threads(std::span<const ObjectRef> args) {
  check_arg_count(kMapInGreenThreads, args, 2);
  const Function f = arg_as<Function>(kMapInGreenThreads, args, 0);
  const auto items = arg_as<Array<ObjectRef>>(kMapInGreenThreads, args, 1);
  const std::vector<ObjectRef> inputs(items.begin(), items.end());
  std::vector<ObjectRef> results(inputs.size());
  Group g;
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Each green thread writes only its own slot; wait() orders every write before the read.
    g.go(kMapInGreenThreads,
         [&f, &inputs, &results, i] { results[i] = f(std::span<const ObjectRef>(&inputs[i], 1)); });
  }
  g.wait();
  Array<ObjectRef> out;
  out.reserve(results.size());
  for (ObjectRef& r : results) out.push_back(std::move(r));
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
