#include "chanflow/core/check.h"

#include <cstdio>
#include <cstdlib>

namespace chanflow::detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition)
    : file_(file), line_(line), condition_(condition) {}

CheckFailure::~CheckFailure() {
  const std::string message = stream_.str();
  std::fprintf(stderr, "chanflow: internal check failed at %s:%d: %s%s%s\n", file_, line_,
               condition_, message.empty() ? "" : ": ", message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace chanflow::detail
