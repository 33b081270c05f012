// rows_nn.cc — neural-network layers of Paddle Fluid 1.x (mid-2018 schemas): batch_norm,
// dropout, cross_entropy, softmax_with_cross_entropy, accuracy, top_k, leaky_relu, concat, split,
// flatten, split_lod_tensor, merge_lod_tensor, fill_zeros_like, and their gradient ops. The
// kernels are chanflow/tensor/nn.h's (split/merge_lod_tensor copy rows here).
//
// Where the rows follow Paddle and where they decide what Paddle leaves open:
// * batch_norm: the running statistics are updated in place (in programs MeanOut names the
//   Mean variable, VarianceOut the Variance one); only Y is differentiated (a gradient reaching
//   MeanOut, VarianceOut, SavedMean or SavedVariance is an error), and is_test has no gradient.
//   Mid-2018 Paddle had no use_global_stats attribute (added in November 2018), so neither does
//   this row.
// * dropout: downgrade_in_infer semantics (Paddle had no dropout_implementation attribute before
//   October 2018). With fix_seed false the seed of each run is the next of a per-process
//   sequence (next_dropout_seed): each run draws a new mask, and a fresh process running the same
//   ops in the same order draws the same masks.
// * softmax_with_cross_entropy: only Loss is differentiated (as Paddle's gradient op, which
//   reads no Softmax@GRAD); a gradient reaching Softmax is an error rather than dropped.
// * split's gradient is Paddle's: a concat of the outputs' gradients, fill_zeros_like for an
//   output no gradient reaches.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "chanflow/tensor/nn.h"
#include "rows.h"
#include "shape_util.h"

namespace chanflow {
namespace {

bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

void require_float(const TensorInfo& t, const std::string& op, const char* slot) {
  if (!is_float(t.dtype)) {
    CHANFLOW_OP_THROW(TypeError, op) << slot << " must be FP32 or FP64, it is " << t.dtype;
  }
}

void require_dtype(const TensorInfo& t, DType want, const std::string& op, const char* slot,
                   const char* like) {
  if (t.dtype != want) {
    CHANFLOW_OP_THROW(TypeError, op)
        << slot << " must be " << want << " (" << like << "), it is " << t.dtype;
  }
}

bool extents_differ(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// Runs a row's inference on the tensors of a kernel call, so the kernel checks what it is given
// with the same messages (op and slot named) as programs get when they are verified.
class TensorInfer final : public InferCall {
 public:
  TensorInfer(const AttrReader& a, const KernelCall& c) {
    for (size_t s = 0; s < a.schema().inputs().size(); ++s) {
      std::vector<TensorInfo> v;
      for (size_t i = 0; i < c.num_inputs(static_cast<int>(s)); ++i) {
        const Tensor t = c.input(static_cast<int>(s), i);
        v.push_back(TensorInfo{t.dtype(), t.shape()});
      }
      in_.push_back(std::move(v));
    }
    for (size_t s = 0; s < a.schema().outputs().size(); ++s) {
      out_.push_back(c.num_outputs(static_cast<int>(s)));
    }
  }
  size_t num_inputs(int slot) const override { return in_.at(static_cast<size_t>(slot)).size(); }
  const TensorInfo& input(int slot, size_t i) const override {
    return in_.at(static_cast<size_t>(slot)).at(i);
  }
  size_t num_outputs(int slot) const override { return out_.at(static_cast<size_t>(slot)); }
  void set_output(int, TensorInfo, size_t) override {}

 private:
  std::vector<std::vector<TensorInfo>> in_;
  std::vector<size_t> out_;
};

void check_inputs(InferFn infer, const AttrReader& a, const KernelCall& c) {
  TensorInfer probe(a, c);
  infer(a, probe);
}

// A float attribute checked finite and in [lo, hi].
std::function<std::string(const Attr&)> in_range(double lo, double hi) {
  return [lo, hi](const Attr& a) -> std::string {
    const double v = a.as_float();
    if (std::isfinite(v) && v >= lo && v <= hi) return {};
    return "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
           std::to_string(v);
  };
}

std::string check_layout(const Attr& a) {
  const std::string& v = a.as_string();
  if (v == "NCHW" || v == "NHWC" || v == "AnyLayout") return {};
  return "must be \"NCHW\" or \"NHWC\" (or \"AnyLayout\"), got \"" + v + "\"";
}

std::string check_at_least(const Attr& a, int64_t lo) {
  return a.as_int() >= lo
             ? ""
             : "must be >= " + std::to_string(lo) + ", got " + std::to_string(a.as_int());
}

// ---- batch_norm ---------------------------------------------------------------------------
// Inputs X, Scale, Bias, Mean, Variance; outputs Y, MeanOut, VarianceOut, SavedMean,
// SavedVariance.
void infer_batch_norm(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  require_float(x, "batch_norm", "X");
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank < 2 || rank > 5) {
    CHANFLOW_OP_THROW(ShapeError, "batch_norm")
        << "X must have rank 2 to 5, it has shape " << shape_to_string(x.shape);
  }
  const DataLayout layout = parse_data_layout(a.s("data_layout"));
  int64_t channels = layout == DataLayout::kNCHW ? x.shape[1] : x.shape.back();
  static const char* const kVectors[] = {"Scale", "Bias", "Mean", "Variance"};
  for (int k = 1; k <= 4; ++k) {
    const TensorInfo& v = c.input(k);
    const char* slot = kVectors[k - 1];
    require_dtype(v, x.dtype, "batch_norm", slot, "X's dtype");
    if (v.shape.size() != 1 || extents_differ(v.shape[0], channels)) {
      CHANFLOW_OP_THROW(ShapeError, "batch_norm")
          << slot << " must have shape [C] with C = " << channels << " (the channels of X "
          << shape_to_string(x.shape) << ", " << a.s("data_layout") << "), it has "
          << shape_to_string(v.shape);
    }
    if (channels < 0) channels = v.shape[0];
  }
  c.set_output(0, x);
  for (int k = 1; k <= 4; ++k) c.set_output(k, TensorInfo{x.dtype, {channels}});
}

// Writes a running statistic into the buffer its output variable holds when nothing else holds
// it (MeanOut is the Mean variable in programs: the update is in place), else sets it.
void write_statistic(KernelCall& c, int slot, const Tensor& value) {
  if (!c.wants(slot)) return;
  Tensor buf = c.take_output(slot);
  if (buf.defined() && buf.dtype() == value.dtype() && buf.shape() == value.shape() &&
      buf.is_contiguous() && !buf.is_shared()) {
    buf.assign(value);
    c.set_output(slot, std::move(buf));
    return;
  }
  c.set_output(slot, value);
}

void run_batch_norm(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_batch_norm, a, c);
  const DataLayout layout = parse_data_layout(a.s("data_layout"));
  const auto eps = static_cast<float>(a.f("epsilon"));
  const Tensor x = c.input(0), scale = c.input(1), bias = c.input(2);
  Tensor mean = c.input(3), var = c.input(4);
  const KernelOptions o = c.options(2 * x.numel());
  if (a.b("is_test")) {
    // Paddle's inference kernel: the given statistics, passed through unchanged; SavedMean and
    // SavedVariance are not computed.
    c.set_output(0, batch_norm_infer(x, scale, bias, mean, var, eps, layout, o));
    c.set_output(1, mean);
    c.set_output(2, var);
    return;
  }
  BatchNormTrainResult r = batch_norm_train(x, scale, bias, mean, var,
                                            static_cast<float>(a.f("momentum")), eps, layout, o);
  mean = Tensor();  // released, so the variable's buffer can be updated in place
  var = Tensor();
  c.set_output(0, std::move(r.y));
  write_statistic(c, 1, r.mean_out);
  write_statistic(c, 2, r.variance_out);
  c.set_output(3, std::move(r.saved_mean));
  c.set_output(4, std::move(r.saved_variance));
}

void grad_batch_norm(const AttrReader& a, GradCall& c) {
  static const char* const kStats[] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
  for (int k = 1; k <= 4; ++k) {
    if (c.output_grad(k).valid()) {
      CHANFLOW_OP_THROW(Error, "batch_norm")
          << "a gradient reaches " << kStats[k - 1]
          << ", but only Y is differentiated (the running and saved statistics have no "
             "gradient)";
    }
  }
  if (a.b("is_test")) {
    CHANFLOW_OP_THROW(Error, "batch_norm")
        << "is_test batch_norm has no gradient (it normalises with the given statistics; "
           "differentiate the training op)";
  }
  emit_grad_op(c, "batch_norm_grad", {"X", "Scale"}, {"SavedMean", "SavedVariance"}, {"Y"},
               {"X", "Scale", "Bias"});
}

// Inputs X, Scale, SavedMean, SavedVariance, Y@GRAD; outputs X@GRAD, Scale@GRAD, Bias@GRAD.
void infer_batch_norm_grad(const AttrReader&, InferCall& c) {
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(1));
  c.set_output(2, c.input(1));
}

