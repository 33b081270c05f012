// kernels_tensor.cc — fill_constant, assign, increment, scale, cast, reshape, transpose, print.
// Each op is one row of tensor_kernels() (kernel.h); its attributes are the struct the row names.
#include <atomic>
#include <charconv>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "chanflow/ir/var_type.h"
#include "chanflow/tensor/detail/dispatch.h"
#include "chanflow/tensor/ops.h"
#include "kernel.h"

namespace chanflow::exec_detail {
namespace {

// The shortest text that reads back as v (2147483648, 1.5, inf).
std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return {buf, r.ptr};
}

// Fluid's fill_constant: `str_value`, when non-empty, is the value as text (Paddle's front end
// writes it exactly: "2147483647" for integer dtypes, "1.0", "inf", "nan" for floats) and wins
// over the float `value`, which cannot hold every int32 or int64. Either way the value must be one
// the dtype holds (dtype_holds): a value the conversion would change is an error, not a different
// number.
struct FillConstantAttrs {
  std::vector<int64_t> shape;
  DType dtype = DType::kFloat32;
  double value = 0;
  std::string str_value;
  // Derived: an INT64 value a double does not hold exactly is filled from `exact` instead.
  bool use_exact = false;
  int64_t exact = 0;
  static constexpr auto kFields = std::tuple{
      field("shape", &FillConstantAttrs::shape), field("dtype", &FillConstantAttrs::dtype),
      field("value", &FillConstantAttrs::value), field("str_value", &FillConstantAttrs::str_value)};
  static void finish(FillConstantAttrs& a);
};

void FillConstantAttrs::finish(FillConstantAttrs& a) {
  const std::string type_name(var_type_name(var_type_from_dtype(a.dtype)));
  const std::string text = std::move(a.str_value);
  a.str_value.clear();
  if (text.empty()) {
    if (!dtype_holds(a.dtype, a.value)) {
      CHANFLOW_THROW(Error) << "attribute 'value' " << number_text(a.value) << " does not fit "
                            << type_name << " (" << dtype_range_text(a.dtype) << ")";
    }
    return;
  }
  const char* const end = text.data() + text.size();
  int64_t i = 0;
  if (std::from_chars(text.data(), end, i).ptr == end && a.dtype != DType::kBool &&
      !is_floating(a.dtype)) {
    // An integer for an integer dtype: exact, whatever its magnitude. Any int64 fits INT64; for
    // the narrower dtypes the double of i is exact near their bounds.
    if (a.dtype != DType::kInt64 && !dtype_holds(a.dtype, static_cast<double>(i))) {
      CHANFLOW_THROW(Error) << "attribute 'str_value' \"" << text << "\" does not fit " << type_name
                            << " (" << dtype_range_text(a.dtype) << ")";
    }
    constexpr int64_t kExactInDouble = int64_t{1} << 53;
    a.exact = i;
    a.value = static_cast<double>(i);
    a.use_exact = i > kExactInDouble || i < -kExactInDouble;
    return;
  }
  double v = 0;
  if (std::from_chars(text.data(), end, v).ptr != end) {
    CHANFLOW_THROW(Error) << "attribute 'str_value' \"" << text << "\" is not a number";
  }
  if (!dtype_holds(a.dtype, v)) {
    CHANFLOW_THROW(Error) << "attribute 'str_value' \"" << text << "\" does not fit " << type_name
                          << " (" << dtype_range_text(a.dtype) << ")";
  }
  a.value = v;
}

void run_fill_constant(const PreparedOp& op, const FillConstantAttrs& a, Frame& f) {
  if (a.use_exact) {  // an INT64 value a double does not hold exactly
    write_out(
        op, f, 0,
        Tensor::from_vector<int64_t>(
            std::vector<int64_t>(static_cast<size_t>(shape_numel(a.shape)), a.exact), a.shape));
    return;
  }
  Tensor buf = take_output_buffer(op, f, 0);
  if (buf.defined() && buf.dtype() == a.dtype && buf.shape() == a.shape) {
    buf.fill(a.value);  // unique: filled in place
    write_out(op, f, 0, std::move(buf));
    return;
  }
  write_out(op, f, 0, Tensor::full(a.shape, a.value, a.dtype));
}
void bind_fill_constant(PrepareCtx& c) {
  c.out("Out");
  for (int64_t d : c.attr("shape").as_ints()) {
    if (d < 0) fail_prepare(c.op(), "shape must be fully known to fill a tensor, got -1");
  }
}
std::vector<TensorInfo> infer_fill_constant(const FillConstantAttrs& a, const OpDesc&,
                                            const std::vector<TensorInfo>&) {
  TensorInfo o;
  o.shape = a.shape;
  o.dtype = a.dtype;
  return {o};
}

// Any object: tensors are values (copy on write), channels are handles.
void run_assign(const PreparedOp& op, const NoAttrs&, Frame& f) {
  ObjectRef v = read_var(f, op.in[0]);
  if (!v.defined() && !(op.out_decl.type == static_cast<int64_t>(VarType::kChannel))) {
    CHANFLOW_THROW(Error) << "input variable '" << op.in_names[0]
                          << "' is read before anything was written to it";
  }
  write_out(op, f, 0, std::move(v));
}
void bind_assign(PrepareCtx& c) {
  bind_x_out(c);
  c.op().out_decl = find_decl(c, c.op().out_names[0]);
}
template <class A>
std::vector<TensorInfo> infer_same(const A&, const OpDesc& op, const std::vector<TensorInfo>& in) {
  if (in.empty()) CHANFLOW_THROW(Error) << op.type() << ": inference needs an input";
  return {in[0]};
}

template <class T>
void add_in_place(Tensor& t, double step) {
  T* p = t.data<T>();  // copy on write when shared
  const int64_t n = t.numel();
  if constexpr (std::is_integral_v<T>) {
    // step is an integer T holds (increment checked it), so its conversion is exact; the sum
    // wraps around like elementwise_add's, in unsigned arithmetic (no signed overflow).
    using U = std::make_unsigned_t<T>;
    const auto s = static_cast<U>(static_cast<T>(step));
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<U>(static_cast<U>(p[i]) + s));
  } else {
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<double>(p[i]) + step);
  }
}

