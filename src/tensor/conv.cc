// conv.cc — conv2d and its input and filter gradients (conv.h) as im2col / col2im around
// OpenBLAS GEMM.
//
// For one sample and group, im2col lays the input patches out as a K x P matrix (K = C/groups *
// KH * KW rows, one column per output pixel), so that
//   forward:      out (Mg x P)  = W_g (Mg x K) * col (K x P)
//   grad input:   col (K x P)   = W_g^T * grad_out (Mg x P), then col2im adds col back to pixels
//   grad filter:  gW_g (Mg x K) += grad_out (Mg x P) * col^T
// The work is cut into tiles of (samples, group, output pixels). When one sample's GEMM is narrow
// (few output pixels, as in LeNet's second layer: 8 x 8), a tile takes several samples side by
// side as one wider GEMM (their columns concatenated; about 10 % faster there than one sample per
// GEMM, while a GEMM over the whole batch was no faster and needs 8 MiB of workspace); when
// one sample's patch matrix is large, a tile takes a range of its pixels, which bounds the
// workspace (kMaxWorkspaceBytes) and gives between_chunks its granularity. A 1x1 kernel with
// stride 1 and no padding needs no im2col: the input plane already is the patch matrix.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "chanflow/tensor/conv.h"
#include "internal.h"

namespace chanflow {

namespace {

// Workspace bound (the patch matrix plus, when samples are batched, the gathered output rows).
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 20;
// A tile batches samples until its GEMM has at least this many columns.
constexpr int64_t kTargetColumns = 256;

int64_t checked_mul(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) {
    CHANFLOW_THROW(ShapeError) << op << ": extents overflow int64 (" << a << " * " << b << ")";
  }
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* op) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) {
    CHANFLOW_THROW(ShapeError) << op << ": extents overflow int64 (" << a << " + " << b << ")";
  }
  return r;
}

void check_params(const Conv2dParams& p, const char* op) {
  for (int i = 0; i < 2; ++i) {
    const char* axis = i == 0 ? "height" : "width";
    const auto u = static_cast<size_t>(i);
    if (p.strides[u] < 1) {
      CHANFLOW_THROW(ShapeError) << op << ": strides[" << i << "] (" << axis
                                 << ") must be >= 1, got " << p.strides[u];
    }
    if (p.dilations[u] < 1) {
      CHANFLOW_THROW(ShapeError) << op << ": dilations[" << i << "] (" << axis
                                 << ") must be >= 1, got " << p.dilations[u];
    }
    if (p.paddings[u] < 0) {
      CHANFLOW_THROW(ShapeError) << op << ": paddings[" << i << "] (" << axis
                                 << ") must be >= 0, got " << p.paddings[u];
    }
  }
  if (p.groups < 1) CHANFLOW_THROW(ShapeError) << op << ": groups must be >= 1, got " << p.groups;
}

void check_extents(const Shape& s, const char* op, const char* what) {
  for (int64_t e : s) {
    if (e < -1) {
      CHANFLOW_THROW(ShapeError) << op << ": " << what << " shape " << shape_to_string(s)
                                 << " has a negative extent (only -1, unknown, is allowed)";
    }
  }
}

// One output extent (-1 when the input or kernel extent is unknown).
int64_t out_extent(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, const char* op,
                   const char* axis, const Shape& input, const Shape& filter) {
  if (in < 0 || k < 0) return -1;
  if (k < 1) {
    CHANFLOW_THROW(ShapeError) << op << ": filter shape " << shape_to_string(filter)
                               << " has an empty kernel " << axis;
  }
  const int64_t eff = checked_add(checked_mul(dil, k - 1, op), 1, op);
  const int64_t padded = checked_add(in, checked_mul(pad, 2, op), op);
  if (padded < eff) {
    CHANFLOW_THROW(ShapeError) << op << ": the kernel " << axis << " " << eff
                               << " (dilation included) exceeds the padded input " << axis << " "
                               << padded << " (input shape " << shape_to_string(input)
                               << ", filter shape " << shape_to_string(filter) << ")";
  }
  return (padded - eff) / stride + 1;
}