void run_batch_norm_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), scale = c.input(1), gy = c.input(4);
  if (gy.shape() != x.shape() || gy.dtype() != x.dtype()) {
    CHANFLOW_OP_THROW(ShapeError, "batch_norm_grad")
        << "Y@GRAD is " << gy.dtype() << " " << shape_to_string(gy.shape()) << " but X is "
        << x.dtype() << " " << shape_to_string(x.shape());
  }
  BatchNormGradResult r =
      batch_norm_grad(x, scale, c.input(2), c.input(3), gy, static_cast<float>(a.f("epsilon")),
                      parse_data_layout(a.s("data_layout")), c.options(3 * x.numel()));
  c.set_output(0, std::move(r.grad_x));
  c.set_output(1, std::move(r.grad_scale));
  c.set_output(2, std::move(r.grad_bias));
}

// ---- dropout ------------------------------------------------------------------------------
// The seed of a run with fix_seed false: the k-th call in the process gets SplitMix64's k-th
// output for a fixed start, so runs differ from each other and a process's sequence repeats in
// the next process (for the same order of dropout runs; concurrent runs take seeds in the order
// they reach this counter).
uint64_t next_dropout_seed() {
  static std::atomic<uint64_t> counter{0};
  uint64_t z = 0x243F6A8885A308D3ull +
               (counter.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void infer_dropout(const AttrReader&, InferCall& c) {
  const TensorInfo& x = c.input(0);
  require_float(x, "dropout", "X");
  c.set_output(0, x);
  c.set_output(1, x);
}

void run_dropout(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_dropout, a, c);
  const Tensor x = c.input(0);
  const bool is_test = a.b("is_test");
  const uint64_t seed =
      a.b("fix_seed") ? static_cast<uint64_t>(a.i("seed")) : (is_test ? 0 : next_dropout_seed());
  DropoutResult r =
      dropout(x, static_cast<float>(a.f("dropout_prob")), is_test, seed, c.options(x.numel()));
  c.set_output(0, std::move(r.out));
  if (!is_test) c.set_output(1, std::move(r.mask));  // Paddle's inference writes no Mask
}

void grad_dropout(const AttrReader& a, GradCall& c) {
  // Mask is piecewise constant in X: a gradient reaching it contributes nothing.
  if (a.b("is_test") && c.output_grad(0).valid()) {
    CHANFLOW_OP_THROW(Error, "dropout") << "is_test dropout has no gradient (it makes no Mask)";
  }
  emit_grad_op(c, "dropout_grad", {}, {"Mask"}, {"Out"}, {"X"});
}

// Inputs Mask, Out@GRAD; output X@GRAD.
void infer_dropout_grad(const AttrReader&, InferCall& c) { c.set_output(0, c.input(1)); }

void run_dropout_grad(const AttrReader&, KernelCall& c) {
  const Tensor mask = c.input(0), g = c.input(1);
  if (mask.shape() != g.shape() || mask.dtype() != g.dtype()) {
    CHANFLOW_OP_THROW(ShapeError, "dropout_grad")
        << "Mask is " << mask.dtype() << " " << shape_to_string(mask.shape()) << " but Out@GRAD is "
        << g.dtype() << " " << shape_to_string(g.shape());
  }
  c.set_output(0, dropout_grad(g, mask, c.options(g.numel())));
}

// ---- cross_entropy and softmax_with_cross_entropy -----------------------------------------
// Checks X (probabilities or logits) and Label; returns the loss's type, X.shape[:-1] + [1].
TensorInfo infer_loss(const std::string& op, const char* x_slot, const TensorInfo& x,
                      const TensorInfo& label, bool soft) {
  require_float(x, op, x_slot);
  if (x.shape.empty()) CHANFLOW_OP_THROW(ShapeError, op) << x_slot << " must have rank >= 1";
  const size_t r = x.shape.size();
  bool fits = label.shape.size() == r;
  for (size_t i = 0; fits && i + 1 < r; ++i) fits = !extents_differ(label.shape[i], x.shape[i]);
  if (soft) {
    require_dtype(label, x.dtype, op, "Label", "soft_label: X's dtype");
    fits = fits && !extents_differ(label.shape[r - 1], x.shape[r - 1]);
  } else {
    require_dtype(label, DType::kInt64, op, "Label", "class indices");
    fits = fits && !extents_differ(label.shape[r - 1], 1);
  }
  if (!fits) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << "Label " << shape_to_string(label.shape) << " does not fit " << x_slot << " "
        << shape_to_string(x.shape) << " (want " << (soft ? x_slot : "its shape with last extent 1")
        << (soft ? "'s shape" : "") << ")";
  }
  TensorInfo loss{x.dtype, x.shape};
  loss.shape.back() = 1;
  return loss;
}