void increment(Tensor& t, double step) {
  if (t.dtype() != DType::kBool && !is_floating(t.dtype()) && !dtype_holds(t.dtype(), step)) {
    CHANFLOW_THROW(Error) << "increment: step " << number_text(step) << " is not a value an "
                          << var_type_name(var_type_from_dtype(t.dtype())) << " X can add ("
                          << dtype_range_text(t.dtype()) << ")";
  }
  detail::dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      CHANFLOW_THROW(TypeError) << "increment: a BOOL tensor cannot be incremented";
    } else if constexpr (std::is_same_v<T, Half>) {
      Half* p = t.data<Half>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        p[i] = Half(static_cast<float>(static_cast<double>(static_cast<float>(p[i])) + step));
      }
    } else {
      add_in_place<T>(t, step);
    }
  });
}

struct IncrementAttrs {
  double step = 1;
  static constexpr auto kFields = std::tuple{field("step", &IncrementAttrs::step)};
};

void run_increment(const PreparedOp& op, const IncrementAttrs& a, Frame& f) {
  const bool same = op.in[0].depth == op.out[0].depth && op.in[0].slot == op.out[0].slot;
  if (same) {
    // X is Out: take the tensor out of its slot so that, held uniquely, it is updated in place.
    Tensor x = read_tensor(op, f, 0);  // checks it is a tensor
    if (x.numel() != 1) {
      CHANFLOW_THROW(ShapeError) << "increment: X must have one element, got shape "
                                 << shape_to_string(x.shape());
    }
    if (x.dtype() == DType::kBool) increment(x, a.step);  // throws
    x = Tensor();
    ScopeObj* s = scope_at(f.scope, op.in[0].depth);
    Tensor t(detail::ObjectUnsafe::move_ptr(s->take(op.in[0].slot)));
    increment(t, a.step);
    s->set(op.in[0].slot, std::move(t));
    return;
  }
  Tensor t = read_tensor(op, f, 0);
  if (t.numel() != 1) {
    CHANFLOW_THROW(ShapeError) << "increment: X must have one element, got shape "
                               << shape_to_string(t.shape());
  }
  increment(t, a.step);
  write_out(op, f, 0, std::move(t));
}