Shape output_shape_impl(const Shape& input, const Shape& filter, const Conv2dParams& p,
                        const char* op) {
  if (input.size() != 4) {
    CHANFLOW_THROW(ShapeError) << op << ": input must be 4-D (N, C, H, W), got shape "
                               << shape_to_string(input);
  }
  if (filter.size() != 4) {
    CHANFLOW_THROW(ShapeError) << op << ": filter must be 4-D (M, C / groups, KH, KW), got shape "
                               << shape_to_string(filter);
  }
  check_extents(input, op, "input");
  check_extents(filter, op, "filter");
  check_params(p, op);
  const int64_t c = input[1];
  const int64_t m = filter[0];
  const int64_t fc = filter[1];
  if (c >= 0 && c % p.groups != 0) {
    CHANFLOW_THROW(ShapeError) << op << ": input channels " << c << " (input shape "
                               << shape_to_string(input) << ") are not divisible by groups "
                               << p.groups;
  }
  if (m >= 0 && m % p.groups != 0) {
    CHANFLOW_THROW(ShapeError) << op << ": filter output channels " << m << " (filter shape "
                               << shape_to_string(filter) << ") are not divisible by groups "
                               << p.groups;
  }
  if (c >= 0 && fc >= 0 && fc != c / p.groups) {
    CHANFLOW_THROW(ShapeError) << op << ": filter channels " << fc << " (filter shape "
                               << shape_to_string(filter) << ") != input channels / groups = " << c
                               << " / " << p.groups << " (input shape " << shape_to_string(input)
                               << ")";
  }
  const int64_t oh = out_extent(input[2], filter[2], p.paddings[0], p.strides[0], p.dilations[0],
                                op, "height", input, filter);
  const int64_t ow = out_extent(input[3], filter[3], p.paddings[1], p.strides[1], p.dilations[1],
                                op, "width", input, filter);
  return {input[0], m, oh, ow};
}

void check_float(const Tensor& t, const char* op, const char* arg) {
  detail::require_defined(t, op);
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " has dtype " << dtype_name(t.dtype())
                              << "; only float32 and float64 are supported";
  }
}

void check_same_dtype(const Tensor& t, const Tensor& ref, const char* op, const char* arg,
                      const char* ref_arg) {
  if (t.dtype() != ref.dtype()) {
    CHANFLOW_THROW(TypeError) << op << ": " << arg << " has dtype " << dtype_name(t.dtype())
                              << " but " << ref_arg << " has " << dtype_name(ref.dtype());
  }
}

void check_known(const Shape& s, const char* op, const char* what) {
  for (int64_t e : s) {
    if (e < 0) {
      CHANFLOW_THROW(ShapeError) << op << ": " << what << " " << shape_to_string(s)
                                 << " must be fully known";
    }
  }
}

struct Geom {
  int64_t n, c, h, w;
  int64_t m, kh, kw;
  int64_t oh, ow;
  int64_t groups, cg, mg;
  int64_t sh, sw, ph, pw, dh, dw;

  Geom(const Shape& in, const Shape& f, const Shape& out, const Conv2dParams& p)
      : n(in[0]),
        c(in[1]),
        h(in[2]),
        w(in[3]),
        m(f[0]),
        kh(f[2]),
        kw(f[3]),
        oh(out[2]),
        ow(out[3]),
        groups(p.groups),
        cg(in[1] / p.groups),
        mg(f[0] / p.groups),
        sh(p.strides[0]),
        sw(p.strides[1]),
        ph(p.paddings[0]),
        pw(p.paddings[1]),
        dh(p.dilations[0]),
        dw(p.dilations[1]) {}

