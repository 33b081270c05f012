// matmul.cc — NumPy's matmul: 1-d promotion, batch broadcasting, GEMM through OpenBLAS for
// float32/float64 (float16 through float32), an exact wrapping loop for integers and bools.
#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/detail/strided.h"
#include "chanflow/tensor/ops.h"
#include "internal.h"

namespace chanflow {

namespace {

// How BLAS sees one matrix of `rows` x `cols` with element strides (rs, cs): row-major with
// leading dimension ld (trans = false) or its transpose stored row-major (trans = true).
struct GemmView {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

GemmView gemm_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  GemmView v;
  const int64_t max_int = 0x7FFFFFFF;
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
    v.ok = true;
    v.ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
  } else if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
    v.ok = true;
    v.trans = true;
    v.ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
  }
  if (v.ld > max_int) v.ok = false;
  return v;
}

// Row i of a matrix seen through v starts this many elements after the first.
int64_t row_step(const GemmView& v) { return v.trans ? 1 : v.ld; }

template <class T>
void gemm_blas(const T* a, const GemmView& va, const T* b, const GemmView& vb, T* c, int64_t n,
               int64_t k, int64_t row0, int64_t row1) {
  const auto ta = va.trans ? CblasTrans : CblasNoTrans;
  const auto tb = vb.trans ? CblasTrans : CblasNoTrans;
  const int rows = static_cast<int>(row1 - row0);
  const T* ap = a + row0 * row_step(va);
  T* cp = c + row0 * n;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, rows, static_cast<int>(n), static_cast<int>(k), 1.0f, ap,
                static_cast<int>(va.ld), b, static_cast<int>(vb.ld), 0.0f, cp,
                static_cast<int>(std::max<int64_t>(n, 1)));
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, rows, static_cast<int>(n), static_cast<int>(k), 1.0, ap,
                static_cast<int>(va.ld), b, static_cast<int>(vb.ld), 0.0, cp,
                static_cast<int>(std::max<int64_t>(n, 1)));
  }
}

