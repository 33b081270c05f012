// libFuzzer target for the .npy reader: any byte string either parses into a tensor or throws a
// chanflow::Error; it never crashes, hangs or reads outside the input (ASan + UBSan check that).
// A parsed tensor is serialised and parsed again, and must come back byte for byte.
// Build and run: scripts/fuzz_npy.sh (clang-14, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "chanflow/tensor.h"

namespace cf = chanflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cf::Tensor t;
  try {
    t = cf::parse_npy(data, size, "fuzz-input");
  } catch (const cf::Error&) {
    return 0;  // rejected with a typed error: fine
  }
  if (t.numel() <= 64) (void)cf::to_string(t);
  const std::string again = cf::serialize_npy(t);
  const cf::Tensor u = cf::parse_npy(again.data(), again.size(), "reserialised");
  const cf::Tensor tc = t.contiguous();
  if (u.dtype() != t.dtype() || u.shape() != t.shape() ||
      std::memcmp(u->raw_data(), tc->raw_data(), static_cast<size_t>(t.nbytes())) != 0) {
    std::abort();  // a round trip that changes the tensor is a bug
  }
  return 0;
}