void infer_cross_entropy(const AttrReader& a, InferCall& c) {
  c.set_output(0, infer_loss("cross_entropy", "X", c.input(0), c.input(1), a.b("soft_label")));
}

void run_cross_entropy(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_cross_entropy, a, c);
  const Tensor x = c.input(0);
  c.set_output(0, cross_entropy(x, c.input(1), a.b("soft_label"), a.i("ignore_index"),
                                c.options(x.numel())));
}

void grad_cross_entropy(const AttrReader&, GradCall& c) {
  // Label gets no gradient (Paddle's gradient op computes none).
  emit_grad_op(c, "cross_entropy_grad", {"X", "Label"}, {}, {"Y"}, {"X"});
}

// The loss's gradient must have the loss's type: `x`'s dtype and shape x.shape[:-1] + [1].
void check_loss_grad(const std::string& op, const char* slot, const Tensor& x, const Tensor& g) {
  Shape want = x.shape();
  if (!want.empty()) want.back() = 1;
  if (g.shape() != want || g.dtype() != x.dtype()) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << slot << " is " << g.dtype() << " " << shape_to_string(g.shape()) << ", want "
        << x.dtype() << " " << shape_to_string(want);
  }
}

// Inputs X, Label, Y@GRAD; output X@GRAD.
void run_cross_entropy_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), label = c.input(1), g = c.input(2);
  check_loss_grad("cross_entropy_grad", "Y@GRAD", x, g);
  c.set_output(0, cross_entropy_grad(x, label, g, a.b("soft_label"), a.i("ignore_index"),
                                     c.options(x.numel())));
}

void infer_grad_like_first(const AttrReader&, InferCall& c) { c.set_output(0, c.input(0)); }

void infer_softmax_with_cross_entropy(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  const TensorInfo loss =
      infer_loss("softmax_with_cross_entropy", "Logits", x, c.input(1), a.b("soft_label"));
  c.set_output(0, x);
  c.set_output(1, loss);
}

void run_softmax_with_cross_entropy(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_softmax_with_cross_entropy, a, c);
  const Tensor x = c.input(0);
  SoftmaxWithCrossEntropyResult r = softmax_with_cross_entropy(
      x, c.input(1), a.b("soft_label"), a.i("ignore_index"), c.options(2 * x.numel()));
  c.set_output(0, std::move(r.softmax));
  c.set_output(1, std::move(r.loss));
}

void grad_softmax_with_cross_entropy(const AttrReader&, GradCall& c) {
  if (c.output_grad(0).valid()) {
    CHANFLOW_OP_THROW(Error, "softmax_with_cross_entropy")
        << "a gradient reaches Softmax, but only Loss is differentiated (use a softmax op for "
           "probabilities that need a gradient)";
  }
  emit_grad_op(c, "softmax_with_cross_entropy_grad", {"Label"}, {"Softmax"}, {"Loss"}, {"Logits"});
}

// Inputs Label, Softmax, Loss@GRAD; output Logits@GRAD.
void infer_softmax_with_cross_entropy_grad(const AttrReader&, InferCall& c) {
  c.set_output(0, c.input(1));
}

void run_softmax_with_cross_entropy_grad(const AttrReader& a, KernelCall& c) {
  const Tensor label = c.input(0), softmax = c.input(1), g = c.input(2);
  check_loss_grad("softmax_with_cross_entropy_grad", "Loss@GRAD", softmax, g);
  c.set_output(0, softmax_with_cross_entropy_grad(softmax, label, g, a.b("soft_label"),
                                                  a.i("ignore_index"), c.options(softmax.numel())));
}

