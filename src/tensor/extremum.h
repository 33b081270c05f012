// extremum.h — vectorised max/min and argmax over contiguous runs, with NumPy's NaN semantics
// (private to reduce.cc).
//
//   float m = detail::extremum_run<true>(x, n, -INFINITY);   // max of x[0, n), NaN if any is NaN
//   int64_t i = detail::argmax_run(x, n);                     // first NaN, else first maximum
//
// A NaN-propagating compare-and-select ((x > m || x != x) ? x : m) does not vectorise: the
// compiler sees a select on two conditions and falls back to scalar code. These loops use the
// compiler's generic vector types (GCC/Clang `vector_size`, 16 bytes, so baseline x86-64 SSE2
// and NEON alike) and split the work: each vector lane keeps a plain running maximum
// (v > m ? v : m, one maxps) and, for floating types, a separate mask ORs together `v != v`; four
// vectors per step keep four independent dependency chains. A NaN found anywhere makes the result
// NaN (the run's first NaN, found by a scalar rescan of the run, which only happens when a NaN is
// present). Which zero is returned when the extremum is ±0 is not specified (NumPy's own SIMD
// loops give either, depending on position); -0.0 == +0.0 as for every comparison.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace chanflow::detail {

// Element types the vector loops handle (bool and float16 take the scalar paths).
template <class T>
constexpr bool kVectorExtremum =
    std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && (sizeof(T) <= 8);

template <class T>
struct Vec16 {
  typedef T type __attribute__((vector_size(16)));  // NOLINT(modernize-use-using): attribute
};

template <class T>
inline bool nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

// x strictly better than best: x > best for max, x < best for min (false when either is NaN).
template <bool kMax, class T>
inline bool strictly_better(T x, T best) {
  return kMax ? x > best : x < best;
}

// The NaN-propagating combine: once acc is NaN it stays NaN; a NaN x replaces acc.
template <bool kMax, class T>
inline T extremum_combine(T acc, T x) {
  return (strictly_better<kMax>(x, acc) || nan_value(x)) ? x : acc;
}

// Index of the first NaN in x[0, n), or -1.
template <class T>
int64_t first_nan(const T* x, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < n; ++i) {
      if (x[i] != x[i]) return i;
    }
  }
  return -1;
}

template <class V>
inline V load_vec(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <class M>
inline bool any_lane(M m) {
  uint64_t w[2];
  static_assert(sizeof(M) == sizeof(w));
  std::memcpy(w, &m, sizeof(w));
  return (w[0] | w[1]) != 0;
}

// The extremum (max when kMax, else min) of acc and x[0, n), NaN-propagating. Blocks of four
// 16-byte vectors; the tail (< 4 vectors) is scalar.
template <bool kMax, class T>
T extremum_run(const T* x, int64_t n, T acc) {
  static_assert(kVectorExtremum<T>);
  using V = typename Vec16<T>::type;
  constexpr int64_t kW = 16 / sizeof(T);
  constexpr int64_t kBlock = 4 * kW;
  int64_t i = 0;
  if (n >= kBlock) {
    V m0 = load_vec<V>(x);
    V m1 = load_vec<V>(x + kW);
    V m2 = load_vec<V>(x + 2 * kW);
    V m3 = load_vec<V>(x + 3 * kW);
    using M = decltype(m0 != m0);
    M bad = (m0 != m0) | (m1 != m1) | (m2 != m2) | (m3 != m3);
    for (i = kBlock; i + kBlock <= n; i += kBlock) {
      const V v0 = load_vec<V>(x + i);
      const V v1 = load_vec<V>(x + i + kW);
      const V v2 = load_vec<V>(x + i + 2 * kW);
      const V v3 = load_vec<V>(x + i + 3 * kW);
      if constexpr (kMax) {
        m0 = v0 > m0 ? v0 : m0;
        m1 = v1 > m1 ? v1 : m1;
        m2 = v2 > m2 ? v2 : m2;
        m3 = v3 > m3 ? v3 : m3;
      } else {
        m0 = v0 < m0 ? v0 : m0;
        m1 = v1 < m1 ? v1 : m1;
        m2 = v2 < m2 ? v2 : m2;
        m3 = v3 < m3 ? v3 : m3;
      }
      if constexpr (std::is_floating_point_v<T>) {
        bad |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);
      }
    }
    if (std::is_floating_point_v<T> && any_lane(bad)) {
      // A NaN in the vector part: the answer is NaN (acc's if acc is one, else the first).
      return nan_value(acc) ? acc : x[first_nan(x, i)];
    }
    // No NaN among the vector lanes: plain max/min of the lanes, then the NaN-aware combine.
    T r = m0[0];
    for (int64_t k = 0; k < kW; ++k) {
      for (const T v : {m0[k], m1[k], m2[k], m3[k]}) {
        if (strictly_better<kMax>(v, r)) r = v;
      }
    }
    acc = extremum_combine<kMax>(acc, r);
  }
  for (; i < n; ++i) acc = extremum_combine<kMax>(acc, x[i]);
  return acc;
}

