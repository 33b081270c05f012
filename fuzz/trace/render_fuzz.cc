// libFuzzer target for the trace's renderer (trace_render_bytes, src/runtime/trace_impl.h): any
// bytes, read as a recording's buffer, render up to the first that is not a record the recorder
// could have written, and the renderer never reads outside them (ASan + UBSan check that).
//
// What it renders is JSON: the events, joined as in a trace file, parse as a JSON array whose
// elements are objects, unless a record of the generic kinds (slice, instant, counter, flow) was
// among them. Those carry the caller's `args` text, which trace.h copies into the event as it is.
// Build and run: scripts/fuzz_trace.sh (clang-14, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "trace_impl.h"

namespace {

// Kinds 0..4 are the generic ones (trace.cc's Kind): slice, instant, counter, flow begin and end.
constexpr uint8_t kLastGenericKind = 4;

// Whether the records in data, walked by their size fields, include a generic kind. It may walk
// past the renderer's stopping point, which only makes the JSON check skip more inputs.
bool has_generic_record(const uint8_t* data, size_t size) {
  for (size_t at = 0; size - at >= 8;) {
    uint32_t n;
    std::memcpy(&n, data + at, sizeof(n));
    if (data[at + 4] <= kLastGenericKind) return true;
    if (n == 0 || n % 8 != 0 || n > size - at) return false;
    at += n;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string out;
  const bool whole = chanflow::detail::trace_render_bytes(data, size, &out);
  if (whole && size % 8 != 0 && size <= 65536) {  // it renders at most the first 64 KiB
    std::fprintf(stderr, "trace fuzz: %zu bytes (not a whole number of records) rendered whole\n",
                 size);
    std::abort();
  }
  if (has_generic_record(data, size)) return 0;
  const auto doc = nlohmann::json::parse("[" + out + "]", nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "trace fuzz: the rendered events are not JSON:\n%s\n", out.c_str());
    std::abort();
  }
  for (const auto& e : doc) {
    if (!e.is_object() || !e.contains("ph") || !e.contains("pid")) {
      std::fprintf(stderr, "trace fuzz: an event without ph or pid: %s\n", e.dump().c_str());
      std::abort();
    }
  }
  return 0;
}