// ---- accuracy and top_k -------------------------------------------------------------------
// Inputs Out (the top-k values), Indices, Label; outputs Accuracy, Correct, Total.
void infer_accuracy(const AttrReader&, InferCall& c) {
  const TensorInfo& out = c.input(0);
  const TensorInfo& idx = c.input(1);
  const TensorInfo& label = c.input(2);
  require_dtype(idx, DType::kInt64, "accuracy", "Indices", "top_k's indices");
  require_dtype(label, DType::kInt64, "accuracy", "Label", "class indices");
  if (idx.shape.size() != 2 || label.shape.size() != 2 || extents_differ(label.shape[1], 1) ||
      extents_differ(label.shape[0], idx.shape[0])) {
    CHANFLOW_OP_THROW(ShapeError, "accuracy")
        << "Indices must be (N, k) and Label (N, 1), got " << shape_to_string(idx.shape) << " and "
        << shape_to_string(label.shape);
  }
  if (out.shape.size() != 2 || extents_differ(out.shape[0], idx.shape[0]) ||
      extents_differ(out.shape[1], idx.shape[1])) {
    CHANFLOW_OP_THROW(ShapeError, "accuracy")
        << "Out " << shape_to_string(out.shape) << " must have Indices' shape "
        << shape_to_string(idx.shape);
  }
  c.set_output(0, TensorInfo{DType::kFloat32, {1}});
  c.set_output(1, TensorInfo{DType::kInt32, {1}});
  c.set_output(2, TensorInfo{DType::kInt32, {1}});
}

void run_accuracy(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_accuracy, a, c);
  const Tensor idx = c.input(1);
  AccuracyResult r = accuracy(idx, c.input(2), c.options(idx.numel()));
  c.set_output(0, std::move(r.accuracy));
  c.set_output(1, std::move(r.correct));
  c.set_output(2, std::move(r.total));
}

void infer_top_k(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64 && x.dtype != DType::kInt32 &&
      x.dtype != DType::kInt64) {
    CHANFLOW_OP_THROW(TypeError, "top_k")
        << "X must be FP32, FP64, INT32 or INT64, it is " << x.dtype;
  }
  if (x.shape.empty()) CHANFLOW_OP_THROW(ShapeError, "top_k") << "X must have rank >= 1";
  const int64_t k = a.i("k");
  if (x.shape.back() >= 0 && k > x.shape.back()) {
    CHANFLOW_OP_THROW(ShapeError, "top_k")
        << "k " << k << " exceeds the last extent of X " << shape_to_string(x.shape);
  }
  TensorInfo out{x.dtype, x.shape};
  out.shape.back() = k;
  c.set_output(0, out);
  out.dtype = DType::kInt64;
  c.set_output(1, out);
}

void run_top_k(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_top_k, a, c);
  const Tensor x = c.input(0);
  TopKResult r = top_k(x, a.i("k"), c.options(x.numel()));
  c.set_output(0, std::move(r.values));
  c.set_output(1, std::move(r.indices));
}

// ---- leaky_relu ---------------------------------------------------------------------------
void infer_float_x(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  require_float(x, a.schema().type(), "X");
  c.set_output(0, x);
}

void run_leaky_relu(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_float_x, a, c);
  const Tensor x = c.input(0);
  c.set_output(0, leaky_relu(x, static_cast<float>(a.f("alpha")), c.options(x.numel())));
}

void grad_leaky_relu(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "leaky_relu_grad", {"X"}, {}, {"Out"}, {"X"});
}

// Inputs X, Out@GRAD; output X@GRAD.
void run_leaky_relu_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), g = c.input(1);
  if (x.shape() != g.shape() || x.dtype() != g.dtype()) {
    CHANFLOW_OP_THROW(ShapeError, "leaky_relu_grad")
        << "Out@GRAD is " << g.dtype() << " " << shape_to_string(g.shape()) << " but X is "
        << x.dtype() << " " << shape_to_string(x.shape());
  }
  c.set_output(0, leaky_relu_grad(x, g, static_cast<float>(a.f("alpha")), c.options(x.numel())));
}

// ---- concat and split ---------------------------------------------------------------------
int64_t normalise_axis(int64_t axis, size_t rank, const char* op) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    CHANFLOW_OP_THROW(ShapeError, op) << "axis " << axis << " is out of range for rank " << r;
  }
  return axis < 0 ? axis + r : axis;
}

// Sets output slot 0's values to the parts of `t` of `extents` along `axis`: split_sections
// (chunked) when every part is wanted, else a copy of each wanted part (a graph node's).
void set_parts(KernelCall& c, const Tensor& t, int64_t axis, const std::vector<int64_t>& extents) {
  bool all = true;
  for (size_t i = 0; i < extents.size(); ++i) all = all && c.wants_value(0, i);
  if (all) {
    std::vector<Tensor> parts = split_sections(t, extents, axis, c.options(t.numel()));
    for (size_t i = 0; i < parts.size(); ++i) c.set_output(0, std::move(parts[i]), i);
    return;
  }
  int64_t offset = 0;
  for (size_t i = 0; i < extents.size(); ++i) {
    if (c.wants_value(0, i)) c.set_output(0, t.slice(axis, offset, offset + extents[i]).clone(), i);
    offset += extents[i];
  }
}

void infer_concat(const AttrReader& a, InferCall& c) {
  const size_t n = c.num_inputs(0);
  if (n == 0) CHANFLOW_OP_THROW(ShapeError, "concat") << "X has no tensors";
  TensorInfo out = c.input(0);
  if (out.shape.empty()) CHANFLOW_OP_THROW(ShapeError, "concat") << "X[0] must have rank >= 1";
  const auto axis = static_cast<size_t>(normalise_axis(a.i("axis"), out.shape.size(), "concat"));
  for (size_t i = 1; i < n; ++i) {
    const TensorInfo& t = c.input(0, i);
    if (t.dtype != out.dtype) {
      CHANFLOW_OP_THROW(TypeError, "concat")
          << "X[" << i << "] is " << t.dtype << " but X[0] is " << out.dtype;
    }
    bool fits = t.shape.size() == out.shape.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d) {
      if (d != axis) fits = !extents_differ(t.shape[d], out.shape[d]);
      if (d != axis && out.shape[d] < 0) out.shape[d] = t.shape[d];
    }
    if (!fits) {
      CHANFLOW_OP_THROW(ShapeError, "concat")
          << "X[" << i << "] " << shape_to_string(t.shape) << " does not fit X[0] "
          << shape_to_string(c.input(0).shape) << " outside axis " << axis;
    }
    out.shape[axis] =
        out.shape[axis] < 0 || t.shape[axis] < 0 ? -1 : out.shape[axis] + t.shape[axis];
  }
  c.set_output(0, out);
}

