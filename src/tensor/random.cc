// random.cc — reproducible uniform and normal tensors (see random.h for the exact algorithm).
#include "chanflow/tensor/random.h"

#include <cmath>
#include <random>

#include "chanflow/tensor/detail/dispatch.h"

namespace chanflow {

namespace {

// [0, 1) with 53 random bits.
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

template <class Gen>
Tensor generate(const Shape& shape, DType dtype, Gen&& next) {
  Tensor t = Tensor::empty(shape, dtype);
  detail::dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(t->raw_data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = detail::convert<T>(next());
  });
  return t;
}

}  // namespace

Tensor uniform(const Shape& shape, double low, double high, uint64_t seed, DType dtype) {
  if (!std::isfinite(low) || !std::isfinite(high) || !(low <= high)) {
    CHANFLOW_THROW(Error) << "uniform: need finite low <= high, got [" << low << ", " << high
                          << ")";
  }
  std::mt19937_64 g(seed);
  const double span = high - low;
  return generate(shape, dtype, [&] { return low + span * unit(g); });
}

Tensor normal(const Shape& shape, double mean, double stddev, uint64_t seed, DType dtype) {
  if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0) {
    CHANFLOW_THROW(Error) << "normal: need a finite mean and stddev >= 0, got " << mean << ", "
                          << stddev;
  }
  std::mt19937_64 g(seed);
  bool have_spare = false;
  double spare = 0;
  return generate(shape, dtype, [&] {
    if (have_spare) {
      have_spare = false;
      return mean + stddev * spare;
    }
    // Box-Muller: 1 - u is in (0, 1], so the log is finite.
    const double u1 = 1.0 - unit(g);
    const double u2 = unit(g);
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0 * 3.14159265358979323846 * u2;
    spare = r * std::sin(theta);
    have_spare = true;
    return mean + stddev * r * std::cos(theta);
  });
}

}  // namespace chanflow
