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
#include <cstdlib>
#include <cstring>
#include <memory>
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

// Copies an nr x nc tile of items of `size` bytes at src (row_stride between rows, col_stride
// between columns) into dst, row-major with rows `pitch` items apart. Each column is read whole
// (along the source's fast axis: its cache lines are used once and entirely); the column
// kPrefetch ahead is prefetched, since columns lie a large stride apart where the hardware
// prefetcher does not follow.
template <class U>
void gather_tile_as(char* dst, const char* src, int64_t nr, int64_t nc, int64_t row_stride,
                    int64_t col_stride, int64_t pitch) {
  constexpr int64_t kPrefetch = 8;
  U* __restrict d = reinterpret_cast<U*>(dst);
  const int64_t last = (nr - 1) * row_stride;
  for (int64_t c = 0; c < nc; ++c) {
    const char* s = src + c * col_stride;
    if (c + kPrefetch < nc) {
      __builtin_prefetch(s + kPrefetch * col_stride);
      __builtin_prefetch(s + kPrefetch * col_stride + last);
    }
    for (int64_t r = 0; r < nr; ++r) std::memcpy(&d[r * pitch + c], s + r * row_stride, sizeof(U));
  }
}
inline void gather_tile(int64_t size, char* dst, const char* src, int64_t nr, int64_t nc,
                        int64_t row_stride, int64_t col_stride, int64_t pitch) {
  switch (size) {
    case 1:
      return gather_tile_as<uint8_t>(dst, src, nr, nc, row_stride, col_stride, pitch);
    case 2:
      return gather_tile_as<uint16_t>(dst, src, nr, nc, row_stride, col_stride, pitch);
    case 4:
      return gather_tile_as<uint32_t>(dst, src, nr, nc, row_stride, col_stride, pitch);
    default:
      return gather_tile_as<uint64_t>(dst, src, nr, nc, row_stride, col_stride, pitch);
  }
}

// Elementwise traversal in a cache-friendly order: calls f(ptrs, n, inner_strides) once for every
// element of the layout, in an unspecified order, so only for kernels whose elements are
// independent (elementwise ops and copies; never reductions, whose rounding depends on order).
// item[k] is operand k's element size. When an input walks the inner axis with a stride of more
// than a cache line while another axis is its fastest (a transposed or permuted view next to a
// contiguous output), row-major order would touch a new cache line, and often a new page, per
// element of that input. Then that axis and the inner axis are walked in tiles of kTileRows x
// kTileCols: the strided input is gathered into a contiguous scratch tile reading whole cache
// lines along its fast axis, and the kernel runs on unit-stride rows of kTileCols elements (its
// vectorised path) while the other operands stream through rows of the tile. Otherwise this is
// run_chunked over for_each_run. opts.between_chunks runs between pieces of about
// opts.chunk_elements elements.
template <int N, class F>
void for_each_run_blocked(const StridedLayout<N>& layout, const std::array<char*, N>& base,
                          const std::array<int64_t, N>& item, const KernelOptions& opts, F&& f) {
  constexpr int64_t kTileRows = 32;   // along the fast axis: 128 bytes of 4-byte items
  constexpr int64_t kTileCols = 256;  // along the inner axis: long unit-stride runs
  constexpr int64_t kLine = 64;
  const auto nd = static_cast<int64_t>(layout.shape.size());
  int64_t fast = -1;  // the axis to tile together with the inner axis
  for (int k = 0; k < N && nd >= 2 && layout.numel > 0 && fast < 0; ++k) {
    int64_t best = std::abs(layout.strides[k][nd - 1]);
    if (best <= kLine) continue;
    for (int64_t d = 0; d < nd - 1; ++d) {
      const int64_t s = std::abs(layout.strides[k][d]);
      if (s != 0 && s < best) {
        best = s;
        fast = d;
      }
    }
  }
  if (fast < 0) {
    run_chunked(layout.numel, opts,
                [&](int64_t lo, int64_t hi) { for_each_run<N>(layout, base, lo, hi, f); });
    return;
  }
  // Move axis `fast` next to the inner axis (the order of elementwise work is free).
  StridedLayout<N> L = layout;
  auto move_axis = [&](std::vector<int64_t>& v) {
    const int64_t x = v[static_cast<size_t>(fast)];
    v.erase(v.begin() + fast);
    v.insert(v.end() - 1, x);
  };
  move_axis(L.shape);
  for (int k = 0; k < N; ++k) move_axis(L.strides[k]);
  const int64_t rows = L.shape[nd - 2];
  const int64_t cols = L.shape[nd - 1];
  const int64_t row_tiles = (rows + kTileRows - 1) / kTileRows;
  const int64_t col_tiles = (cols + kTileCols - 1) / kTileCols;
  const int64_t per_outer = row_tiles * col_tiles;
  const int64_t tiles = L.numel / (rows * cols) * per_outer;
  std::array<int64_t, N> row_stride;
  std::array<int64_t, N> inner_stride;
  for (int k = 0; k < N; ++k) {
    row_stride[k] = L.strides[k][nd - 2];
    inner_stride[k] = L.strides[k][nd - 1];
  }
  // Inputs (operands 1..N-1) that stride across lines along the inner axis are first gathered
  // tile by tile into a contiguous scratch tile (read along their fast axis), so the kernel sees
  // unit-stride runs and takes its vectorised path. The output (operand 0) is written in place.
  constexpr int64_t kScratch = kTileRows * kTileCols * 8;  // bytes per gathered operand
  std::array<bool, N> gather{};
  std::array<int64_t, N> run_stride = inner_stride;
  bool any_gather = false;
  for (int k = 1; k < N; ++k) {
    gather[k] = std::abs(inner_stride[k]) > kLine &&
                (item[k] == 1 || item[k] == 2 || item[k] == 4 || item[k] == 8);
    if (gather[k]) run_stride[k] = item[k];
    any_gather = any_gather || gather[k];
  }
  const std::unique_ptr<char[]> scratch(any_gather ? new char[N * kScratch] : nullptr);
  KernelOptions tile_opts;
  tile_opts.between_chunks = opts.between_chunks;
  tile_opts.chunk_elements = std::max<int64_t>(1, opts.chunk_elements / (kTileRows * kTileCols));
  run_chunked(tiles, tile_opts, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      int64_t outer = t / per_outer;
      const int64_t tr = t % per_outer / col_tiles;
      const int64_t tc = t % per_outer % col_tiles;
      std::array<char*, N> p = base;
      for (int64_t d = nd - 3; d >= 0; --d) {
        const int64_t i = outer % L.shape[d];
        outer /= L.shape[d];
        for (int k = 0; k < N; ++k) p[k] += i * L.strides[k][d];
      }
      for (int k = 0; k < N; ++k) {
        p[k] += tr * kTileRows * row_stride[k] + tc * kTileCols * inner_stride[k];
      }
      const int64_t nr = std::min(kTileRows, rows - tr * kTileRows);
      const int64_t nc = std::min(kTileCols, cols - tc * kTileCols);
      for (int k = 1; k < N; ++k) {
        if (gather[k]) {
          gather_tile(item[k], scratch.get() + k * kScratch, p[k], nr, nc, row_stride[k],
                      inner_stride[k], kTileCols);
        }
      }
      for (int64_t r = 0; r < nr; ++r) {
        std::array<char*, N> q = p;
        for (int k = 1; k < N; ++k) {
          if (gather[k]) q[k] = scratch.get() + k * kScratch + r * kTileCols * item[k];
        }
        f(q, nc, run_stride);
        for (int k = 0; k < N; ++k) p[k] += row_stride[k];
      }
    }
  });
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
