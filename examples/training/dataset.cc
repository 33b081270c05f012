// dataset.cc — decoding a batch: bytes times the scale, one-hot labels.
#include "dataset.h"

#include <algorithm>

namespace cf = chanflow;

namespace training {

std::pair<cf::Tensor, cf::Tensor> make_batch(const Dataset& d, const std::vector<int64_t>& rows,
                                             std::size_t begin, std::size_t n, int64_t pad_to) {
  const int64_t r = std::max<int64_t>(static_cast<int64_t>(n), pad_to);
  const int64_t f = d.features();
  cf::Shape xs{r};
  xs.insert(xs.end(), d.sample_shape.begin(), d.sample_shape.end());
  // Only padding rows need zeros: the real rows are written in full below.
  cf::Tensor x = r > static_cast<int64_t>(n) ? cf::Tensor::zeros(xs, cf::DType::kFloat32)
                                             : cf::Tensor::empty(xs, cf::DType::kFloat32);
  cf::Tensor y = cf::Tensor::zeros({r, d.classes}, cf::DType::kFloat32);
  float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t row = rows[begin + i];
    std::span<const uint8_t> s = d.sample(row);
    float* dst = xp + static_cast<int64_t>(i) * f;
    for (std::size_t k = 0; k < s.size(); ++k) dst[k] = static_cast<float>(s[k]) * d.scale;
    yp[static_cast<int64_t>(i) * d.classes + d.labels[static_cast<std::size_t>(row)]] = 1.0f;
  }
  return {x, y};
}

}  // namespace training
