// digits.cc — zlib line reader, field validation, stratified split.
#include "digits.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <memory>
#include <random>
#include <sstream>

#include "training/rng.h"

namespace train_digits {

using training::Rng;
using training::shuffle;
namespace {

[[noreturn]] void fail(const std::string& file, int64_t line, const std::string& what) {
  std::ostringstream os;
  os << file;
  if (line > 0) os << ":" << line;
  os << ": " << what;
  throw DatasetError(os.str(), file, line);
}

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// Parses one line into its fields (integers); names the field on error.
void parse_line(const std::string& file, int64_t line_no, std::string_view line,
                std::array<int, kPixels + 1>& fields) {
  std::size_t pos = 0;
  int64_t n = 0;
  while (true) {
    const std::size_t comma = line.find(',', pos);
    const std::string_view field =
        line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (n >= kPixels + 1) {
      fail(file, line_no, "expected " + std::to_string(kPixels + 1) + " fields, found more");
    }
    int value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size()) {
      fail(file, line_no,
           "field " + std::to_string(n + 1) + " is '" + std::string(field) + "', not an integer");
    }
    fields[static_cast<std::size_t>(n++)] = value;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (n != kPixels + 1) {
    fail(file, line_no,
         "expected " + std::to_string(kPixels + 1) + " fields (64 pixels and a label), found " +
             std::to_string(n));
  }
}

}  // namespace

Digits load_digits(const std::string& path, LoadOptions options) {
  std::unique_ptr<gzFile_s, GzCloser> gz(gzopen(path.c_str(), "rb"));
  if (!gz) fail(path, 0, "cannot open the file");
  Digits d;
  d.sample_shape = {kPixels};
  d.classes = kClasses;
  d.scale = 1.0f / static_cast<float>(kMaxPixel);
  std::array<int, kPixels + 1> fields{};
  std::vector<char> buf(8192);
  std::string line;
  int64_t line_no = 0;
  for (;;) {
    line.clear();
    bool got = false;
    // A line may span several gzgets calls when longer than the buffer.
    while (gzgets(gz.get(), buf.data(), static_cast<int>(buf.size())) != nullptr) {
      got = true;
      line += buf.data();
      if (!line.empty() && line.back() == '\n') break;
      if (line.size() > 1u << 16) fail(path, line_no + 1, "line longer than 64 KiB");
    }
    int err = Z_OK;
    const char* msg = gzerror(gz.get(), &err);
    if (err != Z_OK && err != Z_STREAM_END) {
      fail(path, line_no + 1,
           std::string("corrupt or truncated gzip stream (zlib: ") + (msg ? msg : "?") + ")");
    }
    if (!got) break;
    ++line_no;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) fail(path, line_no, "empty line");
    parse_line(path, line_no, line, fields);
    for (int64_t i = 0; i < kPixels; ++i) {
      const int v = fields[static_cast<std::size_t>(i)];
      if (v < 0 || v > kMaxPixel) {
        fail(path, line_no,
             "pixel " + std::to_string(i) + " (field " + std::to_string(i + 1) + ") is " +
                 std::to_string(v) + ", outside 0.." + std::to_string(kMaxPixel));
      }
      d.values.push_back(static_cast<uint8_t>(v));
    }
    const int label = fields[kPixels];
    if (label < 0 || label >= kClasses) {
      fail(path, line_no, "label (field 65) is " + std::to_string(label) + ", outside 0..9");
    }
    d.labels.push_back(label);
  }
  d.rows = static_cast<int64_t>(d.labels.size());
  if (d.rows == 0) fail(path, 0, "no images in the file");
  if (options.expected_rows >= 0 && d.rows != options.expected_rows) {
    fail(path, 0,
         "expected " + std::to_string(options.expected_rows) + " images, found " +
             std::to_string(d.rows) + " (truncated or wrong file?)");
  }
  return d;
}

Split stratified_split(const Digits& d, double test_fraction, uint64_t seed) {
  if (!(test_fraction > 0.0 && test_fraction < 1.0)) {
    CHANFLOW_THROW(chanflow::Error)
        << "stratified_split: test_fraction must be in (0, 1), got " << test_fraction;
  }
  std::array<std::vector<int64_t>, kClasses> by_class;
  for (int64_t r = 0; r < d.rows; ++r) {
    by_class[static_cast<std::size_t>(d.labels[static_cast<std::size_t>(r)])].push_back(r);
  }
  Rng rng(seed);
  Split s;
  for (auto& rows : by_class) {
    shuffle(rows, rng);
    const auto n_test =
        static_cast<std::size_t>(std::llround(test_fraction * static_cast<double>(rows.size())));
    s.test.insert(s.test.end(), rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(n_test));
    s.train.insert(s.train.end(), rows.begin() + static_cast<std::ptrdiff_t>(n_test), rows.end());
  }
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.test.begin(), s.test.end());
  return s;
}

}  // namespace train_digits