  int64_t k() const { return cg * kh * kw; }
  int64_t ohw() const { return oh * ow; }
  int64_t hw() const { return h * w; }
  // The input plane is the patch matrix already.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

// How the work is cut: `batch` samples side by side when `pixels` == all output pixels, else one
// sample and `pixels` output pixels per tile.
struct Tiling {
  int64_t batch = 1;
  int64_t pixels = 1;
};

Tiling plan_tiles(const Geom& g, int64_t itemsize, const KernelOptions& o, const char* op) {
  const int64_t k = g.k();
  const int64_t ohw = g.ohw();
  const int64_t macs_per_pixel = std::max<int64_t>(1, g.mg * k);
  const bool chunked = static_cast<bool>(o.between_chunks);
  const int64_t budget = std::max<int64_t>(1, o.chunk_elements);
  Tiling t;
  const int64_t col_bytes_per_pixel = std::max<int64_t>(1, k * itemsize);
  // Pixels per tile: all of them unless the workspace or the chunk asks for fewer.
  int64_t pixels = ohw;
  if (!g.pointwise()) {
    pixels = std::min(pixels, std::max<int64_t>(64, kMaxWorkspaceBytes / col_bytes_per_pixel));
  }
  if (chunked) pixels = std::min(pixels, std::max<int64_t>(1, budget / macs_per_pixel));
  t.pixels = std::max<int64_t>(1, pixels);
  if (t.pixels == ohw && !g.pointwise() && ohw > 0) {
    const int64_t want = (kTargetColumns + ohw - 1) / ohw;
    const int64_t by_workspace =
        kMaxWorkspaceBytes / std::max<int64_t>(1, (k + g.mg) * ohw * itemsize);
    int64_t b = std::min({want, by_workspace, g.n});
    if (chunked) b = std::min(b, budget / std::max<int64_t>(1, macs_per_pixel * ohw));
    t.batch = std::max<int64_t>(1, b);
  }
  if (k > INT_MAX || g.mg > INT_MAX || checked_mul(t.batch, t.pixels, op) > INT_MAX ||
      ohw > INT_MAX || g.hw() > INT_MAX) {
    CHANFLOW_THROW(ShapeError) << op << ": extents too large for BLAS (int) GEMM";
  }
  return t;
}

// Chunker (internal.h) calls between_chunks before a piece of work (a tile, an output row)
// that would take the work since its last call past one chunk.
using detail::Chunker;

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const auto cta = ta ? CblasTrans : CblasNoTrans;
  const auto ctb = tb ? CblasTrans : CblasNoTrans;
  const auto i = [](int64_t v) { return static_cast<int>(std::max<int64_t>(v, 1)); };
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, cta, ctb, i(m), i(n), i(k), 1.0f, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  } else {
    cblas_dgemm(CblasRowMajor, cta, ctb, i(m), i(n), i(k), 1.0, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  }
}

// Calls f(dst_offset, seg, ih, iw0, lo, hi) for each (output row segment) of pixels
// [p0, p0 + np) for kernel tap (kh, kw): the segment's `seg` columns start at dst_offset; the
// input row is ih (outside [0, H) when the segment lies in the padding) and column j reads input
// column iw0 + j * sw, valid for j in [lo, hi).
template <class F>
void for_each_segment(const Geom& g, int64_t tap_h, int64_t tap_w, int64_t p0, int64_t np, F&& f) {
  const int64_t end = p0 + np;
  int64_t oh = p0 / g.ow;
  int64_t ow = p0 % g.ow;
  // Valid columns of a segment of `seg` pixels from output column `ow`; divisions only when the
  // stride is not 1 and the segment is not a whole row (whose range is the same for every row).
  const auto valid = [&](int64_t ow0, int64_t seg, int64_t* lo, int64_t* hi) {
    const int64_t iw0 = ow0 * g.sw - g.pw + tap_w * g.dw;
    if (g.sw == 1) {
      *lo = std::clamp<int64_t>(-iw0, 0, seg);
      *hi = std::clamp<int64_t>(g.w - iw0, *lo, seg);
    } else {
      *lo = std::min(iw0 >= 0 ? 0 : (-iw0 + g.sw - 1) / g.sw, seg);
      *hi = std::clamp<int64_t>(g.w - 1 - iw0 >= 0 ? (g.w - 1 - iw0) / g.sw + 1 : 0, *lo, seg);
    }
  };
  int64_t row_lo = 0;
  int64_t row_hi = 0;
  valid(0, g.ow, &row_lo, &row_hi);
  const int64_t row_iw0 = -g.pw + tap_w * g.dw;
  int64_t off = 0;
  for (int64_t p = p0; p < end;) {
    const int64_t seg = std::min(g.ow - ow, end - p);
    const int64_t ih = oh * g.sh - g.ph + tap_h * g.dh;
    int64_t lo = 0;
    int64_t hi = 0;
    int64_t iw0 = row_iw0;
    if (ih >= 0 && ih < g.h) {
      if (seg == g.ow) {
        lo = row_lo;
        hi = row_hi;
      } else {
        iw0 = ow * g.sw + row_iw0;
        valid(ow, seg, &lo, &hi);
      }
    }
    f(off, seg, ih, iw0, lo, hi);
    off += seg;
    p += seg;
    ow = 0;
    ++oh;
  }
}

