// check.h — invariant checks that are always on (CHANFLOW_CHECK), debug-only (CHANFLOW_DCHECK), or
// on in debug and sanitizer builds (CHANFLOW_INVARIANT).
//
// A failed check is a bug in chanflow, not a user error: it prints file:line, the condition and the
// streamed message to stderr and aborts. For errors a user can cause, throw (see error.h).
//
//   CHANFLOW_CHECK(n >= 0) << "negative count " << n;
#pragma once

#include <sstream>

#include "chanflow/core/export.h"

namespace chanflow::detail {

class CHANFLOW_API CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  CheckFailure(const CheckFailure&) = delete;
  CheckFailure& operator=(const CheckFailure&) = delete;
  ~CheckFailure();  // prints and aborts

  template <class V>
  CheckFailure& operator<<(const V& value) {
    stream_ << value;
    return *this;
  }

 private:
  const char* file_;
  int line_;
  const char* condition_;
  std::ostringstream stream_;
};

// Lets `CHANFLOW_CHECK(c) << x;` be a single statement with a void type in both branches.
struct CheckVoidify {
  void operator&(const CheckFailure& /*unused*/) const {}
};

}  // namespace chanflow::detail

#define CHANFLOW_CHECK(cond)                    \
  (cond) ? (void)0                              \
         : ::chanflow::detail::CheckVoidify() & \
               ::chanflow::detail::CheckFailure(__FILE__, __LINE__, #cond)

#ifdef NDEBUG
#define CHANFLOW_DCHECK(cond) \
  while (false) CHANFLOW_CHECK(cond)
#else
#define CHANFLOW_DCHECK(cond) CHANFLOW_CHECK(cond)
#endif

// Structural invariants of the runtime's data structures (a channel's, a wait queue's), checked
// where they must hold, in debug builds and in the sanitizer builds every test also runs under
// (those build with NDEBUG, so CHANFLOW_DCHECK alone would skip them there). Release builds
// compile them out: some run on every channel operation.
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHANFLOW_INVARIANT_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHANFLOW_INVARIANT_CHECKS 1
#endif
#endif
#ifndef CHANFLOW_INVARIANT_CHECKS
#define CHANFLOW_INVARIANT_CHECKS 0
#endif

#if CHANFLOW_INVARIANT_CHECKS
#define CHANFLOW_INVARIANT(cond) CHANFLOW_CHECK(cond)
#else
#define CHANFLOW_INVARIANT(cond) \
  while (false) CHANFLOW_CHECK(cond)
#endif
