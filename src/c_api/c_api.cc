// c_api.cc — the C ABI (chanflow/c_api.h) over the object system and the function registry.
//
// Every entry point runs its body inside guard(), which turns any exception into status -1 and
// the thread's last-error text, so no C++ exception crosses into C. A handle is the Object*
// itself, owning one reference (detail::ObjectUnsafe::detach / attach move references between
// handles and ObjectRefs without touching the count).
//
// The thread-locals (last error, the name list) are reached only through noinline accessors
// with a compiler barrier: an entry point may park a green thread inside a call and resume on
// another worker, and an address computed before the park would be the old worker's.
#include "chanflow/c_api.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chanflow/core/boxed.h"
#include "chanflow/core/error.h"
#include "chanflow/core/function.h"
#include "chanflow/core/object.h"
#include "chanflow/core/string.h"
#include "chanflow/core/type_registry.h"
#include "chanflow/runtime/functions.h"

namespace chanflow {
namespace {

using detail::ObjectUnsafe;

constexpr int kOk = 0;
constexpr int kFailed = -1;

// ---- thread-locals ----

struct NameList {
  std::vector<std::string> names;
  std::vector<const char*> pointers;
};

thread_local std::string t_last_error;
thread_local NameList t_names;

__attribute__((noinline)) std::string& last_error_slot() noexcept {
  std::string* s = &t_last_error;
  asm volatile("" ::: "memory");
  return *s;
}

__attribute__((noinline)) NameList& name_list_slot() noexcept {
  NameList* l = &t_names;
  asm volatile("" ::: "memory");
  return *l;
}

void set_last_error(std::string_view text) noexcept {
  try {
    last_error_slot().assign(text);
  } catch (...) {
    // Out of memory for the text itself: keep what fits in the old buffer.
    std::string& s = last_error_slot();
    const size_t n = std::min(s.capacity(), text.size());
    s.assign(text.substr(0, n));
  }
}

// "<Kind>: <message>" of the exception being handled.
std::string describe_current_exception() {
  try {
    throw;
  } catch (const ProgramError& e) {
    return std::string("ProgramError: ") + e.what();
  } catch (const LimitError& e) {
    return std::string("LimitError: ") + e.what();
  } catch (const MachineError& e) {
    return std::string("MachineError: ") + e.what();
  } catch (const ShapeError& e) {
    return std::string("ShapeError: ") + e.what();
  } catch (const TypeError& e) {
    return std::string("TypeError: ") + e.what();
  } catch (const ChannelClosedError& e) {
    return std::string("ChannelClosedError: ") + e.what();
  } catch (const DeadlockError& e) {
    return std::string("DeadlockError: ") + e.what();
  } catch (const CanceledError& e) {
    return std::string("CanceledError: ") + e.what();
  } catch (const DeadlineExceededError& e) {
    return std::string("DeadlineExceededError: ") + e.what();
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();
  } catch (const std::bad_alloc&) {
    return "MemoryError: out of memory";
  } catch (const std::exception& e) {
    return std::string("InternalError: ") + e.what();
  } catch (...) {
    return "InternalError: an exception that is not a std::exception";
  }
}

// Runs `body` (which returns nothing and reports failure by throwing); any exception becomes
// status -1 and the last error.
template <class F>
int guard(F&& body) noexcept {
  try {
    body();
    return kOk;
  } catch (...) {
    try {
      set_last_error(describe_current_exception());
    } catch (...) {
      set_last_error("MemoryError: out of memory");
    }
    return kFailed;
  }
}

// The error a C function reported with status `rc`: the class its "<Kind>: " prefix names, the
// whole text as an Error otherwise.
[[noreturn]] void throw_c_function_error(int rc) {
  std::string text = last_error_slot();
  if (text.empty()) {
    CHANFLOW_THROW(Error) << "a C function failed (returned " << rc
                          << ") without setting an error text (chanflow_set_last_error)";
  }
  auto strip = [&](std::string_view kind) -> bool {
    if (text.size() > kind.size() + 2 && text.compare(0, kind.size(), kind) == 0 &&
        text.compare(kind.size(), 2, ": ") == 0) {
      text.erase(0, kind.size() + 2);
      return true;
    }
    return false;
  };
  if (strip("TypeError")) throw TypeError(text);
  if (strip("ShapeError")) throw ShapeError(text);
  if (strip("ChannelClosedError")) throw ChannelClosedError(text);
  if (strip("DeadlockError")) throw DeadlockError(text);
  if (strip("CanceledError")) throw CanceledError(text);
  if (strip("DeadlineExceededError")) throw DeadlineExceededError(text);
  if (strip("Error")) throw Error(text);
  throw Error(text);
}

// ---- argument checks ----

void require(bool ok, const char* function, const char* what) {
  if (!ok) CHANFLOW_THROW(TypeError) << function << ": " << what;
}

template <class T>
T* out_param(T* out, const char* function, const char* name) {
  if (out == nullptr) CHANFLOW_THROW(TypeError) << function << ": " << name << " is NULL";
  return out;
}

const char* string_param(const char* s, const char* function, const char* name) {
  if (s == nullptr) CHANFLOW_THROW(TypeError) << function << ": " << name << " is NULL";
  return s;
}

// The end of the first page: no object lives below it (the kernel maps nothing there), and a
// small integer or a field of a NULL struct passed as a handle points into it.
uintptr_t first_page_end() noexcept {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

// Why `handle` cannot be a live object (for the message "<name> <problem>"), or nullptr when it
// can: not NULL, not in the first page, a user-space address (x86-64), aligned, of a registered
// type, with a positive count. The header is read only after the address checks.
const char* handle_problem(chanflow_object_t handle) noexcept {
  if (handle == nullptr) return "is a null handle";
  const auto addr = reinterpret_cast<uintptr_t>(handle);
  if (addr < first_page_end()) {
    return "is not a chanflow object handle (a pointer into the first page)";
  }
#if defined(__x86_64__)
  // User space ends below 2^47 (4-level paging) or 2^56 (5-level): above is the kernel's half or
  // no address at all, and reading it faults.
  if (addr >= (uintptr_t{1} << 56)) {
    return "is not a chanflow object handle (not a user-space address)";
  }
#endif
  if (addr > UINTPTR_MAX - sizeof(Object)) {
    return "is not a chanflow object handle (not a user-space address)";
  }
  if (addr % alignof(Object) != 0) {
    return "is not a chanflow object handle (misaligned pointer)";
  }
  const auto* obj = reinterpret_cast<const Object*>(handle);
  // The ancestry table is what is_instance reads: one inline load says whether the index is a
  // registered type (TypeRegistry::find would be two calls).
  const uint32_t index = obj->type_index();
  if (index >= detail::kMaxTypeIndex ||
      detail::g_type_ancestry[index].load(std::memory_order_acquire) == nullptr ||
      obj->use_count() <= 0) {
    return "is not a live chanflow object handle";
  }
  return nullptr;
}

// The object behind a handle the caller passes in; TypeError naming `name` when it cannot be one.
Object* checked(chanflow_object_t handle, const char* function, const char* name) {
  if (const char* problem = handle_problem(handle)) {
    CHANFLOW_THROW(TypeError) << function << ": " << name << " " << problem;
  }
  return reinterpret_cast<Object*>(handle);
}

// The object behind a handle as a T, or TypeError naming both types.
template <class T>
const T* checked_as(chanflow_object_t handle, const char* function, const char* name) {
  const Object* obj = checked(handle, function, name);
  if (!obj->is_instance<T>()) {
    CHANFLOW_THROW(TypeError) << function << ": " << name << " must be a '"
                              << detail::type_key_of(T::runtime_type_index()) << "', got a '"
                              << obj->type_key() << "'";
  }
  return static_cast<const T*>(obj);
}

// The most references an object may have when C hands out one more (chanflow_object_retain, or a
// function returning a handle to an existing object): 2^30. Handles cost the caller no memory, so
// a loop of retains would otherwise wrap the 32-bit count after 2^31 - 1 (the object could then
// never be used or freed); the 2^30 left above the limit are for C++ references (each one a
// pointer held somewhere) and for concurrent callers, which may each pass the check at once.
constexpr int32_t kMaxHandleCount = int32_t{1} << 30;

[[noreturn]] void throw_too_many_references(const char* function, const char* name) {
  throw LimitError(std::string(function) + ": " + name + " already has " +
                       std::to_string(kMaxHandleCount) +
                       " references, the most a C handle's object may have (2^30); release "
                       "some first",
                   "references");
}

// A handle that takes over `ref`'s reference. LimitError (the reference released) when that
// would give the object more than kMaxHandleCount references.
chanflow_object_t to_handle(ObjectRef ref, const char* function = "", const char* name = "out") {
  Object* obj = ObjectUnsafe::detach(std::move(ref));
  if (obj != nullptr && obj->use_count() > kMaxHandleCount) {
    ObjectUnsafe::dec_ref(obj);
    throw_too_many_references(function, name);
  }
  return reinterpret_cast<chanflow_object_t>(obj);
}

// A new reference to a handle's object, as an ObjectRef (the handle keeps its own).
ObjectRef borrow(chanflow_object_t handle) noexcept {
  if (handle == nullptr) return ObjectRef();
  Object* obj = reinterpret_cast<Object*>(handle);
  ObjectUnsafe::inc_ref(obj);
  return ObjectUnsafe::attach(obj);
}

// The caller's argument handles as ObjectRefs that own no count: the handles are borrowed for
// the call and keep their objects alive until it returns, so the refs take no reference (two
// atomic operations per argument saved) and give their pointers back at the end instead of
// releasing them. The body sees them as const ObjectRefs and keeps what it keeps by copying,
// which counts as usual.
class BorrowedArgs {
 public:
  BorrowedArgs(const chanflow_object_t* args, size_t n) : size_(n) {
    if (n > kInline) {
      heap_ = std::make_unique<ObjectRef[]>(n);
      refs_ = heap_.get();
    }
    for (size_t i = 0; i < n; ++i) {
      if (args[i] != nullptr) refs_[i] = ObjectUnsafe::attach(reinterpret_cast<Object*>(args[i]));
    }
  }
  ~BorrowedArgs() {
    for (size_t i = 0; i < size_; ++i) (void)ObjectUnsafe::detach(std::move(refs_[i]));
  }
  BorrowedArgs(const BorrowedArgs&) = delete;
  BorrowedArgs& operator=(const BorrowedArgs&) = delete;

  std::span<const ObjectRef> span() const noexcept { return {refs_, size_}; }

 private:
  static constexpr size_t kInline = 8;
  ObjectRef inline_[kInline];
  std::unique_ptr<ObjectRef[]> heap_;
  ObjectRef* refs_ = inline_;
  size_t size_;
};

// Calls `f` with the caller's argument handles (NULL entries are null objects).
ObjectRef call_function(const FunctionObj* f, const chanflow_object_t* args, size_t num_args,
                        const char* function) {
  if (num_args > 0 && args == nullptr) {
    CHANFLOW_THROW(TypeError) << function << ": args is NULL but num_args is " << num_args;
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (args[i] == nullptr) continue;
    if (const char* problem = handle_problem(args[i])) {
      CHANFLOW_THROW(TypeError) << function << ": args[" << i << "] " << problem;
    }
  }
  const BorrowedArgs borrowed(args, num_args);
  return f->call(borrowed.span());
}

// A C function body and its user data; the deleter runs when the last copy of the Function's body
// (the one FunctionObj) is destroyed.
struct CFunction {
  chanflow_c_func_t fn;
  void* user_data;
  chanflow_deleter_t deleter;
  CFunction(chanflow_c_func_t f, void* d, chanflow_deleter_t del)
      : fn(f), user_data(d), deleter(del) {}
  CFunction(const CFunction&) = delete;
  CFunction& operator=(const CFunction&) = delete;
  ~CFunction() {
    if (deleter != nullptr) deleter(user_data);
  }

  ObjectRef operator()(std::span<const ObjectRef> args) const {
    constexpr size_t kInline = 8;
    chanflow_object_t inline_handles[kInline];
    std::vector<chanflow_object_t> heap_handles;
    chanflow_object_t* handles = inline_handles;
    if (args.size() > kInline) {
      heap_handles.resize(args.size());
      handles = heap_handles.data();
    }
    for (size_t i = 0; i < args.size(); ++i) {
      // Borrowed: the span's ObjectRefs keep the objects alive for the call.
      handles[i] = reinterpret_cast<chanflow_object_t>(const_cast<Object*>(args[i].get()));
    }
    chanflow_object_t result = nullptr;
    last_error_slot().clear();
    const int rc = fn(user_data, handles, args.size(), &result);
    if (rc != 0) {
      if (result != nullptr) ObjectUnsafe::dec_ref(reinterpret_cast<Object*>(result));
      throw_c_function_error(rc);
    }
    if (result == nullptr) return ObjectRef();
    checked(result, "a C function's result", "*out");
    return ObjectUnsafe::attach(reinterpret_cast<Object*>(result));
  }
};

// The runtime's functions are reachable through this ABI even when nothing else in the program
// uses the runtime (and so links its scheduler, which registers them otherwise).
[[maybe_unused]] const bool kRuntimeFunctionsRegistered = [] {
  try {
    register_runtime_functions();
  } catch (...) {
    // Reported by the scheduler's own registration when it failed for a reason (a name taken).
  }
  return true;
}();

}  // namespace
}  // namespace chanflow

using chanflow::checked;
using chanflow::checked_as;
using chanflow::guard;
using chanflow::out_param;
using chanflow::string_param;
using chanflow::to_handle;
namespace cf = chanflow;

extern "C" {

const char* chanflow_last_error(void) { return cf::last_error_slot().c_str(); }

void chanflow_set_last_error(const char* text) {
  cf::set_last_error(text == nullptr ? std::string_view() : std::string_view(text));
}

int chanflow_object_retain(chanflow_object_t obj) {
  return guard([&] {
    cf::Object* o = checked(obj, "chanflow_object_retain", "obj");
    if (o->use_count() >= cf::kMaxHandleCount) {
      cf::throw_too_many_references("chanflow_object_retain", "obj");
    }
    cf::ObjectUnsafe::inc_ref(o);
  });
}

int chanflow_object_release(chanflow_object_t obj) {
  if (obj == nullptr) return 0;
  return guard([&] { cf::ObjectUnsafe::dec_ref(checked(obj, "chanflow_object_release", "obj")); });
}

int chanflow_object_use_count(chanflow_object_t obj, int32_t* out) {
  return guard([&] {
    const cf::Object* o = checked(obj, "chanflow_object_use_count", "obj");
    *out_param(out, "chanflow_object_use_count", "out") = o->use_count();
  });
}

int chanflow_object_type_index(chanflow_object_t obj, uint32_t* out) {
  return guard([&] {
    const cf::Object* o = checked(obj, "chanflow_object_type_index", "obj");
    *out_param(out, "chanflow_object_type_index", "out") = o->type_index();
  });
}

int chanflow_object_type_key(chanflow_object_t obj, const char** out) {
  return guard([&] {
    const cf::Object* o = checked(obj, "chanflow_object_type_key", "obj");
    // The registry's TypeInfo::key: a std::string (NUL-terminated) that is never freed.
    *out_param(out, "chanflow_object_type_key", "out") =
        cf::TypeRegistry::global().find(o->type_index())->key.c_str();
  });
}

int chanflow_type_key_to_index(const char* key, uint32_t* out) {
  return guard([&] {
    const char* k = string_param(key, "chanflow_type_key_to_index", "key");
    out_param(out, "chanflow_type_key_to_index", "out");
    const std::optional<uint32_t> index = cf::TypeRegistry::global().index_of(k);
    if (!index) CHANFLOW_THROW(cf::Error) << "no type with key '" << k << "' is registered";
    *out = *index;
  });
}

int chanflow_type_index_to_key(uint32_t index, const char** out) {
  return guard([&] {
    out_param(out, "chanflow_type_index_to_key", "out");
    const cf::TypeInfo* info =
        index < cf::TypeRegistry::kMaxTypeIndex ? cf::TypeRegistry::global().find(index) : nullptr;
    if (info == nullptr) CHANFLOW_THROW(cf::Error) << "no type has index " << index;
    *out = info->key.c_str();
  });
}

int64_t chanflow_live_object_count(void) { return cf::live_object_count(); }

int chanflow_int_new(int64_t value, chanflow_object_t* out) {
  return guard([&] {
    // The out-parameter is checked before the object exists (an assignment evaluates its right
    // side first: a handle made first would leak when the check throws).
    chanflow_object_t* o = out_param(out, "chanflow_int_new", "out");
    *o = to_handle(cf::Int(value));
  });
}

int chanflow_float_new(double value, chanflow_object_t* out) {
  return guard([&] {
    chanflow_object_t* o = out_param(out, "chanflow_float_new", "out");
    *o = to_handle(cf::Float(value));
  });
}

int chanflow_bool_new(int value, chanflow_object_t* out) {
  return guard([&] {
    chanflow_object_t* o = out_param(out, "chanflow_bool_new", "out");
    *o = to_handle(cf::Bool(value != 0));
  });
}

int chanflow_string_new(const char* data, size_t size, chanflow_object_t* out) {
  return guard([&] {
    out_param(out, "chanflow_string_new", "out");
    if (data == nullptr && size != 0) {
      CHANFLOW_THROW(cf::TypeError) << "chanflow_string_new: data is NULL but size is " << size;
    }
    *out = to_handle(cf::String(size == 0 ? std::string() : std::string(data, size)));
  });
}

int chanflow_int_value(chanflow_object_t obj, int64_t* out) {
  return guard([&] {
    const auto* o = checked_as<cf::IntObj>(obj, "chanflow_int_value", "obj");
    *out_param(out, "chanflow_int_value", "out") = o->value;
  });
}

int chanflow_float_value(chanflow_object_t obj, double* out) {
  return guard([&] {
    const auto* o = checked_as<cf::FloatObj>(obj, "chanflow_float_value", "obj");
    *out_param(out, "chanflow_float_value", "out") = o->value;
  });
}

int chanflow_bool_value(chanflow_object_t obj, int* out) {
  return guard([&] {
    const auto* o = checked_as<cf::BoolObj>(obj, "chanflow_bool_value", "obj");
    *out_param(out, "chanflow_bool_value", "out") = o->value ? 1 : 0;
  });
}

int chanflow_string_value(chanflow_object_t obj, const char** data, size_t* size) {
  return guard([&] {
    const auto* o = checked_as<cf::StringObj>(obj, "chanflow_string_value", "obj");
    out_param(data, "chanflow_string_value", "data");
    out_param(size, "chanflow_string_value", "size");
    *data = o->data.c_str();
    *size = o->data.size();
  });
}

int chanflow_func_new(chanflow_c_func_t fn, void* user_data, chanflow_deleter_t deleter,
                      chanflow_object_t* out) {
  return guard([&] {
    cf::require(fn != nullptr, "chanflow_func_new", "fn is NULL");
    out_param(out, "chanflow_func_new", "out");
    // The deleter is attached only once the CFunction exists: if allocating it fails, user_data
    // stays the caller's (the contract), and once it exists it is destroyed exactly once.
    auto body = std::make_shared<cf::CFunction>(fn, user_data, deleter);
    *out = to_handle(cf::Function(
        [body = std::move(body)](std::span<const cf::ObjectRef> args) { return (*body)(args); }));
  });
}

int chanflow_func_register(const char* name, chanflow_object_t func, int override) {
  return guard([&] {
    const char* n = string_param(name, "chanflow_func_register", "name");
    checked_as<cf::FunctionObj>(func, "chanflow_func_register", "func");
    cf::register_func(n, cf::downcast<cf::Function>(cf::borrow(func)), override != 0);
  });
}

int chanflow_func_get(const char* name, chanflow_object_t* out) {
  return guard([&] {
    const char* n = string_param(name, "chanflow_func_get", "name");
    out_param(out, "chanflow_func_get", "out");
    *out = to_handle(cf::require_global_func(n), "chanflow_func_get", "the function");
  });
}

int chanflow_func_remove(const char* name, int* removed) {
  return guard([&] {
    const bool r = cf::remove_global_func(string_param(name, "chanflow_func_remove", "name"));
    if (removed != nullptr) *removed = r ? 1 : 0;
  });
}

int chanflow_func_call(chanflow_object_t func, const chanflow_object_t* args, size_t num_args,
                       chanflow_object_t* out) {
  return guard([&] {
    const auto* f = checked_as<cf::FunctionObj>(func, "chanflow_func_call", "func");
    out_param(out, "chanflow_func_call", "out");
    *out = to_handle(cf::call_function(f, args, num_args, "chanflow_func_call"),
                     "chanflow_func_call", "the result");
  });
}

int chanflow_func_call_by_name(const char* name, const chanflow_object_t* args, size_t num_args,
                               chanflow_object_t* out) {
  return guard([&] {
    const char* n = string_param(name, "chanflow_func_call_by_name", "name");
    out_param(out, "chanflow_func_call_by_name", "out");
    const cf::Function f = cf::require_global_func(n);
    *out = to_handle(cf::call_function(f.get(), args, num_args, "chanflow_func_call_by_name"),
                     "chanflow_func_call_by_name", "the result");
  });
}

int chanflow_func_list(const char* const** names, size_t* count) {
  return guard([&] {
    out_param(names, "chanflow_func_list", "names");
    out_param(count, "chanflow_func_list", "count");
    std::vector<std::string> list = cf::list_global_funcs();
    std::vector<const char*> pointers;
    pointers.reserve(list.size());
    for (const std::string& s : list) pointers.push_back(s.c_str());
    cf::NameList& slot = cf::name_list_slot();
    slot.names = std::move(list);  // moving a vector keeps each string's buffer where it is
    slot.pointers = std::move(pointers);
    *names = slot.pointers.data();
    *count = slot.pointers.size();
  });
}

}  // extern "C"