// acc[i] = extremum_combine(acc[i], x[i]) for i in [0, n): a reduction over an outer axis.
template <bool kMax, class T>
void extremum_rows(T* __restrict acc, const T* __restrict x, int64_t n) {
  static_assert(kVectorExtremum<T>);
  using V = typename Vec16<T>::type;
  constexpr int64_t kW = 16 / sizeof(T);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const V v = load_vec<V>(x + i);
    const V a = load_vec<V>(acc + i);
    V r;
    if constexpr (std::is_floating_point_v<T>) {
      r = ((kMax ? v > a : v < a) | (v != v)) ? v : a;
    } else {
      r = (kMax ? v > a : v < a) ? v : a;
    }
    std::memcpy(acc + i, &r, sizeof(V));
  }
  for (; i < n; ++i) acc[i] = extremum_combine<kMax>(acc[i], x[i]);
}

// Index of the first element of x[0, n) equal to `value` (not NaN), or -1; vectorised compares.
template <class T>
int64_t find_first_equal(const T* x, int64_t n, T value) {
  using V = typename Vec16<T>::type;
  constexpr int64_t kW = 16 / sizeof(T);
  int64_t i = 0;
  V b;
  for (int64_t k = 0; k < kW; ++k) b[k] = value;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    const auto eq = (load_vec<V>(x + i) == b) | (load_vec<V>(x + i + kW) == b) |
                    (load_vec<V>(x + i + 2 * kW) == b) | (load_vec<V>(x + i + 3 * kW) == b);
    if (any_lane(eq)) break;
  }
  for (; i < n; ++i) {
    if (x[i] == value) return i;
  }
  return -1;
}

// NumPy's argmax of x[0, n), n >= 1: the index of the first NaN if there is one, else the first
// index of the maximum. One vectorised pass over chunks of kChunk elements keeps the first chunk
// whose maximum is strictly greater than every earlier chunk's (so ties go to the earlier chunk);
// then that one chunk (16 KiB, still cached) is searched for the first element equal to its
// maximum.
template <class T>
int64_t argmax_run(const T* x, int64_t n) {
  static_assert(kVectorExtremum<T>);
  constexpr int64_t kChunk = 16384 / sizeof(T);  // 16 KiB: the rescan reads from L1
  T best = x[0];
  int64_t best_chunk = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t len = n - c < kChunk ? n - c : kChunk;
    const T m = extremum_run<true>(x + c, len, x[c]);
    if (nan_value(m)) return c + first_nan(x + c, len);
    if (c == 0 || m > best) {
      best = m;
      best_chunk = c;
    }
  }
  const int64_t len = n - best_chunk < kChunk ? n - best_chunk : kChunk;
  return best_chunk + find_first_equal(x + best_chunk, len, best);
}

}  // namespace chanflow::detail
