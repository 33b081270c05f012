// rng.h — the pipeline's one source of randomness: a seeded SplitMix64 generator and a
// Fisher-Yates shuffle, written out so a seed gives the same numbers with every standard library
// (std::shuffle and the std distributions are implementation-defined).
//
//   Rng rng(42);
//   shuffle(indices, rng);           // same order for seed 42 everywhere
//   double u = rng.uniform();        // [0, 1)
//
// Thread-safety: an Rng is a plain value; use one per thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace training {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0); the modulo bias is below 2^-40 for the sizes used here.
  uint64_t below(uint64_t n) { return next() % n; }
  // Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller).
  double normal() {
    const double u1 = 1.0 - uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

template <class T>
void shuffle(std::vector<T>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<std::size_t>(rng.below(i))]);
  }
}

}  // namespace training