// d[0, n) = s[0, n): fixed-size block copies the compiler inlines (rows are often a few elements,
// where a memcpy call costs more than the copy).
template <class T>
inline void copy_run(T* __restrict d, const T* __restrict s, int64_t n) {
  constexpr int64_t kBlock = 32 / static_cast<int64_t>(sizeof(T));
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) std::memcpy(d + j, s + j, 32);
  for (; j < n; ++j) d[j] = s[j];
}

// im2col for whole output rows [oh0, oh0 + rows): every row of a tap has the same valid column
// range, so the inner loop is a plain copy (the common case, kept free of per-segment logic).
template <class T>
void im2col_rows(const T* x, const Geom& geom, int64_t oh0, int64_t rows, T* col, int64_t ld) {
  // Locals: the stores through T* could alias Geom's fields, which would reload them every row.
  const int64_t cg = geom.cg, kh = geom.kh, kw = geom.kw, h = geom.h, w = geom.w, ow = geom.ow;
  const int64_t sh = geom.sh, sw = geom.sw, ph = geom.ph, pw = geom.pw, dh = geom.dh, dw = geom.dw,
                hw = geom.hw();
  for (int64_t c = 0; c < cg; ++c) {
    const T* plane = x + c * hw;
    for (int64_t th = 0; th < kh; ++th) {
      for (int64_t tw = 0; tw < kw; ++tw) {
        T* d = col + ((c * kh + th) * kw + tw) * ld;
        const int64_t iw0 = -pw + tw * dw;
        int64_t lo = 0;
        int64_t hi = 0;
        if (sw == 1) {
          lo = std::clamp<int64_t>(-iw0, 0, ow);
          hi = std::clamp<int64_t>(w - iw0, lo, ow);
        } else {
          lo = std::min(iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw, ow);
          hi = std::clamp<int64_t>(w - 1 - iw0 >= 0 ? (w - 1 - iw0) / sw + 1 : 0, lo, ow);
        }
        // Output rows [r0, r1) read input rows inside the plane; the others lie in the padding.
        const int64_t base = -ph + th * dh;
        const int64_t r0 =
            std::clamp<int64_t>(base >= 0 ? 0 : (-base + sh - 1) / sh, oh0, oh0 + rows);
        const int64_t r1 =
            std::clamp<int64_t>(h - 1 - base >= 0 ? (h - 1 - base) / sh + 1 : 0, r0, oh0 + rows);
        for (int64_t j = 0; j < (r0 - oh0) * ow; ++j) d[j] = T{0};
        d += (r0 - oh0) * ow;
        const T* s = plane + (r0 * sh + base) * w + iw0;
        const int64_t step = sh * w;
        if (sw == 1 && lo == 0 && hi == ow) {
          for (int64_t oh = r0; oh < r1; ++oh, d += ow, s += step) copy_run(d, s, ow);
        } else {
          for (int64_t oh = r0; oh < r1; ++oh, d += ow, s += step) {
            for (int64_t j = 0; j < lo; ++j) d[j] = T{0};
            if (sw == 1) {
              copy_run(d + lo, s + lo, hi - lo);
            } else {
              for (int64_t j = lo; j < hi; ++j) d[j] = s[j * sw];
            }
            for (int64_t j = hi; j < ow; ++j) d[j] = T{0};
          }
        }
        for (int64_t j = 0; j < (oh0 + rows - r1) * ow; ++j) d[j] = T{0};
      }
    }
  }
}

// Patch matrix of one sample's group (x: its first channel plane) for pixels [p0, p0 + np):
// col row (c * KH + kh) * KW + kw, column j at col + row * ld + j.
template <class T>
void im2col(const T* x, const Geom& g, int64_t p0, int64_t np, T* col, int64_t ld) {
  if (p0 % g.ow == 0 && np % g.ow == 0) {
    im2col_rows(x, g, p0 / g.ow, np / g.ow, col, ld);
    return;
  }
  for (int64_t c = 0; c < g.cg; ++c) {
    const T* plane = x + c * g.hw();
    for (int64_t th = 0; th < g.kh; ++th) {
      for (int64_t tw = 0; tw < g.kw; ++tw) {
        T* dst = col + ((c * g.kh + th) * g.kw + tw) * ld;
        for_each_segment(
            g, th, tw, p0, np,
            [&](int64_t off, int64_t seg, int64_t ih, int64_t iw0, int64_t lo, int64_t hi) {
              T* d = dst + off;
              for (int64_t j = 0; j < lo; ++j) d[j] = T{0};
              if (hi > lo) {
                const T* s = plane + ih * g.w + iw0;
                if (g.sw == 1) {
                  copy_run(d + lo, s + lo, hi - lo);
                } else {
                  for (int64_t j = lo; j < hi; ++j) d[j] = s[j * g.sw];
                }
              }
              for (int64_t j = hi; j < seg; ++j) d[j] = T{0};
            });
      }
    }
  }
}

