// c_api.h — chanflow's C ABI: objects and the global function registry from C, or from any
// language with a C FFI. Plain C (C99 and later); link chanflow::c_api (CMake) or -lchanflow_c_api.
//
//   chanflow_object_t a, b, sum;
//   chanflow_int_new(1, &a);
//   chanflow_int_new(2, &b);
//   chanflow_object_t args[2] = {a, b};
//   if (chanflow_func_call_by_name("demo.add", args, 2, &sum) != 0) {
//     fprintf(stderr, "%s\n", chanflow_last_error());   // "TypeError: demo.add: ..."
//   }
//   chanflow_object_release(a); chanflow_object_release(b); chanflow_object_release(sum);
//
// Conventions, for every function below unless it says otherwise:
// - Status: returns 0 on success and -1 on failure. On failure the calling thread's last error
//   (chanflow_last_error) is set to "<Kind>: <message>", where Kind is the chanflow error class
//   ("TypeError", "ShapeError", "Error", ...), "MemoryError" when memory ran out, or
//   "InternalError" for anything else; out-parameters are written only on success. No C++
//   exception ever leaves a function of this header.
// - Handles: a chanflow_object_t is an opaque handle that owns one reference to an object. A
//   handle a function returns through an out-parameter is new: the caller owns it and releases
//   it with chanflow_object_release. Handles passed in are borrowed (the callee retains what it
//   keeps). NULL stands for a null object where a function says so (arguments of a call, results
//   of a call); elsewhere a NULL handle is an error ("TypeError: ... is a null handle"). A handle
//   is checked before use (not in the first page, such as (void*)0x10; on x86-64 a user-space
//   address; alignment; a registered type; a positive reference count), which catches most
//   pointers that are not handles; a handle used after its last release, or any other pointer to
//   memory that is not mapped, is, as free() in C, undefined behaviour that the check can miss.
// - Threads: every function may be called from any thread, concurrently. The last error is per
//   OS thread.
// - Strings: `const char*` inputs are NUL-terminated UTF-8 unless a size is given.
#ifndef CHANFLOW_C_API_H_
#define CHANFLOW_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "chanflow/core/export.h"