void run_concat(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_concat, a, c);
  std::vector<Tensor> xs;
  int64_t work = 0;
  for (size_t i = 0; i < c.num_inputs(0); ++i) {
    xs.push_back(c.input(0, i));
    work += xs.back().numel();
  }
  c.set_output(0, concat(xs, a.i("axis"), c.options(work)));
}

void grad_concat(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "concat_grad", {"X"}, {}, {"Out"}, {"X"});
}

// Inputs X (n), Out@GRAD; outputs X@GRAD (n): the gradient cut at X's extents along axis.
void infer_concat_grad(const AttrReader&, InferCall& c) {
  for (size_t i = 0; i < c.num_inputs(0); ++i) c.set_output(0, c.input(0, i), i);
}

void run_concat_grad(const AttrReader& a, KernelCall& c) {
  const Tensor g = c.input(1);
  const int64_t axis = normalise_axis(a.i("axis"), static_cast<size_t>(g.ndim()), "concat_grad");
  std::vector<int64_t> extents;
  int64_t total = 0;
  for (size_t i = 0; i < c.num_inputs(0); ++i) {
    const Tensor x = c.input(0, i);
    extents.push_back(x.ndim() == g.ndim() ? x.shape()[static_cast<size_t>(axis)] : -1);
    total += extents.back();
    if (extents.back() < 0 || total > g.shape()[static_cast<size_t>(axis)]) {
      CHANFLOW_OP_THROW(ShapeError, "concat_grad")
          << "X[" << i << "] " << shape_to_string(x.shape()) << " does not fit Out@GRAD "
          << shape_to_string(g.shape()) << " along axis " << axis;
    }
  }
  set_parts(c, g, axis, extents);
}

// The extents split gives along the axis of extent `extent` (-1 unknown) into `count` outputs.
std::vector<int64_t> split_extents(const AttrReader& a, int64_t extent, size_t count) {
  const int64_t num = a.i("num");
  const std::vector<int64_t> sections = a.ints("sections");
  if ((num > 0) == !sections.empty()) {
    CHANFLOW_OP_THROW(Error, "split") << "exactly one of num (" << num << ") and sections ("
                                      << sections.size() << " entries) must be given";
  }
  const size_t want = num > 0 ? static_cast<size_t>(num) : sections.size();
  if (count != want) {
    CHANFLOW_OP_THROW(ShapeError, "split") << "Out has " << count << " tensors but "
                                           << (num > 0 ? "num" : "sections") << " makes " << want;
  }
  if (num > 0) {
    if (extent >= 0 && extent % num != 0) {
      CHANFLOW_OP_THROW(ShapeError, "split") << "num " << num << " does not divide the extent "
                                             << extent << " of axis " << a.i("axis");
    }
    return std::vector<int64_t>(want, extent < 0 ? -1 : extent / num);
  }
  std::vector<int64_t> out = sections;
  int64_t known = 0, unknown = 0;
  for (int64_t s : sections) {
    if (s < -1) CHANFLOW_OP_THROW(ShapeError, "split") << "sections entry " << s << " is below -1";
    if (s == -1)
      ++unknown;
    else
      known += s;
  }
  if (unknown > 1) CHANFLOW_OP_THROW(ShapeError, "split") << "sections has more than one -1";
  if (extent >= 0 && (unknown == 0 ? known != extent : known > extent)) {
    CHANFLOW_OP_THROW(ShapeError, "split")
        << "sections sum to " << known << " but axis " << a.i("axis") << " has extent " << extent;
  }
  for (int64_t& s : out) {
    if (s == -1) s = extent < 0 ? -1 : extent - known;
  }
  return out;
}

std::string check_sections(const Attr& a) {
  for (int64_t s : a.as_ints()) {
    if (s < -1) return "entries must be >= 0 (one may be -1), got " + std::to_string(s);
  }
  return {};
}

void infer_split(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  if (x.shape.empty()) CHANFLOW_OP_THROW(ShapeError, "split") << "X must have rank >= 1";
  const auto axis = static_cast<size_t>(normalise_axis(a.i("axis"), x.shape.size(), "split"));
  const std::vector<int64_t> ext = split_extents(a, x.shape[axis], c.num_outputs(0));
  for (size_t i = 0; i < ext.size(); ++i) {
    TensorInfo o = x;
    o.shape[axis] = ext[i];
    c.set_output(0, o, i);
  }
}

void run_split(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_split, a, c);
  const Tensor x = c.input(0);
  const int64_t axis = normalise_axis(a.i("axis"), static_cast<size_t>(x.ndim()), "split");
  const std::vector<int64_t> ext =
      split_extents(a, x.shape()[static_cast<size_t>(axis)], c.num_outputs(0));
  set_parts(c, x, axis, ext);
}

// Paddle's: the gradient of X is the concat of the outputs' gradients, zeros (fill_zeros_like)
// for an output no gradient reaches.
void grad_split(const AttrReader& a, GradCall& c) {
  if (!c.needs_grad(0)) return;
  std::vector<GradValue> outs, parts;
  bool any = false;
  for (size_t i = 0;; ++i) {
    const GradValue o = c.output(0, i);
    if (!o.valid()) break;
    outs.push_back(o);
    parts.push_back(c.output_grad(0, i));
    any = any || parts.back().valid();
  }
  if (!any) return;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].valid()) parts[i] = c.emit("fill_zeros_like", {{"X", {outs[i]}}}, {}, {"Out"})[0];
  }
  const GradValue gx =
      c.emit("concat", {{"X", parts}}, {{"axis", Attr::i(a.i("axis"))}}, {"Out"})[0];
  if (gx.valid()) c.set_input_grad(0, gx);
}

