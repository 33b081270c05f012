// rows_conv.cc — convolution and pooling: conv2d, depthwise_conv2d and pool2d (Paddle 1.x's
// slots and attributes) with their gradient ops, on the tensor layer's kernels (tensor/conv.h).
#include "chanflow/tensor/conv.h"

#include "rows.h"
#include "shape_util.h"

namespace chanflow {
namespace {

std::string check_pair_at_least(const Attr& a, int64_t low, const char* what) {
  const std::vector<int64_t> v = a.as_ints();
  if (v.size() != 2) return "must have 2 values (height, width), got " + std::to_string(v.size());
  for (int64_t x : v) {
    if (x < low)
      return std::string(what) + " must be >= " + std::to_string(low) + ", got " +
             std::to_string(x);
  }
  return {};
}
std::string check_positive_pair(const Attr& a) { return check_pair_at_least(a, 1, "each value"); }
std::string check_non_negative_pair(const Attr& a) {
  return check_pair_at_least(a, 0, "each value");
}
std::string check_groups(const Attr& a) {
  return a.as_int() >= 1 ? "" : "must be >= 1, got " + std::to_string(a.as_int());
}

std::array<int64_t, 2> pair(const AttrReader& a, const char* name) {
  const std::vector<int64_t> v = a.ints(name);
  return {v.at(0), v.at(1)};
}

Conv2dParams conv_params(const AttrReader& a) {
  Conv2dParams p;
  p.strides = pair(a, "strides");
  p.paddings = pair(a, "paddings");
  p.dilations = pair(a, "dilations");
  p.groups = a.i("groups");
  return p;
}

void check_float(DType d, const std::string& op, const char* slot) {
  if (d != DType::kFloat32 && d != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, op) << slot << " must be FP32 or FP64, it is " << d;
  }
}

// ---- conv2d ---------------------------------------------------------------------------------
void infer_conv2d(const AttrReader& a, InferCall& c) {
  const TensorInfo& in = c.input(0);
  const TensorInfo& f = c.input(1);
  const std::string& op = a.schema().type();
  check_float(in.dtype, op, "Input");
  if (in.dtype != f.dtype) {
    CHANFLOW_OP_THROW(TypeError, op) << "Input is " << in.dtype << " but Filter is " << f.dtype;
  }
  c.set_output(0, TensorInfo{in.dtype, conv2d_output_shape(in.shape, f.shape, conv_params(a))});
}

int64_t conv_work(const Shape& out, const Shape& filter) {
  // Multiply-adds: every output element reads (C / groups) * KH * KW filter values.
  return shape_product(out, 0, static_cast<int64_t>(out.size())) *
         shape_product(filter, 1, static_cast<int64_t>(filter.size()));
}

void run_conv2d(const AttrReader& a, KernelCall& c) {
  const Tensor in = c.input(0), f = c.input(1);
  const Conv2dParams p = conv_params(a);
  const Shape out = conv2d_output_shape(in.shape(), f.shape(), p);
  c.set_output(0, conv2d(in, f, p, c.options(conv_work(out, f.shape()), WorkKind::kMultiplyAdds)));
}

// conv2d_grad: Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD.
void run_conv2d_grad(const AttrReader& a, KernelCall& c) {
  const Tensor in = c.input(0), f = c.input(1), g = c.input(2);
  const Conv2dParams p = conv_params(a);
  const int64_t work = conv_work(g.shape(), f.shape());
  if (c.wants(0)) {
    c.set_output(0,
                 conv2d_grad_input(g, f, in.shape(), p, c.options(work, WorkKind::kMultiplyAdds)));
  }
  if (c.wants(1)) {
    c.set_output(1,
                 conv2d_grad_filter(g, in, f.shape(), p, c.options(work, WorkKind::kMultiplyAdds)));
  }
}

void infer_conv2d_grad(const AttrReader& a, InferCall& c) {
  if (c.num_outputs(0) > 0) c.set_output(0, c.input(0));
  if (c.num_outputs(1) > 0) c.set_output(1, c.input(1));
  (void)a;
}

void grad_conv2d(const AttrReader& a, GradCall& c) {
  emit_grad_op(c, a.schema().type() + "_grad", {"Input", "Filter"}, {}, {"Output"},
               {"Input", "Filter"});
}

OpDefBuilder conv_schema(const char* type, const char* doc) {
  OpDefBuilder b(type);
  b.doc(doc)
      .input("Input", true, false, "(N, C, H, W)")
      .input("Filter", true, false, "(M, C / groups, KH, KW)")
      .output("Output", true, false, "(N, M, OH, OW)")
      .attr("strides", T::kInts, ints_default({1, 1}), "(height, width)", check_positive_pair)
      .attr("paddings", T::kInts, ints_default({0, 0}), "zeros on both sides (height, width)",
            check_non_negative_pair)
      .attr("dilations", T::kInts, ints_default({1, 1}), "(height, width)", check_positive_pair)
      .attr("groups", T::kInt, i_default(1), "input and output channels split into groups",
            check_groups)
      .attr("use_cudnn", T::kBoolean, b_default(false), "Paddle's kernel hint; ignored")
      .attr("data_format", T::kString, s_default("AnyLayout"), "Paddle's layout hint; NCHW")
      .attr("workspace_size_MB", T::kInt, i_default(4096), "Paddle's cuDNN hint; ignored")
      .attr("exhaustive_search", T::kBoolean, b_default(false), "Paddle's cuDNN hint; ignored")
      .attr("fuse_relu", T::kBoolean, b_default(false),
            "Paddle's MKL-DNN fusion; must be false (relu is its own op here)",
            [](const Attr& v) {
              return v.as_bool() ? "is not supported (write a relu op after the convolution)"
                                 : std::string();
            })
      .attr("is_test", T::kBoolean, b_default(false), "inference only; no effect")
      .infer(infer_conv2d)
      .kernel(run_conv2d)
      .grad(grad_conv2d);
  return b;
}

// ---- pool2d ---------------------------------------------------------------------------------
Pool2dParams pool_params(const AttrReader& a) {
  Pool2dParams p;
  const std::string t = a.s("pooling_type");
  p.type = t == "max" ? PoolType::kMax : PoolType::kAvg;
  p.ksize = pair(a, "ksize");
  p.strides = pair(a, "strides");
  p.paddings = pair(a, "paddings");
  p.global_pooling = a.b("global_pooling");
  p.ceil_mode = a.b("ceil_mode");
  p.exclusive = a.b("exclusive");
  return p;
}

void infer_pool2d(const AttrReader& a, InferCall& c) {
  const TensorInfo& x = c.input(0);
  check_float(x.dtype, "pool2d", "X");
  c.set_output(0, TensorInfo{x.dtype, pool2d_output_shape(x.shape, pool_params(a))});
}

void run_pool2d(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0);
  c.set_output(0, pool2d(x, pool_params(a), c.options(x.numel())));
}

