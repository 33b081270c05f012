// locks.h — std::mutex and std::shared_mutex as annotated capabilities, their condition variable,
// and the scoped guards for every annotated lock. Public: every layer's lock-guarded state uses
// them, and public headers (Executor, Group, OpSchema) hold them as members.
//
// Namespace chanflow::os: these locks block the OS thread. chanflow::Mutex (runtime/mutex.h)
// parks only the green thread; a green thread may hold an os:: lock only for a short critical
// section that neither blocks on chanflow nor switches fibers.
//
// libstdc++'s locks carry no thread-safety annotations, so Clang cannot tell that a
// std::lock_guard holds one. Code whose fields are CHANFLOW_GUARDED_BY a lock uses these instead
// (thread_annotations.h). Same cost as the standard types: each is one of them with annotated
// members. Unlike chanflow::Mutex, os::Mutex blocks the OS thread, not just a green thread.
//
//   os::Mutex mu;  std::vector<int> v CHANFLOW_GUARDED_BY(mu);
//   { os::LockGuard g(mu); v.push_back(1); }
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "chanflow/core/thread_annotations.h"

namespace chanflow::os {

// std::mutex: lock() acquires (acquire ordering), unlock() releases (release ordering). Not
// recursive. Thread-safe.
class CHANFLOW_CAPABILITY("mutex") Mutex {
 public:
  void lock() CHANFLOW_ACQUIRE() { mu_.lock(); }
  bool try_lock() CHANFLOW_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void unlock() CHANFLOW_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// std::shared_mutex: one writer (lock) or many readers (lock_shared). Thread-safe.
class CHANFLOW_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() CHANFLOW_ACQUIRE() { mu_.lock(); }
  void unlock() CHANFLOW_RELEASE() { mu_.unlock(); }
  void lock_shared() CHANFLOW_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() CHANFLOW_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `lock` exclusively from construction to the end of the scope. Lock is SpinLock, Mutex or
// SharedMutex (anything with annotated lock() / unlock()).
template <class Lock>
class CHANFLOW_SCOPED_CAPABILITY LockGuard {
 public:
  explicit LockGuard(Lock& lock) CHANFLOW_ACQUIRE(lock) : lock_(lock) { lock_.lock(); }
  ~LockGuard() CHANFLOW_RELEASE() { lock_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Lock& lock_;
};

// Holds a SharedMutex shared (as a reader) from construction to the end of the scope.
class CHANFLOW_SCOPED_CAPABILITY SharedLockGuard {
 public:
  explicit SharedLockGuard(SharedMutex& mu) CHANFLOW_ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_.lock_shared();
  }
  ~SharedLockGuard() CHANFLOW_RELEASE() { mu_.unlock_shared(); }
  SharedLockGuard(const SharedLockGuard&) = delete;
  SharedLockGuard& operator=(const SharedLockGuard&) = delete;

 private:
  SharedMutex& mu_;
};

// std::condition_variable for an os::Mutex. notify_* may be called with or without the mutex.
class CondVar {
 public:
  // Releases `mu`, blocks until notified (or spuriously woken) and takes `mu` again before it
  // returns: callers loop on their condition. `mu` must be held.
  void wait(Mutex& mu) CHANFLOW_REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();  // still held: the caller's guard releases it
  }
  // wait() until `deadline` at the latest (then returns without a notification; callers loop on
  // their condition and their clock either way).
  template <class Clock, class Duration>
  void wait_until(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
      CHANFLOW_REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    cv_.wait_until(l, deadline);
    l.release();
  }
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace chanflow::os
