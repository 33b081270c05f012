// dataset.h — labelled samples as the training pipeline reads them, and batches made of them.
//
// A Dataset keeps each sample's features as the bytes the file had (uint8: a pixel) with one
// scale to float32 (a digits pixel 0..16 scales by 1/16, a Fashion-MNIST pixel 0..255 by 1/255):
// a quarter of the memory of floats, decoded as each batch is made.
//
//   Dataset d = ...;                                   // train_digits/, train_fashion/ load them
//   auto [x, y] = make_batch(d, split.train, 0, 64);   // x (64, sample_shape...), y one-hot (64,
//   10)
//
// Thread-safety: a loaded Dataset is immutable; any number of threads may read it.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "chanflow/tensor/tensor.h"

namespace training {

struct Dataset {
  int64_t rows = 0;
  chanflow::Shape sample_shape;  // one sample, e.g. {64} or {1, 28, 28}
  int64_t classes = 10;
  std::vector<uint8_t> values;  // rows x features(), row-major
  float scale = 1.0f;           // feature = value * scale
  std::vector<int32_t> labels;  // rows, each in [0, classes)

  int64_t features() const {
    int64_t n = 1;
    for (int64_t d : sample_shape) n *= d;
    return n;
  }
  std::span<const uint8_t> sample(int64_t row) const {
    const int64_t f = features();
    return {values.data() + row * f, static_cast<std::size_t>(f)};
  }
};

// Row indices of a split, each list sorted.
struct Split {
  std::vector<int64_t> train;
  std::vector<int64_t> test;
};

// x (max(n, pad_to), sample_shape...) float32 features and y (same rows, classes) one-hot labels of
// rows[begin, begin + n), zero-padded to `pad_to` rows when pad_to > n (padding rows have all-zero
// labels, so they count in no loss, gradient or accuracy).
std::pair<chanflow::Tensor, chanflow::Tensor> make_batch(const Dataset& d,
                                                         const std::vector<int64_t>& rows,
                                                         std::size_t begin, std::size_t n,
                                                         int64_t pad_to = 0);

}  // namespace training
