// blas.cc — OpenBLAS thread policy (see blas.h).
#include "chanflow/tensor/blas.h"

#include <cblas.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "chanflow/core/error.h"
#include "internal.h"

namespace chanflow {

namespace {
std::once_flag g_blas_init;  // guards the first-use default; std::call_once is thread-safe

void apply_default_threads() {
  if (const char* v = std::getenv("CHANFLOW_BLAS_THREADS"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != nullptr && *end == '\0' && n >= 1 && n <= 1024) {
      openblas_set_num_threads(static_cast<int>(n));
      return;
    }
    // A malformed value falls back to the default rather than failing every matmul.
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