#ifdef __cplusplus
extern "C" {
#endif

// An owning handle to a chanflow object (see the conventions above).
typedef struct chanflow_object_s* chanflow_object_t;

// ---- errors ----

// The calling OS thread's last error text: "" when no call on this thread has failed. Valid until
// the next failing call on this thread. Never NULL; never fails.
CHANFLOW_API const char* chanflow_last_error(void);

// Sets the calling thread's last error to `text` (NULL: ""). For C functions registered through
// chanflow_func_new: set it before returning nonzero, and the caller gets it as the error, its
// "<Kind>: " prefix choosing the error class when it names one (e.g. "TypeError: bad input").
// Never fails.
CHANFLOW_API void chanflow_set_last_error(const char* text);

// ---- objects ----

// Adds a reference to `obj`: each retain is balanced by one release. Refused (-1,
// "LimitError: chanflow_object_retain: obj already has 1073741824 references, ...") when the
// object already has 2^30 references, so that the 32-bit count can never wrap; the object is
// unchanged and stays usable. A function that returns a handle to an existing object
// (chanflow_func_get, a call returning one of its arguments) is refused the same way.
CHANFLOW_API int chanflow_object_retain(chanflow_object_t obj);

// Drops the reference `obj` owns; the object is destroyed when its last reference goes. NULL is
// accepted and does nothing (returns 0), as free(NULL) does.
CHANFLOW_API int chanflow_object_release(chanflow_object_t obj);

// The object's current reference count (racy when other threads hold references; for tests).
CHANFLOW_API int chanflow_object_use_count(chanflow_object_t obj, int32_t* out);

// The index of the object's dynamic type.
CHANFLOW_API int chanflow_object_type_index(chanflow_object_t obj, uint32_t* out);

// The key of the object's dynamic type ("Int", "String", "Function", ...). The string lives as
// long as the process.
CHANFLOW_API int chanflow_object_type_key(chanflow_object_t obj, const char** out);

// The index of the type registered under `key`. Error when there is none.
CHANFLOW_API int chanflow_type_key_to_index(const char* key, uint32_t* out);

// The key of the type with index `index` (lives as long as the process). Error when there is none.
CHANFLOW_API int chanflow_type_index_to_key(uint32_t index, const char** out);

// The number of live objects in the process when the library was built with object tracking
// (CHANFLOW_OBJECT_TRACKING: the debug, asan and tsan presets), else -1. Never fails.
CHANFLOW_API int64_t chanflow_live_object_count(void);

// ---- boxed scalars and strings ----

// New Int, Float, Bool (nonzero is true) and String objects. chanflow_string_new copies `size`
// bytes from `data` (embedded NUL bytes included; `data` may be NULL when `size` is 0).
CHANFLOW_API int chanflow_int_new(int64_t value, chanflow_object_t* out);
CHANFLOW_API int chanflow_float_new(double value, chanflow_object_t* out);
CHANFLOW_API int chanflow_bool_new(int value, chanflow_object_t* out);
CHANFLOW_API int chanflow_string_new(const char* data, size_t size, chanflow_object_t* out);

// The value of an Int, Float, Bool (1 or 0) or String object; TypeError naming both types when
// `obj` is of another type. A String's bytes (NUL-terminated, `*size` not counting the NUL) stay
// valid while the object lives.
CHANFLOW_API int chanflow_int_value(chanflow_object_t obj, int64_t* out);
CHANFLOW_API int chanflow_float_value(chanflow_object_t obj, double* out);
CHANFLOW_API int chanflow_bool_value(chanflow_object_t obj, int* out);
CHANFLOW_API int chanflow_string_value(chanflow_object_t obj, const char** data, size_t* size);

// ---- functions ----

// A C function body: called with `num_args` borrowed argument handles (NULL for a null argument;
// retain what you keep). On success it returns 0 and stores a new handle (or NULL, the null
// object) in `*out`, which chanflow then owns. On failure it returns nonzero, preferably after
// chanflow_set_last_error("<Kind>: <message>"); a handle left in `*out` is released. It may be
// called from several threads at once, and from a green thread, so it must be thread-safe and
// must not depend on staying on one OS thread across a chanflow call.
typedef int (*chanflow_c_func_t)(void* user_data, const chanflow_object_t* args, size_t num_args,
                                 chanflow_object_t* out);

// Frees a C function's user data, when the function object is destroyed (on whichever thread
// drops the last reference). Must not fail or block.
typedef void (*chanflow_deleter_t)(void* user_data);

// A new Function object whose body is `fn` called with `user_data`. The function owns
// `user_data` once this succeeds: `deleter` (may be NULL) runs when the object is destroyed. On
// failure the deleter is not called and `user_data` stays the caller's.
CHANFLOW_API int chanflow_func_new(chanflow_c_func_t fn, void* user_data,
                                   chanflow_deleter_t deleter, chanflow_object_t* out);

// Registers the Function `func` under `name` (the registry takes its own reference). Error when
// `name` is empty, `func` is not a Function, or a function is registered under `name` and
// `override` is 0.
CHANFLOW_API int chanflow_func_register(const char* name, chanflow_object_t func, int override);

// The function registered under `name` (a new handle). Error naming it when there is none.
CHANFLOW_API int chanflow_func_get(const char* name, chanflow_object_t* out);

// Removes the function registered under `name`; `*removed` (may be NULL) says whether there was
// one. Calls in progress finish normally.
CHANFLOW_API int chanflow_func_remove(const char* name, int* removed);

// Calls the Function `func` with `num_args` borrowed argument handles (NULL entries are null
// objects; `args` may be NULL when `num_args` is 0) and stores the result, a new handle or NULL,
// in `*out`. The function's error (a C++ exception, a Python exception, a C function's failure)
// becomes this call's failure, its class kept in the "<Kind>: " prefix. Blocks as long as the
// function runs.
CHANFLOW_API int chanflow_func_call(chanflow_object_t func, const chanflow_object_t* args,
                                    size_t num_args, chanflow_object_t* out);

// chanflow_func_get(name) then chanflow_func_call; the function is released after the call.
CHANFLOW_API int chanflow_func_call_by_name(const char* name, const chanflow_object_t* args,
                                            size_t num_args, chanflow_object_t* out);

// The names of every registered function, sorted: `*names` points to `*count` NUL-terminated
// strings, owned by the calling thread and valid until its next chanflow_func_list call.
CHANFLOW_API int chanflow_func_list(const char* const** names, size_t* count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CHANFLOW_C_API_H_