// Exact integer GEMM (wrap-around like NumPy), i-k-j order so the inner loop streams B and C.
template <class T>
void gemm_loop(const char* a, int64_t ars, int64_t acs, const char* b, int64_t brs, int64_t bcs,
               T* c, int64_t n, int64_t k, int64_t row0, int64_t row1) {
  // Sign-extending a signed element into the unsigned W is intended: arithmetic modulo 2^bits of
  // W, truncated to T, is two's-complement wrap-around (NumPy's result). Zero-extending first, as
  // bugprone-signed-char-misuse suggests, would give wrong products for negative int8 values.
  using W = std::conditional_t<sizeof(T) <= 4, uint32_t, uint64_t>;
  for (int64_t i = row0; i < row1; ++i) {
    T* crow = c + i * n;
    std::fill(crow, crow + n, T{0});
    for (int64_t p = 0; p < k; ++p) {
      // NOLINTNEXTLINE(bugprone-signed-char-misuse): sign extension intended (see above)
      const W av = static_cast<W>(*reinterpret_cast<const T*>(a + i * ars + p * acs));
      if (av == 0) continue;
      const char* brow = b + p * brs;
      for (int64_t j = 0; j < n; ++j) {
        // NOLINTNEXTLINE(bugprone-signed-char-misuse): sign extension intended (see above)
        const W bv = static_cast<W>(*reinterpret_cast<const T*>(brow + j * bcs));
        crow[j] = static_cast<T>(static_cast<W>(crow[j]) + av * bv);
      }
    }
  }
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, const KernelOptions& opts) {
  detail::require_defined(a_in, "matmul");
  detail::require_defined(b_in, "matmul");
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    CHANFLOW_THROW(ShapeError) << "matmul: shapes " << shape_to_string(a_in.shape()) << " and "
                               << shape_to_string(b_in.shape())
                               << ": a 0-d operand is not allowed (use mul)";
  }
  const DType result = promote_types(a_in.dtype(), b_in.dtype());
  DType compute = result;
  if (result == DType::kFloat16) compute = DType::kFloat32;
  if (result == DType::kBool) compute = DType::kInt64;
  Tensor a = a_in.ndim() == 1 ? a_in.unsqueeze(0) : a_in;
  Tensor b = b_in.ndim() == 1 ? b_in.unsqueeze(1) : b_in;
  const int64_t m = a.size(-2);
  const int64_t k = a.size(-1);
  const int64_t k2 = b.size(-2);
  const int64_t n = b.size(-1);
  if (k != k2) {
    CHANFLOW_THROW(ShapeError) << "matmul: shapes " << shape_to_string(a_in.shape()) << " and "
                               << shape_to_string(b_in.shape()) << " are not aligned: " << k
                               << " (last axis of the first) != " << k2
                               << " (second-to-last axis of the second)";
  }
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(a_batch, b_batch, "matmul");
  } catch (const ShapeError&) {
    CHANFLOW_THROW(ShapeError) << "matmul: shapes " << shape_to_string(a_in.shape()) << " and "
                               << shape_to_string(b_in.shape())
                               << ": batch axes cannot be broadcast together";
  }
  if (a.dtype() != compute) a = a.cast(compute);
  if (b.dtype() != compute) b = b.cast(compute);

  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  // Every element is written by GEMM (beta = 0) or the integer loop unless k == 0.
  Tensor out = k == 0 ? Tensor::zeros(out_shape, compute) : Tensor::empty(out_shape, compute);
  const int64_t nbatch = shape_numel(batch);

  if (out.numel() > 0 && k > 0) {
    const bool use_blas = compute == DType::kFloat32 || compute == DType::kFloat64;
    auto views = [&](const Tensor& t, int64_t rows, int64_t cols) {
      return gemm_view(rows, cols, t.strides()[static_cast<size_t>(t.ndim() - 2)],
                       t.strides()[static_cast<size_t>(t.ndim() - 1)]);
    };
    GemmView va = views(a, m, k);
    GemmView vb = views(b, k, n);
    if (use_blas && !va.ok) {
      a = a.clone();
      va = views(a, m, k);
    }
    if (use_blas && !vb.ok) {
      b = b.clone();
      vb = views(b, k, n);
    }
    if (use_blas) detail::ensure_blas_initialized();
    // Byte offsets of each batch's matrices, through broadcast strides over the batch axes.
    const auto batch_strides = [&](const Tensor& t) {
      std::vector<int64_t> s(batch.size(), 0);
      const int64_t tb = t.ndim() - 2;
      for (int64_t i = 0; i < tb; ++i) {
        const auto od = static_cast<size_t>(static_cast<int64_t>(batch.size()) - tb + i);
        s[od] = t.shape()[static_cast<size_t>(i)] == 1
                    ? 0
                    : t.strides()[static_cast<size_t>(i)] * t.itemsize();
      }
      return s;
    };
    const std::vector<int64_t> sa = batch_strides(a);
    const std::vector<int64_t> sb = batch_strides(b);
    // Work per row (multiply-adds) decides how many rows go into one chunk.
    const int64_t work_per_row = std::max<int64_t>(1, n * k);
    const int64_t rows_per_chunk =
        opts.between_chunks ? std::max<int64_t>(1, opts.chunk_elements / work_per_row) : m;
    bool first_chunk = true;
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t bi = 0; bi < nbatch; ++bi) {
      int64_t oa = 0;
      int64_t ob = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        oa += idx[d] * sa[d];
        ob += idx[d] * sb[d];
      }
      const char* ap = static_cast<const char*>(a->raw_data()) + oa;
      const char* bp = static_cast<const char*>(b->raw_data()) + ob;
      detail::dispatch_dtype(compute, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* cp = static_cast<T*>(out->raw_data()) + bi * m * n;
        for (int64_t r0 = 0; r0 < m; r0 += rows_per_chunk) {
          if (!first_chunk && opts.between_chunks) opts.between_chunks();
          first_chunk = false;
          const int64_t r1 = std::min(m, r0 + rows_per_chunk);
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
            gemm_blas<T>(reinterpret_cast<const T*>(ap), va, reinterpret_cast<const T*>(bp), vb, cp,
                         n, k, r0, r1);
          } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            const auto it = static_cast<int64_t>(sizeof(T));
            gemm_loop<T>(ap, a.strides()[a.ndim() - 2] * it, a.strides()[a.ndim() - 1] * it, bp,
                         b.strides()[b.ndim() - 2] * it, b.strides()[b.ndim() - 1] * it, cp, n, k,
                         r0, r1);
          } else {
            CHANFLOW_CHECK(false) << "matmul: no kernel for " << dtype_name(compute);
          }
        }
      });
      for (size_t d = batch.size(); d-- > 0;) {
        if (++idx[d] < batch[d]) break;
        idx[d] = 0;
      }
    }
  }
  if (compute != result) out = out.cast(result);
  if (a_in.ndim() == 1) out = out.squeeze(-2);
  if (b_in.ndim() == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace chanflow