// pool2d_grad: X, Out, Out@GRAD -> X@GRAD.
void run_pool2d_grad(const AttrReader& a, KernelCall& c) {
  const Tensor x = c.input(0), out = c.input(1), g = c.input(2);
  c.set_output(0, pool2d_grad(x, out, g, pool_params(a), c.options(x.numel())));
}

void infer_pool2d_grad(const AttrReader&, InferCall& c) { c.set_output(0, c.input(0)); }

void grad_pool2d(const AttrReader&, GradCall& c) {
  emit_grad_op(c, "pool2d_grad", {"X"}, {"Out"}, {"Out"}, {"X"});
}

std::string check_pooling_type(const Attr& a) {
  const std::string& v = a.as_string();
  return v == "max" || v == "avg" ? "" : "must be \"max\" or \"avg\", got \"" + v + "\"";
}

}  // namespace

std::vector<OpDef> conv_rows() {
  std::vector<OpDef> rows;
  for (const char* type : {"conv2d", "depthwise_conv2d"}) {
    OpDefBuilder fwd = conv_schema(
        type, std::string(type) == "conv2d"
                  ? "Output = the 2-D convolution (cross-correlation) of Input by Filter, NCHW"
                  : "conv2d with groups = C (one filter per input channel); the same kernel");
    rows.push_back(fwd.build());
    rows.push_back(fwd.grad_op(std::string(type) + "_grad", {"Input", "Filter"}, {}, {"Output"},
                               {"Input", "Filter"})
                       .infer(infer_conv2d_grad)
                       .kernel(run_conv2d_grad)
                       .build());
  }
  OpDefBuilder pool("pool2d");
  pool.doc("Out = max or average pooling of X over ksize windows, NCHW")
      .input("X", true, false, "(N, C, H, W)")
      .output("Out")
      .attr("pooling_type", T::kString, {}, "\"max\" or \"avg\"", check_pooling_type)
      .attr("ksize", T::kInts, {}, "the window (height, width)", check_positive_pair)
      .attr("global_pooling", T::kBoolean, b_default(false),
            "one window over the whole image (ksize and paddings ignored)")
      .attr("strides", T::kInts, ints_default({1, 1}), "(height, width)", check_positive_pair)
      .attr("paddings", T::kInts, ints_default({0, 0}), "(height, width)", check_non_negative_pair)
      .attr("exclusive", T::kBoolean, b_default(true),
            "avg pooling divides by the window's cells inside the image, not ksize")
      .attr("ceil_mode", T::kBoolean, b_default(false), "output extents rounded up")
      .attr("use_cudnn", T::kBoolean, b_default(false), "Paddle's kernel hint; ignored")
      .attr("data_format", T::kString, s_default("AnyLayout"), "Paddle's layout hint; NCHW")
      .infer(infer_pool2d)
      .kernel(run_pool2d)
      .grad(grad_pool2d);
  rows.push_back(pool.build());
  rows.push_back(pool.grad_op("pool2d_grad", {"X"}, {"Out"}, {"Out"}, {"X"})
                     .infer(infer_pool2d_grad)
                     .kernel(run_pool2d_grad)
                     .build());
  return rows;
}

}  // namespace chanflow