// col2im for whole output rows [oh0, oh0 + rows) (see im2col_rows).
template <class T>
void col2im_rows(const T* col, int64_t ld, const Geom& geom, int64_t oh0, int64_t rows, T* x) {
  const int64_t cg = geom.cg, kh = geom.kh, kw = geom.kw, h = geom.h, w = geom.w, ow = geom.ow;
  const int64_t sh = geom.sh, sw = geom.sw, ph = geom.ph, pw = geom.pw, dh = geom.dh, dw = geom.dw,
                hw = geom.hw();
  for (int64_t c = 0; c < cg; ++c) {
    T* plane = x + c * hw;
    for (int64_t th = 0; th < kh; ++th) {
      for (int64_t tw = 0; tw < kw; ++tw) {
        const T* src = col + ((c * kh + th) * kw + tw) * ld;
        const int64_t iw0 = -pw + tw * dw;
        int64_t lo = 0;
        int64_t hi = 0;
        if (sw == 1) {
          lo = std::clamp<int64_t>(-iw0, 0, ow);
          hi = std::clamp<int64_t>(w - iw0, lo, ow);
        } else {
          lo = std::min(iw0 >= 0 ? 0 : (-iw0 + sw - 1) / sw, ow);
          hi = std::clamp<int64_t>(w - 1 - iw0 >= 0 ? (w - 1 - iw0) / sw + 1 : 0, lo, ow);
        }
        const int64_t base = -ph + th * dh;
        const int64_t r0 =
            std::clamp<int64_t>(base >= 0 ? 0 : (-base + sh - 1) / sh, oh0, oh0 + rows);
        const int64_t r1 =
            std::clamp<int64_t>(h - 1 - base >= 0 ? (h - 1 - base) / sh + 1 : 0, r0, oh0 + rows);
        const T* s = src + (r0 - oh0) * ow;
        T* d = plane + (r0 * sh + base) * w + iw0;
        const int64_t step = sh * w;
        for (int64_t oh = r0; oh < r1; ++oh, s += ow, d += step) {
          const T* __restrict sr = s;
          T* __restrict dr = d;
          if (sw == 1) {
            for (int64_t j = lo; j < hi; ++j) dr[j] += sr[j];
          } else {
            for (int64_t j = lo; j < hi; ++j) dr[j * sw] += sr[j];
          }
        }
      }
    }
  }
}

// Adds a patch matrix (as im2col lays it out) back onto one sample's group of input planes.
template <class T>
void col2im(const T* col, int64_t ld, const Geom& g, int64_t p0, int64_t np, T* x) {
  if (p0 % g.ow == 0 && np % g.ow == 0) {
    col2im_rows(col, ld, g, p0 / g.ow, np / g.ow, x);
    return;
  }
  for (int64_t c = 0; c < g.cg; ++c) {
    T* plane = x + c * g.hw();
    for (int64_t th = 0; th < g.kh; ++th) {
      for (int64_t tw = 0; tw < g.kw; ++tw) {
        const T* src = col + ((c * g.kh + th) * g.kw + tw) * ld;
        for_each_segment(
            g, th, tw, p0, np,
            [&](int64_t off, int64_t /*seg*/, int64_t ih, int64_t iw0, int64_t lo, int64_t hi) {
              const T* __restrict s = src + off;
              T* __restrict d = plane + ih * g.w + iw0;
              if (g.sw == 1) {
                for (int64_t j = lo; j < hi; ++j) d[j] += s[j];
              } else {
                for (int64_t j = lo; j < hi; ++j) d[j * g.sw] += s[j];
              }
            });
      }
    }
  }
}

enum class Pass : uint8_t { kForward, kGradInput, kGradFilter };