struct ScaleAttrs {
  double scale = 1;
  double bias = 0;
  bool bias_after_scale = true;
  static constexpr auto kFields =
      std::tuple{field("scale", &ScaleAttrs::scale), field("bias", &ScaleAttrs::bias),
                 field("bias_after_scale", &ScaleAttrs::bias_after_scale)};
};

void run_scale(const PreparedOp& op, const ScaleAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  const KernelOptions o = kernel_options(f, x.numel());
  const DType work = is_floating(x.dtype()) ? x.dtype() : DType::kFloat64;
  Tensor xv = work == x.dtype() ? x : cast(x, work, o);
  Tensor s = Tensor::scalar(a.scale, work), b = Tensor::scalar(a.bias, work);
  Tensor r = a.bias_after_scale ? add(mul(xv, s, o), b, o) : mul(add(xv, b, o), s, o);
  write_out(op, f, 0, r.dtype() == x.dtype() ? r : cast(r, x.dtype(), o));
}

struct CastAttrs {
  DType out_dtype = DType::kFloat32;
  static constexpr auto kFields = std::tuple{field("out_dtype", &CastAttrs::out_dtype)};
};

void run_cast(const PreparedOp& op, const CastAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  write_out(op, f, 0, cast(x, a.out_dtype, kernel_options(f, x.numel())));
}
std::vector<TensorInfo> infer_cast(const CastAttrs& a, const OpDesc& op,
                                   const std::vector<TensorInfo>& in) {
  std::vector<TensorInfo> o = infer_same(a, op, in);
  o[0].dtype = a.out_dtype;
  return o;
}

Shape reshape_target(const Shape& x, const std::vector<int64_t>& want) {
  Shape s = want;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0) {
      if (i >= x.size()) {
        CHANFLOW_THROW(ShapeError) << "reshape: 0 at position " << i << " copies an extent X of "
                                   << "shape " << shape_to_string(x) << " does not have";
      }
      s[i] = x[i];
    }
  }
  return s;
}
struct ReshapeAttrs {
  std::vector<int64_t> shape;
  static constexpr auto kFields = std::tuple{field("shape", &ReshapeAttrs::shape)};
};

void run_reshape(const PreparedOp& op, const ReshapeAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  write_out(op, f, 0, x.reshape(reshape_target(x.shape(), a.shape)));
}
std::vector<TensorInfo> infer_reshape(const ReshapeAttrs& a, const OpDesc& op,
                                      const std::vector<TensorInfo>& in) {
  std::vector<TensorInfo> o = infer_same(a, op, in);
  o[0].shape = reshape_target(in[0].shape, a.shape);
  int64_t known = 1, unknown = -1;
  bool all_known = true;
  for (int64_t d : in[0].shape) {
    if (d < 0) all_known = false;
    known *= d;
  }
  int64_t prod = 1;
  for (size_t i = 0; i < o[0].shape.size(); ++i) {
    if (o[0].shape[i] == -1) {
      if (unknown >= 0) CHANFLOW_THROW(ShapeError) << "reshape: more than one -1";
      unknown = static_cast<int64_t>(i);
    } else {
      prod *= o[0].shape[i];
    }
  }
  if (all_known) {
    if (unknown >= 0 && prod != 0) o[0].shape[static_cast<size_t>(unknown)] = known / prod;
    if ((unknown < 0 && prod != known) || (unknown >= 0 && prod != 0 && known % prod != 0)) {
      CHANFLOW_THROW(ShapeError) << "reshape: cannot reshape " << shape_to_string(in[0].shape)
                                 << " into " << shape_to_string(a.shape);
    }
  }
  return o;
}