// ---- flatten ------------------------------------------------------------------------------
void infer_flatten(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  const int64_t axis = a.i("axis");
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (axis > rank) {
    CHANFLOW_OP_THROW(ShapeError, "flatten")
        << "axis " << axis << " exceeds the rank of X " << shape_to_string(x.shape);
  }
  c.set_output(
      0,
      TensorInfo{x.dtype, {known_product(x.shape, 0, axis), known_product(x.shape, axis, rank)}});
}

void run_flatten(const AttrReader& a, KernelCall& c) {
  check_inputs(infer_flatten, a, c);
  const Tensor x = c.input(0);
  const int64_t axis = a.i("axis");
  c.set_output(
      0, x.reshape({shape_product(x.shape(), 0, axis), shape_product(x.shape(), axis, x.ndim())}));
}

void grad_flatten(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "flatten_grad", {"X"}, {}, {"Out"}, {"X"});
}

// Inputs X, Out@GRAD; output X@GRAD: the gradient in X's shape.
void run_flatten_grad(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0), g = c.input(1);
  if (g.numel() != x.numel() || g.dtype() != x.dtype()) {
    CHANFLOW_OP_THROW(ShapeError, "flatten_grad")
        << "Out@GRAD " << g.dtype() << " " << shape_to_string(g.shape()) << " does not fit X "
        << x.dtype() << " " << shape_to_string(x.shape());
  }
  c.set_output(0, g.reshape(x.shape()));
}

// ---- split_lod_tensor / merge_lod_tensor (what fluid.layers.IfElse is built from) ----------
// chanflow's tensors carry no LoD, so level 0 is the rows (dim 0) and level must be 0. Mask is a
// BOOL column [N, 1] (Paddle's shape rule), one entry per row of X.
std::string check_level(const Attr& a) {
  return a.as_int() == 0 ? ""
                         : "must be 0 (chanflow's tensors carry no LoD; level 0 is the rows), "
                           "got " +
                               std::to_string(a.as_int());
}

void infer_check_mask(const char* op, const TensorInfo& m) {
  if (m.dtype != DType::kBool)
    CHANFLOW_OP_THROW(TypeError, op) << "Mask must be BOOL, it is " << m.dtype;
  if (m.shape.size() != 2 || (m.shape[1] >= 0 && m.shape[1] != 1)) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << "Mask must be a column [N, 1], it has shape " << shape_to_string(m.shape);
  }
}

// The mask's rows as 0/1, checked against the `rows` rows of `slot`.
std::vector<uint8_t> mask_rows(const char* op, const Tensor& mask, int64_t rows, const char* slot) {
  infer_check_mask(op, TensorInfo{mask.dtype(), mask.shape()});
  if (mask.numel() != rows) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << "Mask has " << mask.numel() << " rows but " << slot << " has " << rows;
  }
  const Tensor m = mask.contiguous();
  const bool* p = m.data<bool>();
  return std::vector<uint8_t>(p, p + rows);
}

// Copies row `from` of `src` to row `to` of `dst` (both contiguous, `row_bytes` per row).
void copy_row(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t row_bytes) {
  if (row_bytes == 0) return;
  const auto* s = static_cast<const char*>(src.get()->raw_data());
  auto* d = static_cast<char*>(dst.get()->raw_data());
  std::memcpy(d + to * row_bytes, s + from * row_bytes, static_cast<size_t>(row_bytes));
}

// X, Mask -> OutTrue (the rows of X where Mask is true, in order), OutFalse (the others).
void infer_split_lod_tensor(const AttrReader&, InferCall& c) {
  const TensorInfo& x = c.input(0);
  infer_check_mask("split_lod_tensor", c.input(1));
  if (x.shape.empty()) CHANFLOW_OP_THROW(ShapeError, "split_lod_tensor") << "X must have rank >= 1";
  TensorInfo out = x;
  out.shape[0] = -1;  // how many rows go each way is the mask's values
  c.set_output(0, out);
  c.set_output(1, out);
}
void run_split_lod_tensor(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0).contiguous();
  if (x.ndim() < 1) CHANFLOW_OP_THROW(ShapeError, "split_lod_tensor") << "X must have rank >= 1";
  const int64_t rows = x.shape()[0];
  const std::vector<uint8_t> m = mask_rows("split_lod_tensor", c.input(1), rows, "X");
  const auto n_true = static_cast<int64_t>(std::count(m.begin(), m.end(), uint8_t{1}));
  const int64_t row_bytes = rows == 0 ? 0 : x.nbytes() / rows;
  Shape st = x.shape(), sf = x.shape();
  st[0] = n_true;
  sf[0] = rows - n_true;
  Tensor t = Tensor::empty(st, x.dtype()), f = Tensor::empty(sf, x.dtype());
  int64_t it = 0, jf = 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (m[static_cast<size_t>(i)] != 0) {
      copy_row(x, i, t, it++, row_bytes);
    } else {
      copy_row(x, i, f, jf++, row_bytes);
    }
  }
  c.set_output(0, t);
  c.set_output(1, f);
}