// Runs one pass. `a` is the input (forward, grad filter) or grad_output (grad input); `wt` the
// filter (forward, grad input) or grad_output (grad filter); `res` the zero-filled (grad passes)
// or uninitialised (forward) result.
template <class T>
void run_pass(Pass pass, const Geom& g, const T* x, const T* w, const T* gout, T* res,
              const KernelOptions& o, const char* op) {
  const int64_t k = g.k();
  const int64_t ohw = g.ohw();
  const int64_t hw = g.hw();
  const Tiling t = plan_tiles(g, static_cast<int64_t>(sizeof(T)), o, op);
  const bool pw = g.pointwise();
  const DType dt = dtype_of<T>();
  // Workspace as tensors, so that a MemoryBudget in force charges them.
  Tensor col_t;
  Tensor rows_t;
  T* col = nullptr;
  T* rows = nullptr;
  if (!pw) {
    col_t = Tensor::empty({k * t.batch * t.pixels}, dt);
    col = col_t.data<T>();
  }
  if (t.batch > 1) {
    rows_t = Tensor::empty({g.mg * t.batch * ohw}, dt);
    rows = rows_t.data<T>();
  }
  detail::ensure_blas_initialized();
  Chunker chunker(o);
  for (int64_t n0 = 0; n0 < g.n; n0 += t.batch) {
    const int64_t nb = std::min(t.batch, g.n - n0);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      for (int64_t p0 = 0; p0 < ohw; p0 += t.pixels) {
        const int64_t np = std::min(t.pixels, ohw - p0);
        chunker.before(nb * g.mg * k * np);
        // Channel-plane offsets of sample n0's group in the input and output.
        const int64_t xin = (n0 * g.c + grp * g.cg) * hw;
        const int64_t xout = (n0 * g.m + grp * g.mg) * ohw;
        const int64_t ncols = nb * np;
        if (pass == Pass::kForward) {
          const T* wg = w + grp * g.mg * k;
          if (nb == 1) {
            const T* b = x + xin + p0;
            int64_t ldb = hw;
            if (!pw) {
              im2col(x + xin, g, p0, np, col, np);
              b = col;
              ldb = np;
            }
            gemm<T>(false, false, g.mg, np, k, wg, k, b, ldb, T{0}, res + xout + p0, ohw);
          } else {
            for (int64_t s = 0; s < nb; ++s) {
              im2col(x + xin + s * g.c * hw, g, 0, ohw, col + s * ohw, ncols);
            }
            gemm<T>(false, false, g.mg, ncols, k, wg, k, col, ncols, T{0}, rows, ncols);
            for (int64_t s = 0; s < nb; ++s) {
              for (int64_t r = 0; r < g.mg; ++r) {
                std::memcpy(res + xout + (s * g.m + r) * ohw, rows + r * ncols + s * ohw,
                            static_cast<size_t>(ohw) * sizeof(T));
              }
            }
          }
        } else {
          // Grad passes read grad_output rows (Mg x np) directly, or gathered side by side.
          const T* go = gout + xout + p0;
          int64_t ldg = ohw;
          if (nb > 1) {
            for (int64_t s = 0; s < nb; ++s) {
              for (int64_t r = 0; r < g.mg; ++r) {
                std::memcpy(rows + r * ncols + s * ohw, gout + xout + (s * g.m + r) * ohw,
                            static_cast<size_t>(ohw) * sizeof(T));
              }
            }
            go = rows;
            ldg = ncols;
          }
          if (pass == Pass::kGradInput) {
            const T* wg = w + grp * g.mg * k;
            if (pw) {  // nb == 1 and the patch matrix is the input plane itself
              gemm<T>(true, false, k, np, g.mg, wg, k, go, ldg, T{0}, res + xin + p0, hw);
            } else {
              gemm<T>(true, false, k, ncols, g.mg, wg, k, go, ldg, T{0}, col, ncols);
              for (int64_t s = 0; s < nb; ++s) {
                col2im(col + s * np, ncols, g, p0, np, res + xin + s * g.c * hw);
              }
            }
          } else {
            T* gw = res + grp * g.mg * k;
            const T* b = x + xin + p0;
            int64_t ldb = hw;
            if (!pw) {
              for (int64_t s = 0; s < nb; ++s) {
                im2col(x + xin + s * g.c * hw, g, p0, np, col + s * np, ncols);
              }
              b = col;
              ldb = ncols;
            }
            gemm<T>(false, true, g.mg, k, ncols, go, ldg, b, ldb, T{1}, gw, k);
          }
        }
      }
    }
  }
}

