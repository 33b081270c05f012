// function.cc — the global function registry and the core layer's built-in functions.
//
// The registry is a sorted map behind a spin lock, created on first use and never destroyed
// (functions registered by static initialisers of other libraries may be looked up during
// static destruction). The built-ins below are registered when the map is created, and this
// file forces that while the program loads (kCoreFunctionsRegistered), so every function that
// exists before main already exists when main starts — which keeps the per-test live-object
// counts of the test binaries unchanged by the first lookup.
#include "chanflow/core/function.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "chanflow/core/array.h"
#include "chanflow/core/boxed.h"
#include "chanflow/core/json.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/core/string.h"

namespace chanflow {
namespace {

// Every critical section is a map lookup, insert or erase plus a handle copy (list_global_funcs
// copies the names): short and never blocking, so a spin lock (one atomic exchange, a release
// store to unlock) beats a shared mutex (two read-modify-writes of its reader count per lookup)
// even with concurrent lookups, which would all write that count's cache line anyway.
struct Registry {
  os::SpinLock mu;
  std::map<std::string, Function, std::less<>> funcs CHANFLOW_GUARDED_BY(mu);
};

// ---- core built-ins ----

// core.to_json(obj) -> String: cf::to_json of the object graph.
ObjectRef core_to_json(std::span<const ObjectRef> args) {
  check_arg_count("core.to_json", args, 1);
  return String(to_json(args[0]));
}

// core.from_json(text: String) -> object: cf::from_json.
ObjectRef core_from_json(std::span<const ObjectRef> args) {
  check_arg_count("core.from_json", args, 1);
  return from_json(arg_as<String>("core.from_json", args, 0).view());
}

// The object argument of core.type_key / core.type_index: any non-null object.
const Object* object_arg(const char* function, std::span<const ObjectRef> args) {
  check_arg_count(function, args, 1);
  if (!args[0].defined()) {
    CHANFLOW_THROW(TypeError) << function << ": argument 0 must be an object, got null";
  }
  return args[0].get();
}

// core.type_key(obj) -> String: the key of the object's dynamic type.
ObjectRef core_type_key(std::span<const ObjectRef> args) {
  return String(object_arg("core.type_key", args)->type_key());
}

// core.type_index(obj) -> Int: the index of the object's dynamic type.
ObjectRef core_type_index(std::span<const ObjectRef> args) {
  return Int(static_cast<int64_t>(object_arg("core.type_index", args)->type_index()));
}

// core.make_array(*items) -> Array: the arguments as an Array (nulls kept). How C code, which has
// no Array constructor of its own, builds one.
ObjectRef core_make_array(std::span<const ObjectRef> args) {
  Array<ObjectRef> out;
  out.reserve(args.size());
  for (const ObjectRef& a : args) out.push_back(a);
  return out;
}

Registry* make_registry() {
  auto* r = new Registry();   // never destroyed: see the file comment
  os::LockGuard lock(r->mu);  // uncontended: not shared yet
  const std::pair<const char*, ObjectRef (*)(std::span<const ObjectRef>)> builtins[] = {
      {"core.from_json", core_from_json}, {"core.make_array", core_make_array},
      {"core.to_json", core_to_json},     {"core.type_index", core_type_index},
      {"core.type_key", core_type_key},
  };
  for (const auto& [name, body] : builtins) r->funcs.emplace(name, Function(body));
  return r;
}

Registry& registry() {
  static Registry* r = make_registry();
  return *r;
}

[[maybe_unused]] const bool kCoreFunctionsRegistered = (registry(), true);

}  // namespace

void register_func(std::string_view name, Function f, bool override) {
  if (name.empty()) CHANFLOW_THROW(Error) << "register_func: the name must not be empty";
  if (!f.defined()) {
    CHANFLOW_THROW(Error) << "register_func: the function registered as '" << name << "' is null";
  }
  Registry& r = registry();
  Function previous;  // destroyed after the lock is released: its destructor runs user code
  {
    os::LockGuard lock(r.mu);
    auto it = r.funcs.find(name);
    if (it == r.funcs.end()) {
      r.funcs.emplace(std::string(name), std::move(f));
      return;
    }
    if (!override) {
      CHANFLOW_THROW(Error) << "register_func: a global function named '" << name
                            << "' is already registered (pass override=true to replace it)";
    }
    previous = std::exchange(it->second, std::move(f));
  }
}

std::optional<Function> get_global_func(std::string_view name) {
  Registry& r = registry();
  os::LockGuard lock(r.mu);
  auto it = r.funcs.find(name);
  if (it == r.funcs.end()) return std::nullopt;
  return it->second;
}

Function require_global_func(std::string_view name) {
  std::optional<Function> f = get_global_func(name);
  if (!f) CHANFLOW_THROW(Error) << "no global function named '" << name << "' is registered";
  return *std::move(f);
}

std::vector<std::string> list_global_funcs() {
  Registry& r = registry();
  os::LockGuard lock(r.mu);
  std::vector<std::string> names;
  names.reserve(r.funcs.size());
  for (const auto& entry : r.funcs) names.push_back(entry.first);
  return names;
}

bool remove_global_func(std::string_view name) {
  Registry& r = registry();
  Function removed;  // destroyed after the lock is released: its destructor runs user code
  os::LockGuard lock(r.mu);
  auto it = r.funcs.find(name);
  if (it == r.funcs.end()) return false;
  removed = std::move(it->second);
  r.funcs.erase(it);
  return true;
}

void check_arg_count(std::string_view function, std::span<const ObjectRef> args, size_t min,
                     size_t max) {
  if (args.size() >= min && args.size() <= max) return;
  auto expected = [](size_t n) {
    return std::to_string(n) + (n == 1 ? " argument" : " arguments");
  };
  std::string want;
  if (min == max) {
    want = expected(min);
  } else if (max == SIZE_MAX) {
    want = "at least " + expected(min);
  } else {
    want = std::to_string(min) + " to " + expected(max);
  }
  CHANFLOW_THROW(TypeError) << function << ": expected " << want << ", got " << args.size();
}

namespace detail {

void throw_arg_type(std::string_view function, std::span<const ObjectRef> args, size_t i,
                    uint32_t expected) {
  const std::string_view want = type_key_of(expected);
  if (i >= args.size()) {
    CHANFLOW_THROW(TypeError) << function << ": argument " << i << " (a '" << want
                              << "') is missing: got " << args.size() << " argument"
                              << (args.size() == 1 ? "" : "s");
  }
  if (!args[i].defined()) {
    CHANFLOW_THROW(TypeError) << function << ": argument " << i << " must be a '" << want
                              << "', got null";
  }
  CHANFLOW_THROW(TypeError) << function << ": argument " << i << " must be a '" << want
                            << "', got a '" << args[i]->type_key() << "'";
  __builtin_unreachable();  // CHANFLOW_THROW throws at the end of the statement
}

bool register_func_at_load(const char* name, Function f) noexcept {
  try {
    register_func(name, std::move(f));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chanflow: registering global function '%s' while loading failed: %s\n",
                 name, e.what());
    std::abort();
  }
  return true;
}

}  // namespace detail
}  // namespace chanflow
