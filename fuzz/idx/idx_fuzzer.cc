// libFuzzer target for the IDX reader: any byte string, read as an images file and as a labels
// file, either parses or throws an IdxError naming the input; it never crashes, hangs, reads
// outside the input or throws anything else (ASan + UBSan check the first ones; an uncaught
// exception aborts). A parsed file is written back as plain IDX: for a plain input that must be
// the input itself, byte for byte (nothing is dropped or invented), and it must parse to the same
// values. Build and run: scripts/fuzz_idx.sh (clang-14, -fsanitize=fuzzer,address,undefined).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "idx.h"

namespace tf = train_fashion;

namespace {

constexpr const char* kName = "fuzz-input";
// Small enough that an input declaring the most it may costs little per run; the code path is
// the one the default bound takes.
constexpr tf::IdxOptions kOptions{.max_bytes = int64_t{1} << 20, .classes = 10};

void put_u32(std::vector<uint8_t>& b, int64_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}

std::vector<uint8_t> encode(uint32_t magic, const std::vector<int64_t>& dims,
                            const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b;
  put_u32(b, magic);
  for (const int64_t d : dims) put_u32(b, d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// An error must name the input; for a plain input its offset lies within it.
void check_error(const tf::IdxError& e, std::span<const uint8_t> input, bool gzip) {
  if (e.file() != kName || e.offset() < -1) std::abort();
  if (!gzip && e.offset() > static_cast<int64_t>(input.size())) std::abort();
}

void check_round_trip(const std::vector<uint8_t>& again, std::span<const uint8_t> input,
                      bool gzip) {
  if (!gzip &&
      (again.size() != input.size() || !std::equal(again.begin(), again.end(), input.begin()))) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> input(data, size);
  const bool gzip = size >= 2 && data[0] == 0x1F && data[1] == 0x8B;

  try {
    const tf::IdxImages im = tf::parse_idx_images(input, kName, kOptions);
    if (im.count <= 0 || im.rows <= 0 || im.cols <= 0) std::abort();
    const int64_t n = im.count * im.rows * im.cols;
    if (n > kOptions.max_bytes || static_cast<int64_t>(im.pixels.size()) != n) std::abort();
    const std::vector<uint8_t> again =
        encode(tf::kIdxImagesMagic, {im.count, im.rows, im.cols}, im.pixels);
    check_round_trip(again, input, gzip);
    const tf::IdxImages back = tf::parse_idx_images(again, kName, kOptions);
    if (back.count != im.count || back.rows != im.rows || back.cols != im.cols ||
        back.pixels != im.pixels) {
      std::abort();
    }
  } catch (const tf::IdxError& e) {
    check_error(e, input, gzip);
  }

  try {
    const tf::IdxLabels l = tf::parse_idx_labels(input, kName, kOptions);
    if (l.count <= 0 || l.count > kOptions.max_bytes ||
        static_cast<int64_t>(l.labels.size()) != l.count) {
      std::abort();
    }
    for (const uint8_t v : l.labels) {
      if (v >= kOptions.classes) std::abort();
    }
    const std::vector<uint8_t> again = encode(tf::kIdxLabelsMagic, {l.count}, l.labels);
    check_round_trip(again, input, gzip);
    if (tf::parse_idx_labels(again, kName, kOptions).labels != l.labels) std::abort();
  } catch (const tf::IdxError& e) {
    check_error(e, input, gzip);
  }
  return 0;
}