// X, Mask, InTrue, InFalse -> Out: row i of Out is the next row of InTrue when Mask[i], else of
// InFalse. X gives only the row count (Paddle read its LoD); IfElse passes its condition.
void infer_merge_lod_tensor(const AttrReader&, InferCall& c) {
  const TensorInfo& x = c.input(0);
  infer_check_mask("merge_lod_tensor", c.input(1));
  const TensorInfo& t = c.input(2);
  const TensorInfo& f = c.input(3);
  if (t.dtype != f.dtype) {
    CHANFLOW_OP_THROW(TypeError, "merge_lod_tensor")
        << "InTrue is " << t.dtype << " but InFalse is " << f.dtype;
  }
  if (t.shape.empty() || x.shape.empty()) {
    CHANFLOW_OP_THROW(ShapeError, "merge_lod_tensor") << "X and InTrue must have rank >= 1";
  }
  TensorInfo out = t;
  out.shape[0] = x.shape[0];
  c.set_output(0, out);
}
void run_merge_lod_tensor(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0);
  const Tensor t = c.input(2).contiguous(), f = c.input(3).contiguous();
  if (x.ndim() < 1) CHANFLOW_OP_THROW(ShapeError, "merge_lod_tensor") << "X must have rank >= 1";
  const int64_t rows = x.shape()[0];
  const std::vector<uint8_t> m = mask_rows("merge_lod_tensor", c.input(1), rows, "X");
  if (t.dtype() != f.dtype()) {
    CHANFLOW_OP_THROW(TypeError, "merge_lod_tensor")
        << "InTrue is " << t.dtype() << " but InFalse is " << f.dtype();
  }
  const auto n_true = static_cast<int64_t>(std::count(m.begin(), m.end(), uint8_t{1}));
  auto check_part = [&](const Tensor& part, const char* slot, int64_t want) {
    if (part.ndim() < 1 || part.shape()[0] != want) {
      CHANFLOW_OP_THROW(ShapeError, "merge_lod_tensor")
          << slot << " has shape " << shape_to_string(part.shape()) << " but Mask selects " << want
          << " rows for it";
    }
  };
  check_part(t, "InTrue", n_true);
  check_part(f, "InFalse", rows - n_true);
  if (!std::equal(t.shape().begin() + 1, t.shape().end(), f.shape().begin() + 1, f.shape().end())) {
    CHANFLOW_OP_THROW(ShapeError, "merge_lod_tensor")
        << "InTrue " << shape_to_string(t.shape()) << " and InFalse " << shape_to_string(f.shape())
        << " differ past dim 0";
  }
  Shape so = t.shape();
  so[0] = rows;
  Tensor out = Tensor::empty(so, t.dtype());
  const int64_t row_bytes = rows == 0 ? 0 : out.nbytes() / rows;
  int64_t it = 0, jf = 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (m[static_cast<size_t>(i)] != 0) {
      copy_row(t, it++, out, i, row_bytes);
    } else {
      copy_row(f, jf++, out, i, row_bytes);
    }
  }
  c.set_output(0, out);
}

constexpr const char* kIfElseNoGrad =
    "IfElse's branches run in conditional_blocks, which chanflow does not differentiate";

// ---- fill_zeros_like ----------------------------------------------------------------------
void run_fill_zeros_like(const AttrReader&, KernelCall& c) {
  const Tensor x = c.input(0);
  c.set_output(0, Tensor::zeros(x.shape(), x.dtype()));
}

// The output does not depend on X's values: no gradient flows (none is emitted).
void grad_nothing(const AttrReader&, GradCall&) {}

}  // namespace

