// env.h — reading CHANFLOW_* environment variables that hold numbers. Public: the tensor and
// runtime layers, the Python module and the tools read their settings through it.
//
// A setting the user made and chanflow cannot read is an error, never a silent fallback to the
// default:
//
//   std::optional<int64_t> n = env_int("CHANFLOW_WORKERS", 1, kMaxWorkers);
//   // unset or empty: nullopt; "abc", "4x", "0", "99999": Error naming the variable and value
#pragma once

#include <cstdint>
#include <optional>

#include "chanflow/core/export.h"

namespace chanflow {

// The value of environment variable `name` as a decimal integer in [min, max]; nullopt when the
// variable is unset or empty. With `size_suffix`, a k/K or m/M suffix multiplies by 1024 or
// 1024 * 1024 (before the range check). Throws Error naming the variable, its value and the
// accepted range when the value does not parse (sign, trailing characters, overflow) or is out
// of range. Thread-safe as far as std::getenv is (no concurrent setenv).
CHANFLOW_API std::optional<int64_t> env_int(const char* name, int64_t min, int64_t max,
                                            bool size_suffix = false);

}  // namespace chanflow
