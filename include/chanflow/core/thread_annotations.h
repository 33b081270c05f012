// thread_annotations.h — lock annotations that Clang's -Wthread-safety checks at compile time.
// Public: public headers annotate their locked members with them. GCC has no such analysis: there
// every macro expands to nothing.
//
// A lock type is a capability; a field names the lock that guards it; a function names the locks
// it needs, takes or gives back. Clang then rejects, within each function, an access to a guarded
// field without its lock, a call without a required lock, and a lock not released on some path.
// The analysis is local to a function and follows only annotated lock types and guards:
// os::SpinLock (spinlock.h), os::Mutex, os::LockGuard ... (locks.h), not std::mutex.
//
//   struct Counter {
//     os::Mutex mu;
//     long n CHANFLOW_GUARDED_BY(mu) = 0;
//     void add() CHANFLOW_EXCLUDES(mu) { os::LockGuard g(mu); bump(); }
//     void bump() CHANFLOW_REQUIRES(mu) { ++n; }
//   };
//
// Checked by the `clang` CMake preset (-Wthread-safety -Werror; docs/runtime.md, "Checked
// locking").
#pragma once

#if defined(__clang__)
#define CHANFLOW_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define CHANFLOW_THREAD_ANNOTATION_(x)
#endif

// On a class: its objects are locks ("capabilities"); `name` appears in diagnostics ("mutex").
#define CHANFLOW_CAPABILITY(name) CHANFLOW_THREAD_ANNOTATION_(capability(name))
// On a class: an RAII guard; its constructor acquires and its destructor releases (a scope).
#define CHANFLOW_SCOPED_CAPABILITY CHANFLOW_THREAD_ANNOTATION_(scoped_lockable)

// On a field: read or written only while `lock` is held (shared for reads, exclusive for writes).
#define CHANFLOW_GUARDED_BY(lock) CHANFLOW_THREAD_ANNOTATION_(guarded_by(lock))
// On a pointer field: the object it points to is accessed only while `lock` is held.
#define CHANFLOW_PT_GUARDED_BY(lock) CHANFLOW_THREAD_ANNOTATION_(pt_guarded_by(lock))

// On a function: callers must hold the locks (exclusively / at least shared) across the call.
#define CHANFLOW_REQUIRES(...) CHANFLOW_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define CHANFLOW_REQUIRES_SHARED(...) \
  CHANFLOW_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// On a function: callers must not hold the locks (it takes them itself; not recursive).
#define CHANFLOW_EXCLUDES(...) CHANFLOW_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

// On a function: it acquires / releases the locks (no argument on a lock's own member: `this`;
// no argument on a guard's destructor: whatever the guard holds).
#define CHANFLOW_ACQUIRE(...) CHANFLOW_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define CHANFLOW_ACQUIRE_SHARED(...) \
  CHANFLOW_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define CHANFLOW_RELEASE(...) CHANFLOW_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define CHANFLOW_RELEASE_SHARED(...) \
  CHANFLOW_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
// On a function returning bool: CHANFLOW_TRY_ACQUIRE(result[, locks...]) acquires the locks exactly
// when it returns `result`.
#define CHANFLOW_TRY_ACQUIRE(...) CHANFLOW_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))

// On a function returning a lock: the caller may treat the result as that lock (an accessor).
#define CHANFLOW_RETURN_CAPABILITY(lock) CHANFLOW_THREAD_ANNOTATION_(lock_returned(lock))

// On a function that establishes, for the analysis, that the caller holds `lock` (a contract the
// caller meets in a way the analysis cannot follow); it may check the claim at run time.
#define CHANFLOW_ASSERT_CAPABILITY(lock) CHANFLOW_THREAD_ANNOTATION_(assert_capability(lock))

// On one function whose correct locking the analysis cannot follow (locks taken in a loop over
// several objects, a lock released through a callback). State the reason next to each use.
#define CHANFLOW_NO_THREAD_SAFETY_ANALYSIS CHANFLOW_THREAD_ANNOTATION_(no_thread_safety_analysis)