template <class F>
void dispatch_float(DType dt, F&& f) {
  if (dt == DType::kFloat32) {
    f(float{});
  } else {
    f(double{});
  }
}

}  // namespace

Shape conv2d_output_shape(const Shape& input, const Shape& filter, const Conv2dParams& p) {
  return output_shape_impl(input, filter, p, "conv2d");
}

Tensor conv2d(const Tensor& input, const Tensor& filter, const Conv2dParams& p,
              const KernelOptions& o) {
  const char* op = "conv2d";
  check_float(input, op, "input");
  detail::require_defined(filter, op);
  check_same_dtype(filter, input, op, "filter", "input");
  const Shape out_shape = output_shape_impl(input.shape(), filter.shape(), p, op);
  const Geom g(input.shape(), filter.shape(), out_shape, p);
  if (g.k() == 0) return Tensor::zeros(out_shape, input.dtype());
  Tensor out = Tensor::empty(out_shape, input.dtype());
  if (out.numel() == 0) return out;
  const Tensor x = input.contiguous();
  const Tensor w = filter.contiguous();
  dispatch_float(input.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_pass<T>(Pass::kForward, g, x.data<T>(), w.data<T>(), nullptr, out.data<T>(), o, op);
  });
  return out;
}

Tensor conv2d_grad_input(const Tensor& grad_output, const Tensor& filter, const Shape& input_shape,
                         const Conv2dParams& p, const KernelOptions& o) {
  const char* op = "conv2d_grad_input";
  check_float(grad_output, op, "grad_output");
  detail::require_defined(filter, op);
  check_same_dtype(filter, grad_output, op, "filter", "grad_output");
  if (input_shape.size() == 4) check_known(input_shape, op, "input_shape");
  const Shape out_shape = output_shape_impl(input_shape, filter.shape(), p, op);
  if (grad_output.shape() != out_shape) {
    CHANFLOW_THROW(ShapeError) << op << ": grad_output shape "
                               << shape_to_string(grad_output.shape())
                               << " != the conv2d output shape " << shape_to_string(out_shape)
                               << " of input shape " << shape_to_string(input_shape)
                               << " and filter shape " << shape_to_string(filter.shape());
  }
  const Geom g(input_shape, filter.shape(), out_shape, p);
  Tensor gin = Tensor::zeros(input_shape, grad_output.dtype());
  if (gin.numel() == 0 || grad_output.numel() == 0 || g.k() == 0) return gin;
  const Tensor go = grad_output.contiguous();
  const Tensor w = filter.contiguous();
  dispatch_float(grad_output.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_pass<T>(Pass::kGradInput, g, nullptr, w.data<T>(), go.data<T>(), gin.data<T>(), o, op);
  });
  return gin;
}

Tensor conv2d_grad_filter(const Tensor& grad_output, const Tensor& input, const Shape& filter_shape,
                          const Conv2dParams& p, const KernelOptions& o) {
  const char* op = "conv2d_grad_filter";
  check_float(grad_output, op, "grad_output");
  detail::require_defined(input, op);
  check_same_dtype(input, grad_output, op, "input", "grad_output");
  if (filter_shape.size() == 4) check_known(filter_shape, op, "filter_shape");
  const Shape out_shape = output_shape_impl(input.shape(), filter_shape, p, op);
  if (grad_output.shape() != out_shape) {
    CHANFLOW_THROW(ShapeError) << op << ": grad_output shape "
                               << shape_to_string(grad_output.shape())
                               << " != the conv2d output shape " << shape_to_string(out_shape)
                               << " of input shape " << shape_to_string(input.shape())
                               << " and filter shape " << shape_to_string(filter_shape);
  }
  const Geom g(input.shape(), filter_shape, out_shape, p);
  Tensor gw = Tensor::zeros(filter_shape, grad_output.dtype());
  if (gw.numel() == 0 || grad_output.numel() == 0) return gw;
  const Tensor go = grad_output.contiguous();
  const Tensor x = input.contiguous();
  dispatch_float(grad_output.dtype(), [&](auto tag) {
    using T = decltype(tag);
    run_pass<T>(Pass::kGradFilter, g, x.data<T>(), nullptr, go.data<T>(), gw.data<T>(), o, op);
  });
  return gw;
}

}  // namespace chanflow
