// libFuzzer target: Program::from_text, then the checks of fuzz_common.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return chanflow::fuzz::run_one([&] { return chanflow::Program::from_text(text, "fuzz"); });
}