struct TransposeAttrs {
  std::vector<int64_t> axis;
  static constexpr auto kFields = std::tuple{field("axis", &TransposeAttrs::axis)};
};

void run_transpose(const PreparedOp& op, const TransposeAttrs& a, Frame& f) {
  write_out(op, f, 0, read_tensor(op, f, 0).transpose(a.axis));
}
std::vector<TensorInfo> infer_transpose(const TransposeAttrs& a, const OpDesc& op,
                                        const std::vector<TensorInfo>& in) {
  std::vector<TensorInfo> o = infer_same(a, op, in);
  const std::vector<int64_t>& perm = a.axis;
  if (perm.size() != in[0].shape.size()) {
    CHANFLOW_THROW(ShapeError) << "transpose: axis has " << perm.size() << " entries for rank "
                               << in[0].shape.size();
  }
  o[0].shape.clear();
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in[0].shape.size())) {
      CHANFLOW_THROW(ShapeError) << "transpose: bad axis " << p;
    }
    o[0].shape.push_back(in[0].shape[static_cast<size_t>(p)]);
  }
  return o;
}

std::mutex g_print_mu;

struct PrintAttrs {
  std::string message;
  int64_t summarize = -1;
  int64_t first_n = -1;
  bool print_tensor_name = true;
  std::string print_phase;
  // Derived: BACKWARD prints only in a backward pass, which the executor never runs.
  bool never = false;
  // How many times the op ran (first_n); shared by the runs of the prepared program.
  std::shared_ptr<std::atomic<int64_t>> counter;
  static constexpr auto kFields =
      std::tuple{field("message", &PrintAttrs::message), field("summarize", &PrintAttrs::summarize),
                 field("first_n", &PrintAttrs::first_n),
                 field("print_tensor_name", &PrintAttrs::print_tensor_name),
                 field("print_phase", &PrintAttrs::print_phase)};
  static void finish(PrintAttrs& a) {
    a.never = a.print_phase == "BACKWARD";
    a.counter = std::make_shared<std::atomic<int64_t>>(0);
  }
};

void run_print(const PreparedOp& op, const PrintAttrs& a, Frame& f) {
  Tensor x = read_tensor(op, f, 0);
  // Relaxed: the count only decides how many prints happen, it orders nothing.
  const int64_t n = a.counter->fetch_add(1, std::memory_order_relaxed);
  if (!a.never && (a.first_n < 0 || n < a.first_n)) {
    Tensor shown = x;
    if (a.summarize >= 0 && x.numel() > a.summarize) {
      shown = x.reshape({-1}).slice(0, 0, a.summarize);
    }
    std::string text = a.message.empty() ? "" : a.message + " ";
    if (a.print_tensor_name) text += "Tensor[" + op.in_names[0] + "] ";
    text += to_string(shown) + "\n";
    std::lock_guard<std::mutex> lock(g_print_mu);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  if (op.out[0].valid()) write_out(op, f, 0, std::move(x));
}
void bind_print(PrepareCtx& c) {
  c.in("In");
  c.out("Out");
}

}  // namespace

std::vector<KernelRow> tensor_kernels() {
  using N = NoAttrs;
  using FillA = FillConstantAttrs;
  return {
      op<FillA, run_fill_constant, bind_fill_constant, infer_fill_constant>("fill_constant"),
      op<N, run_assign, bind_assign, infer_same<N>>("assign"),
      op<IncrementAttrs, run_increment, bind_x_out, infer_same<IncrementAttrs>>("increment"),
      op<ScaleAttrs, run_scale, bind_x_out, infer_same<ScaleAttrs>>("scale"),
      op<CastAttrs, run_cast, bind_x_out, infer_cast>("cast"),
      op<ReshapeAttrs, run_reshape, bind_x_out, infer_reshape>("reshape"),
      op<TransposeAttrs, run_transpose, bind_x_out, infer_transpose>("transpose"),
      op<PrintAttrs, run_print, bind_print, infer_same<PrintAttrs>>("print"),
  };
}

}  // namespace chanflow::exec_detail
