// digits.h — the UCI handwritten digits: loading and validating the gzip CSV, and a seeded,
// stratified train/test split.
//
// The file (data/digits/digits.csv.gz) has one image per line: 64 pixel values (integers 0-16,
// an 8x8 image in row-major order) then the label (0-9). load_digits() reads it with zlib and
// checks every line; anything wrong is a DatasetError naming the file and the line.
//
//   Digits d = load_digits("data/digits/digits.csv.gz", {.expected_rows = 1797});
//   Split s = stratified_split(d, /*test_fraction=*/0.2, /*seed=*/1);
//   // d.sample(s.train[0]) -> 64 values 0..16 (times d.scale: [0, 1]); d.labels[...] -> its class
//
// Thread-safety: a loaded Digits is immutable; any number of threads may read it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "training/dataset.h"

namespace train_digits {

inline constexpr int64_t kPixels = 64;
inline constexpr int64_t kClasses = 10;
inline constexpr int kMaxPixel = 16;

// A bad dataset file: what is wrong, the file and the 1-based line (0 when the problem is the
// file as a whole, e.g. it cannot be opened or has the wrong number of rows).
class DatasetError : public chanflow::Error {
 public:
  DatasetError(const std::string& what, std::string file, int64_t line)
      : chanflow::Error(what), file_(std::move(file)), line_(line) {}
  const std::string& file() const noexcept { return file_; }
  int64_t line() const noexcept { return line_; }

 private:
  std::string file_;
  int64_t line_;
};

// The digits as training::Dataset: sample_shape {64}, values 0..16 with scale 1/16, 10 classes.
using Digits = training::Dataset;
using Split = training::Split;

struct LoadOptions {
  // The number of images the file must hold; -1 accepts any positive number.
  int64_t expected_rows = -1;
};

// Reads and validates a gzip-compressed (or plain) digits CSV. Throws DatasetError on a missing
// or corrupt file, a truncated stream, a line without exactly 65 integer fields, a pixel outside
// 0..16, a label outside 0..9, or a row count other than options.expected_rows. Blocks on file
// I/O (call it before starting green threads, or from an OS thread).
Digits load_digits(const std::string& path, LoadOptions options = {});

// A split whose classes are each divided in the same proportion (each class's rows shuffled with
// `seed`); both lists are sorted. Deterministic for a given (digits, fraction, seed).
Split stratified_split(const Digits& d, double test_fraction, uint64_t seed);

}  // namespace train_digits
