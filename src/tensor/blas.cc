// blas.cc — OpenBLAS thread policy (see blas.h).
#include "chanflow/tensor/blas.h"

#include <cblas.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "chanflow/core/env.h"
#include "chanflow/core/error.h"
#include "internal.h"

namespace chanflow {

namespace {
std::once_flag g_blas_init;  // guards the first-use default; std::call_once is thread-safe

// Throws Error for a CHANFLOW_BLAS_THREADS that does not parse or is out of range; call_once then
// leaves the flag unset, so every matmul reports it until the variable or set_blas_threads fixes
// it.
void apply_default_threads() {
  if (std::optional<int64_t> n = env_int("CHANFLOW_BLAS_THREADS", 1, 1024)) {
    openblas_set_num_threads(static_cast<int>(*n));
    return;
  }
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return;  // the user's choice stands
  openblas_set_num_threads(1);
}
}  // namespace

namespace detail {
void ensure_blas_initialized() { std::call_once(g_blas_init, apply_default_threads); }
}  // namespace detail

void set_blas_threads(int n) {
  if (n < 1) CHANFLOW_THROW(Error) << "set_blas_threads: need at least 1 thread, got " << n;
  std::call_once(g_blas_init, [] {});  // the explicit choice replaces the first-use default
  openblas_set_num_threads(n);
}

int blas_threads() {
  detail::ensure_blas_initialized();
  return openblas_get_num_threads();
}

}  // namespace chanflow
