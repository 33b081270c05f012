// function.h — Function, a callable object over objects, and the process-wide registry of named
// functions: the FFI every language shares (C++ here, C through chanflow/c_api.h, Python through
// chanflow.get_global_func / chanflow.register_func).
//
//   cf::register_func("demo.add", cf::Function([](std::span<const cf::ObjectRef> args) {
//     cf::check_arg_count("demo.add", args, 2);
//     return cf::Int(cf::arg_as<cf::Int>("demo.add", args, 0).value() +
//                    cf::arg_as<cf::Int>("demo.add", args, 1).value());
//   }));
//   cf::Function add = cf::require_global_func("demo.add");
//   cf::ObjectRef three = add(cf::Int(1), cf::Int(2));   // or add(std::span<const ObjectRef>)
//
// A Function is an Object like any other (type key "Function", static index TypeIndex::kFunction),
// so functions are passed as arguments, stored in Arrays and Maps, and returned.
//
// Contracts shared by every function here:
// - Thread-safety: the registry may be used from any thread (OS or green) concurrently. A call
//   never holds the registry's lock: lookups copy the handle out (one reference count), so a
//   function removed or replaced while it runs finishes normally and is destroyed when its last
//   caller drops it.
// - Blocking: the registry's own operations take a short OS-level lock (never held while user
//   code runs). A call blocks as long as its body does; a body may park a green thread (it runs on
//   the caller's thread of control).
// - Errors: a body's exception propagates unchanged to the caller.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/core/export.h"
#include "chanflow/core/object.h"

namespace chanflow {

// The node of a Function: a body called with a span of argument handles (any of which may be
// null) that returns one handle (null for "no value"). The body is called concurrently from
// any number of threads, so it must be thread-safe; its captures are destroyed with the object,
// on whichever thread drops the last reference.
class FunctionObj : public Object {
 public:
  using Body = std::function<ObjectRef(std::span<const ObjectRef> args)>;

  explicit FunctionObj(Body body) : body_(std::move(body)) {}

  // Calls the body. Exceptions propagate unchanged.
  ObjectRef call(std::span<const ObjectRef> args) const { return body_(args); }

  static constexpr const char* kTypeKey = "Function";
  static constexpr uint32_t kTypeIndex = TypeIndex::kFunction;
  CHANFLOW_DECLARE_FINAL_OBJECT_INFO(FunctionObj, Object);

 private:
  const Body body_;
};

// A handle to a FunctionObj. Calling a null Function throws Error.
class Function : public ObjectRef {
 public:
  CHANFLOW_DEFINE_OBJECT_REF(Function, ObjectRef, FunctionObj);

  // A new function whose body is `body` (any callable taking std::span<const ObjectRef> and
  // returning something convertible to ObjectRef).
  template <class F, class = std::enable_if_t<!std::is_base_of_v<ObjectRef, std::decay_t<F>> &&
                                              std::is_invocable_r_v<ObjectRef, std::decay_t<F>&,
                                                                    std::span<const ObjectRef>>>>
  explicit Function(F&& body)
      : ObjectRef(make_object<FunctionObj>(FunctionObj::Body(std::forward<F>(body)))) {}

  // Calls the function with `args`. Throws Error for a null Function; the body's exceptions
  // propagate.
  ObjectRef operator()(std::span<const ObjectRef> args) const {
    if (!defined()) CHANFLOW_THROW(Error) << "call of a null Function";
    return get()->call(args);
  }
  // Calls the function with each argument converted to an ObjectRef: f(cf::Int(1), s, tensor).
  template <class... A>
  requires(std::is_convertible_v<A, ObjectRef>&&...) ObjectRef operator()(A&&... args) const {
    const std::array<ObjectRef, sizeof...(A)> a{ObjectRef(std::forward<A>(args))...};
    return (*this)(std::span<const ObjectRef>(a.data(), a.size()));
  }
};

// ---- the registry ----

// Registers `f` under `name`. Throws Error when `name` is empty, `f` is null, or a function is
// already registered under `name` and `override` is false (the message names the function);
// with `override` the previous function is replaced (calls in progress finish with it).
CHANFLOW_API void register_func(std::string_view name, Function f, bool override = false);

// The function registered under `name`, or nullopt.
CHANFLOW_API std::optional<Function> get_global_func(std::string_view name);

// The function registered under `name`. Throws Error naming it when none is.
CHANFLOW_API Function require_global_func(std::string_view name);

// The names of every registered function, sorted (byte order). A snapshot.
CHANFLOW_API std::vector<std::string> list_global_funcs();

// Removes the function registered under `name`; returns whether there was one. Calls in progress
// finish with it.
CHANFLOW_API bool remove_global_func(std::string_view name);

// ---- helpers for function bodies ----

// Throws TypeError "<function>: expected N argument(s), got M" unless min <= args.size() <= max.
CHANFLOW_API void check_arg_count(std::string_view function, std::span<const ObjectRef> args,
                                  size_t min, size_t max);
inline void check_arg_count(std::string_view function, std::span<const ObjectRef> args,
                            size_t count) {
  check_arg_count(function, args, count, count);
}

namespace detail {
// Throws the TypeError of arg_as for args[i] (missing, null or of another type than `expected`).
[[noreturn]] CHANFLOW_API void throw_arg_type(std::string_view function,
                                              std::span<const ObjectRef> args, size_t i,
                                              uint32_t expected);
// Registers a function while the program loads (CHANFLOW_REGISTER_GLOBAL_FUNC). An error there
// has nobody to catch it: prints it and aborts.
CHANFLOW_API bool register_func_at_load(const char* name, Function f) noexcept;
}  // namespace detail

// args[i] as a TRef (e.g. Int, String, Function, Array<ObjectRef>; ObjectRef takes anything,
// null included). Throws TypeError "<function>: argument i must be a '<Key>', got '<Key>'" (or
// "got null", "is missing").
template <class TRef>
TRef arg_as(std::string_view function, std::span<const ObjectRef> args, size_t i) {
  using TObj = typename TRef::ContainerType;
  if (i >= args.size()) detail::throw_arg_type(function, args, i, TObj::runtime_type_index());
  if constexpr (std::is_same_v<TRef, ObjectRef>) {
    return args[i];
  } else {
    if (args[i].as<TObj>() == nullptr) {
      detail::throw_arg_type(function, args, i, TObj::runtime_type_index());
    }
    return TRef(detail::ObjectUnsafe::ptr(args[i]));
  }
}

}  // namespace chanflow

// Registers a global function when the program (or shared library) loads:
//
//   CHANFLOW_REGISTER_GLOBAL_FUNC("demo.echo", [](std::span<const cf::ObjectRef> a) {
//     return a.empty() ? cf::ObjectRef() : a[0];
//   });
//
// The second argument is a Function or anything Function's constructor takes. Put it in a .cc
// file the program links for other reasons: a static library's object file that nothing
// references is not linked, and its registrations never run. A duplicate name aborts the load
// with a message naming it.
#define CHANFLOW_REGISTER_GLOBAL_FUNC(name, ...)                                                 \
  [[maybe_unused]] static const bool CHANFLOW_FUNC_CONCAT_(chanflow_global_func_, __COUNTER__) = \
      ::chanflow::detail::register_func_at_load(name, ::chanflow::Function(__VA_ARGS__))
#define CHANFLOW_FUNC_CONCAT_(a, b) CHANFLOW_FUNC_CONCAT2_(a, b)
#define CHANFLOW_FUNC_CONCAT2_(a, b) a##b
