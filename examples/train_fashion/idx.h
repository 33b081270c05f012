// idx.h — reading Fashion-MNIST's IDX files (images and labels), gzip-compressed or plain.
//
// An IDX file is a 4-byte magic (two zero bytes, a type code, the number of dimensions), one
// big-endian uint32 per dimension, then the data in row-major order. Fashion-MNIST uses two kinds,
// both of unsigned bytes: images (magic 0x00000803: count, rows, cols) and labels (magic
// 0x00000801: count). The reader checks everything it reads; anything wrong is an IdxError naming
// the file and the byte offset of the problem in the decompressed stream.
//
//   FashionMnist d = load_fashion_mnist();  // the Debian package's files, or throws IdxError
//   // d.train_images.image(i) -> 784 pixels 0..255; d.train_labels.labels[i] -> class 0..9
//
//   IdxLabels l = read_idx_labels("t10k-labels-idx1-ubyte.gz", {.classes = 10});
//
// Blocking: every reader here blocks on file I/O. Call them before starting green threads (or
// from an OS thread), not from inside a green thread: the scheduler cannot run others meanwhile.
// Thread-safety: the functions share no state; loaded values are plain data.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chanflow/core/error.h"

namespace train_fashion {

// Where the Debian package dataset-fashion-mnist installs the four files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

inline constexpr uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
inline constexpr uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension

// A bad IDX file or dataset directory. file() is the path (or the name given to
// parse_idx_images/parse_idx_labels); offset() is the byte offset of the problem in the
// decompressed stream, or -1 when the problem is the file as a whole (cannot be opened, a count
// that disagrees with another file). what() names the file, the offset and what is wrong.
class IdxError : public chanflow::Error {
 public:
  IdxError(const std::string& what, std::string file, int64_t offset)
      : chanflow::Error(what), file_(std::move(file)), offset_(offset) {}
  const std::string& file() const noexcept { return file_; }
  int64_t offset() const noexcept { return offset_; }

 private:
  std::string file_;
  int64_t offset_;
};

struct IdxOptions {
  // The most data bytes (the product of the dimensions) a header may declare. A header above it
  // is rejected before anything is allocated; it also keeps count * rows * cols from
  // overflowing. Must be positive.
  int64_t max_bytes = int64_t{256} << 20;
  // Labels must be in 0..classes-1 (1..256).
  int classes = 10;
};

struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols, row-major, 0..255

  // The pixels of image i (0 <= i < count), rows x cols row-major.
  std::span<const uint8_t> image(int64_t i) const {
    const auto n = static_cast<std::size_t>(rows * cols);
    return {pixels.data() + static_cast<std::size_t>(i) * n, n};
  }
};

struct IdxLabels {
  int64_t count = 0;
  std::vector<uint8_t> labels;  // count, each 0..classes-1
};

// Reads an IDX images file (magic 0x00000803), gzip-compressed (one or more gzip members) or
// plain. Throws IdxError when the file is missing or unreadable; the gzip stream is corrupt
// (zlib's error and its CRC check), truncated, or followed by bytes that are not gzip; the magic
// is wrong (the type code or the number of dimensions named); a dimension is zero; the header
// declares more than options.max_bytes; the data is shorter than the header declares, or longer.
// Blocks on file I/O.
IdxImages read_idx_images(const std::string& path, const IdxOptions& options = {});

// Reads an IDX labels file (magic 0x00000801) as read_idx_images does, and also rejects a label
// outside 0..options.classes-1 (naming its index). Blocks on file I/O.
IdxLabels read_idx_labels(const std::string& path, const IdxOptions& options = {});

// The same parsers over a file's bytes in memory (gzip or plain), as the readers above see them
// after opening the file; `name` stands for the file in errors. Does not block. The fuzzer's entry.
IdxImages parse_idx_images(std::span<const uint8_t> bytes, const std::string& name,
                           const IdxOptions& options = {});
IdxLabels parse_idx_labels(std::span<const uint8_t> bytes, const std::string& name,
                           const IdxOptions& options = {});

struct FashionMnist {
  IdxImages train_images, test_images;
  IdxLabels train_labels, test_labels;
};

// Reads train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
// t10k-labels-idx1-ubyte.gz from `dir`. Besides each reader's checks, the images must be 28 x 28
// and each images file must hold as many images as its labels file holds labels (the error names
// both files). A missing directory or file is an IdxError saying that the Debian package
// dataset-fashion-mnist provides them. Blocks on file I/O.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir,
                                const IdxOptions& options = {});

}  // namespace train_fashion
