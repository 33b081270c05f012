// strided.h — private: walking N operands of one shape with arbitrary (byte) strides.
//
// The layout is simplified first (size-1 axes dropped, axes that are contiguous for every operand
// merged), so a contiguous or broadcast-scalar case becomes one long inner run that a kernel can
// hand to a vectorised loop. for_each_run visits the elements [begin, end) of the row-major order
// as runs along the innermost axis.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "chanflow/tensor/ops.h"

namespace chanflow::detail {

template <int N>
struct StridedLayout {
  std::vector<int64_t> shape;                   // outermost first; empty = one element
  std::array<std::vector<int64_t>, N> strides;  // bytes, per operand, per axis
  int64_t numel = 1;
};

template <int N>
StridedLayout<N> make_layout(const Shape& shape,
                             const std::array<std::vector<int64_t>, N>& byte_strides) {
  StridedLayout<N> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    out.numel *= shape[d];
    if (shape[d] == 1) continue;
    const bool mergeable = !out.shape.empty() && [&] {
      for (int k = 0; k < N; ++k) {
        if (out.strides[k].back() != byte_strides[k][d] * shape[d]) return false;
      }
      return true;
    }();
    if (mergeable) {
      out.shape.back() *= shape[d];
      for (int k = 0; k < N; ++k) out.strides[k].back() = byte_strides[k][d];
    } else {
      out.shape.push_back(shape[d]);
      for (int k = 0; k < N; ++k) out.strides[k].push_back(byte_strides[k][d]);
    }
  }
  return out;
}

// Calls f(ptrs, n, inner_strides) for each run of consecutive inner-axis elements in [begin, end).
template <int N, class F>
void for_each_run(const StridedLayout<N>& L, const std::array<char*, N>& base, int64_t begin,
                  int64_t end, F&& f) {
  if (begin >= end) return;
  const auto nd = static_cast<int64_t>(L.shape.size());
  if (nd == 0) {
    std::array<int64_t, N> zero{};
    f(base, int64_t{1}, zero);
    return;
  }
  const int64_t inner = L.shape[nd - 1];
  std::array<int64_t, N> inner_stride;
  for (int k = 0; k < N; ++k) inner_stride[k] = L.strides[k][nd - 1];
  // Outer multi-index of `begin`.
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  int64_t rest = begin / inner;
  int64_t off = begin % inner;
  for (int64_t d = nd - 2; d >= 0; --d) {
    idx[d] = rest % L.shape[d];
    rest /= L.shape[d];
  }
  std::array<char*, N> row;
  for (int k = 0; k < N; ++k) {
    row[k] = base[k];
    for (int64_t d = 0; d < nd - 1; ++d) row[k] += idx[d] * L.strides[k][d];
  }
  int64_t cur = begin;
  while (cur < end) {
    const int64_t n = std::min(inner - off, end - cur);
    std::array<char*, N> p;
    for (int k = 0; k < N; ++k) p[k] = row[k] + off * inner_stride[k];
    f(p, n, inner_stride);
    cur += n;
    off = 0;
    if (cur >= end) break;
    // Odometer step over the outer axes.
    for (int64_t d = nd - 2; d >= 0; --d) {
      if (++idx[d] < L.shape[d]) {
        for (int k = 0; k < N; ++k) row[k] += L.strides[k][d];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < N; ++k) row[k] -= (L.shape[d] - 1) * L.strides[k][d];
    }
  }
}

// Runs f(begin, end) over [0, total) in pieces of opts.chunk_elements, calling
// opts.between_chunks between pieces (never before the first).
template <class F>
void run_chunked(int64_t total, const KernelOptions& opts, F&& f) {
  const int64_t chunk = std::max<int64_t>(1, opts.chunk_elements);
  if (!opts.between_chunks || total <= chunk) {
    f(int64_t{0}, total);
    return;
  }
  for (int64_t b = 0; b < total; b += chunk) {
    if (b != 0) opts.between_chunks();
    f(b, std::min(total, b + chunk));
  }
}

// Byte strides of tensor t broadcast to `out_shape` (0 along broadcast axes).
// A tensor with no elements gets all-zero strides: its element strides are never dereferenced and
// may be huge (a transposed empty tensor of a large shape), so scaling them could overflow.
inline std::vector<int64_t> broadcast_byte_strides(const Tensor& t, const Shape& out_shape) {
  const auto nd = static_cast<int64_t>(out_shape.size());
  const int64_t td = t.ndim();
  const int64_t item = t.itemsize();
  std::vector<int64_t> s(static_cast<size_t>(nd), 0);
  if (t.numel() == 0) return s;
  for (int64_t i = 0; i < td; ++i) {
    const int64_t od = nd - td + i;
    s[od] = t.shape()[i] == 1 ? 0 : t.strides()[i] * item;
  }
  return s;
}

}  // namespace chanflow::detail
