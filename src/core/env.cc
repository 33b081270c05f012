// env.cc — numeric CHANFLOW_* environment variables (see core/env.h).
#include "chanflow/core/env.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include "chanflow/core/error.h"

namespace chanflow {

std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max, bool size_suffix) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  auto bad = [&](const char* why) {
    CHANFLOW_THROW(Error) << "environment variable " << name << "='" << value << "' " << why
                          << " (expected an integer from " << min << " to " << max
                          << (size_suffix ? ", with an optional k/K or m/M suffix" : "")
                          << "; unset it for the default)";
  };
  // strtoll skips leading blanks and accepts a sign: a value must start with a digit (or '-' for
  // a negative range) so " 4" and "+4" are refused like "4 ".
  if (!(*value >= '0' && *value <= '9') && !(*value == '-' && min < 0)) bad("is not a number");
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(value, &end, 10);
  if (end == value) bad("is not a number");
  if (errno == ERANGE) bad("is out of range");
  int64_t n = v;
  if (size_suffix && (*end == 'k' || *end == 'K' || *end == 'm' || *end == 'M')) {
    const int64_t unit = (*end == 'k' || *end == 'K') ? 1024 : int64_t{1024} * 1024;
    if (__builtin_mul_overflow(n, unit, &n)) bad("is out of range");
    ++end;
  }
  if (*end != '\0') bad("is not a number");
  if (n < min || n > max) bad("is out of range");
  return n;
}

}  // namespace chanflow