std::vector<OpDef> nn_rows() {
  std::vector<OpDef> rows;
  auto add = [&](const OpDefBuilder& b) { rows.push_back(b.build()); };

  OpDefBuilder bn("batch_norm");
  bn.doc(
        "Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias per channel, with the batch's "
        "statistics (training; the running Mean and Variance updated into MeanOut and "
        "VarianceOut) or the given ones (is_test)")
      .input("X")
      .input("Scale")
      .input("Bias")
      .input("Mean", true, false, "the running mean (MeanOut names the same variable)")
      .input("Variance", true, false, "the running variance (VarianceOut names the same variable)")
      .output("Y")
      .output("MeanOut", false, false, "Mean * momentum + batch mean * (1 - momentum)")
      .output("VarianceOut", false, false, "Variance * momentum + batch var * (1 - momentum)")
      .output("SavedMean", false, false, "the batch mean, for the gradient")
      .output("SavedVariance", false, false, "1 / sqrt(batch var + epsilon), for the gradient")
      .attr("momentum", T::kFloat, f_default(0.9), "the running statistics' decay",
            in_range(0.0, 1.0))
      .attr("epsilon", T::kFloat, f_default(1e-5), "added to the variance (Paddle: <= 1e-3)",
            in_range(0.0, 1e-3))
      .attr("is_test", T::kBoolean, b_default(false), "normalise with Mean and Variance")
      .attr("data_layout", T::kString, s_default("NCHW"), "where the channel axis is", check_layout)
      .infer(infer_batch_norm)
      .kernel(run_batch_norm)
      .grad(grad_batch_norm);
  add(bn);
  add(bn.grad_op("batch_norm_grad", {"X", "Scale"}, {"SavedMean", "SavedVariance"}, {"Y"},
                 {"X", "Scale", "Bias"})
          .infer(infer_batch_norm_grad)
          .kernel(run_batch_norm_grad));

  OpDefBuilder dropout_row("dropout");
  dropout_row
      .doc(
          "Out = X * Mask with Mask 0 with probability dropout_prob (training), "
          "X * (1 - dropout_prob) (is_test)")
      .input("X")
      .output("Out")
      .output("Mask", false, false, "1 where X is kept, 0 where dropped (X's dtype)")
      .attr("dropout_prob", T::kFloat, f_default(0.5), "the probability of dropping",
            in_range(0.0, 1.0))
      .attr("is_test", T::kBoolean, b_default(false), "scale by 1 - dropout_prob instead")
      .attr("seed", T::kInt, i_default(0), "the mask's seed when fix_seed")
      .attr("fix_seed", T::kBoolean, b_default(false),
            "use seed; else each run takes the next seed of a per-process sequence")
      .draws_seed()
      .infer(infer_dropout)
      .kernel(run_dropout)
      .grad(grad_dropout);
  add(dropout_row);
  add(dropout_row.grad_op("dropout_grad", {}, {"Mask"}, {"Out"}, {"X"})
          .infer(infer_dropout_grad)
          .kernel(run_dropout_grad));

  OpDefBuilder ce("cross_entropy");
  ce.doc("Y = -log(X[Label]) per row (hard labels) or -sum(Label * log(X)) (soft_label)")
      .input("X", true, false, "probabilities, classes on the last axis")
      .input("Label")
      .output("Y")
      .attr("soft_label", T::kBoolean, b_default(false), "Label is a distribution like X")
      .attr("ignore_index", T::kInt, i_default(-100), "a hard label whose row gets loss 0")
      .infer(infer_cross_entropy)
      .kernel(run_cross_entropy)
      .grad(grad_cross_entropy);
  add(ce);
  add(ce.grad_op("cross_entropy_grad", {"X", "Label"}, {}, {"Y"}, {"X"})
          .infer(infer_grad_like_first)
          .kernel(run_cross_entropy_grad));

  OpDefBuilder sce("softmax_with_cross_entropy");
  sce.doc("Softmax = softmax(Logits) on the last axis; Loss = its cross entropy with Label")
      .input("Logits")
      .input("Label")
      .output("Softmax")
      .output("Loss")
      .attr("soft_label", T::kBoolean, b_default(false), "Label is a distribution like Logits")
      .attr("ignore_index", T::kInt, i_default(-100), "a hard label whose row gets loss 0")
      .infer(infer_softmax_with_cross_entropy)
      .kernel(run_softmax_with_cross_entropy)
      .grad(grad_softmax_with_cross_entropy);
  add(sce);
  add(sce.grad_op("softmax_with_cross_entropy_grad", {"Label"}, {"Softmax"}, {"Loss"}, {"Logits"})
          .infer(infer_softmax_with_cross_entropy_grad)
          .kernel(run_softmax_with_cross_entropy_grad));

  add(OpDefBuilder("accuracy")
          .doc("Accuracy = the fraction of rows whose Label is among their top-k Indices")
          .input("Out", true, false, "top_k's values (checked for shape only)")
          .input("Indices")
          .input("Label")
          .output("Accuracy")
          .output("Correct", false)
          .output("Total", false)
          .infer(infer_accuracy)
          .kernel(run_accuracy)
          .no_grad("accuracy counts correct predictions: it has no gradient"));

  add(OpDefBuilder("top_k")
          .doc("Out, Indices = the k largest elements of each row (last axis), descending")
          .input("X")
          .output("Out")
          .output("Indices", false)
          .attr("k", T::kInt, i_default(1), "how many",
                [](const Attr& a) { return check_at_least(a, 1); })
          .infer(infer_top_k)
          .kernel(run_top_k)
          .no_grad("top_k has no gradient rule (Paddle 1.x's has none either)"));

  OpDefBuilder lr("leaky_relu");
  lr.doc("Out = max(X, alpha * X)")
      .input("X")
      .output("Out")
      .attr("alpha", T::kFloat, f_default(0.02), "the slope below 0")
      .infer(infer_float_x)
      .kernel(run_leaky_relu)
      .grad(grad_leaky_relu);
  add(lr);
  add(lr.grad_op("leaky_relu_grad", {"X"}, {}, {"Out"}, {"X"})
          .infer(infer_grad_like_first)
          .kernel(run_leaky_relu_grad));

  OpDefBuilder cat("concat");
  cat.doc("Out = X[0], X[1], ... joined along axis")
      .input("X", true, true)
      .output("Out")
      .attr("axis", T::kInt, i_default(0), "the axis to join along (negative: from the end)")
      .infer(infer_concat)
      .kernel(run_concat)
      .grad(grad_concat);
  add(cat);
  add(cat.grad_op("concat_grad", {"X"}, {}, {"Out"}, {"X"})
          .infer(infer_concat_grad)
          .kernel(run_concat_grad));

  add(OpDefBuilder("split")
          .doc("Out = X cut along axis into num equal parts or parts of the sections' extents")
          .input("X")
          .output("Out", true, true)
          .attr("num", T::kInt, i_default(0), "equal parts (0: use sections)",
                [](const Attr& a) { return check_at_least(a, 0); })
          .attr("sections", T::kInts, ints_default({}), "the parts' extents (one may be -1)",
                check_sections)
          .attr("axis", T::kInt, i_default(0), "the axis to cut (negative: from the end)")
          .infer(infer_split)
          .kernel(run_split)
          .grad(grad_split));

  OpDefBuilder fl("flatten");
  fl.doc("Out = X as a matrix: the extents before axis make the rows, the rest the columns")
      .input("X")
      .output("Out")
      .attr("axis", T::kInt, i_default(1), "where the columns start (0 <= axis <= rank)",
            [](const Attr& a) { return check_at_least(a, 0); })
      .infer(infer_flatten)
      .kernel(run_flatten)
      .grad(grad_flatten);
  add(fl);
  add(fl.grad_op("flatten_grad", {"X"}, {}, {"Out"}, {"X"})
          .infer(infer_grad_like_first)
          .kernel(run_flatten_grad));

  add(OpDefBuilder("split_lod_tensor")
          .doc("OutTrue = the rows of X where Mask is true, OutFalse the others, in order "
               "(level 0 of a tensor without LoD: its rows)")
          .input("X")
          .input("Mask", true, false, "BOOL [N, 1], one entry per row of X")
          .output("OutTrue")
          .output("OutFalse")
          .attr("level", T::kInt, i_default(0), "the LoD level to split (0: the rows)", check_level)
          .infer(infer_split_lod_tensor)
          .kernel(run_split_lod_tensor)
          .no_grad(kIfElseNoGrad));

  add(OpDefBuilder("merge_lod_tensor")
          .doc("Out row i = the next row of InTrue where Mask[i] is true, else of InFalse; X "
               "gives the row count (split_lod_tensor's inverse)")
          .input("X", true, false, "its dim 0 is Out's (IfElse passes the condition)")
          .input("Mask", true, false, "BOOL [N, 1]")
          .input("InTrue")
          .input("InFalse")
          .output("Out")
          .attr("level", T::kInt, i_default(0), "the LoD level to merge (0: the rows)", check_level)
          .infer(infer_merge_lod_tensor)
          .kernel(run_merge_lod_tensor)
          .no_grad(kIfElseNoGrad));

  add(OpDefBuilder("fill_zeros_like")
          .doc("Out = zeros of X's shape and dtype")
          .input("X")
          .output("Out")
          .infer(infer_like_first_input)
          .kernel(run_fill_zeros_like)
          .grad(grad_nothing));
  return rows;
}

}  // namespace chanflow
