// check.h — invariant checks that are always on (CHANFLOW_CHECK) or debug-only (CHANFLOW_DCHECK).
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
