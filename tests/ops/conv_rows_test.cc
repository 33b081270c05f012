// conv2d and pool2d as program ops: the executor's values are the tensor kernels', backward
// through them matches finite differences, the verifier checks their attributes by Paddle's
// names and a shape no value can satisfy is a typed error naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ir/verifier.h"
#include "chanflow/ops/backward.h"
#include "chanflow/tensor/conv.h"
#include "chanflow/tensor/random.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;

namespace {

// x (2, 3, 7, 6) -> conv2d (4, 3, 3, 3), stride 2, pad 1 -> pool2d avg 2x2 -> mean.
cf::Program conv_pool(const cf::OpDesc::Attrs& conv_attrs, const cf::OpDesc::Attrs& pool_attrs) {
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {2, 3, 7, 6});
  b.parameter("w", DType::kFloat64, {4, 3, 3, 3});
  for (const char* n : {"c", "p", "loss"}) b.var(n, DType::kFloat64, {});
  b.append_op("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"c"}}}, conv_attrs);
  b.append_op("pool2d", {{"X", {"c"}}}, {{"Out", {"p"}}}, pool_attrs);
  b.append_op("mean", {{"X", {"p"}}}, {{"Out", {"loss"}}});
  return b.build();
}

const cf::OpDesc::Attrs kConv = {{"strides", Attr::ints({2, 1})}, {"paddings", Attr::ints({1, 1})}};
const cf::OpDesc::Attrs kPool = {{"pooling_type", Attr::s("avg")}, {"ksize", Attr::ints({2, 2})}};

TEST(ConvRows, ProgramValuesAreTheKernels) {
  const Tensor x = cf::normal({2, 3, 7, 6}, 0, 1, 1, DType::kFloat64);
  const Tensor w = cf::normal({4, 3, 3, 3}, 0, 1, 2, DType::kFloat64);
  cf::Executor ex;
  auto out = ex.run(conv_pool(kConv, kPool), {{"x", x}, {"w", w}}, {"c", "p"});
  cf::Conv2dParams cp;
  cp.strides = {2, 1};
  cp.paddings = {1, 1};
  const Tensor c = cf::conv2d(x, w, cp);
  EXPECT_TRUE(out.at("c").equal_to(c));
  cf::Pool2dParams pp;
  pp.type = cf::PoolType::kAvg;
  pp.ksize = {2, 2};
  EXPECT_TRUE(out.at("p").equal_to(cf::pool2d(c, pp)));
}

TEST(ConvRows, BackwardMatchesFiniteDifferences) {
  const cf::Program p = conv_pool(kConv, kPool);
  cf::BackwardResult r = cf::append_backward(p, "loss");
  ASSERT_EQ(r.params_and_grads.size(), 1u);
  const Tensor x = cf::normal({2, 3, 7, 6}, 0, 1, 3, DType::kFloat64);
  const Tensor w = cf::normal({4, 3, 3, 3}, 0, 1, 4, DType::kFloat64);
  cf::Executor ex;
  const Tensor g = ex.run(r.program, {{"x", x}, {"w", w}}, {"w@GRAD"}).at("w@GRAD").contiguous();
  for (int64_t k = 0; k < w.numel(); k += 7) {
    Tensor wp = w.clone(), wm = w.clone();
    wp.data<double>()[k] += 1e-6;
    wm.data<double>()[k] -= 1e-6;
    auto loss = [&](const Tensor& wv) {
      return ex.run(p, {{"x", x}, {"w", wv}}, {"loss"}).at("loss").item<double>();
    };
    const double fd = (loss(wp) - loss(wm)) / 2e-6;
    EXPECT_NEAR(g.data<double>()[k], fd, 1e-6 * std::max(1.0, std::abs(fd))) << k;
  }
  std::vector<std::string> types;
  for (const cf::OpDesc& op : r.program.block(0)->ops) types.push_back(op.type());
  EXPECT_NE(std::find(types.begin(), types.end(), "conv2d_grad"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "pool2d_grad"), types.end());
}

// The ProgramError message building (ProgramBuilder::build verifies) and verifying give, ""
// when the program verifies.
template <class Build>
std::string verify_error(Build build) {
  try {
    cf::verify(build());
  } catch (const cf::ProgramError& e) {
    return e.what();
  }
  return "";
}

TEST(ConvRows, TheVerifierChecksTheirAttributes) {
  auto with = [](cf::OpDesc::Attrs a, const std::string& n, Attr v) {
    a.emplace_back(n, v);
    return a;
  };
  EXPECT_NE(verify_error([&] {
              return conv_pool(with({}, "strides", Attr::ints({0, 1})), kPool);
            }).find("strides"),
            std::string::npos);
  EXPECT_NE(
      verify_error([&] { return conv_pool(with({}, "groups", Attr::i(0)), kPool); }).find("groups"),
      std::string::npos);
  EXPECT_NE(verify_error([&] {
              return conv_pool(with({}, "paddings", Attr::ints({1})), kPool);
            }).find("paddings"),
            std::string::npos);
  EXPECT_NE(
      verify_error([&] {
        return conv_pool(kConv, {{"pooling_type", Attr::s("min")}, {"ksize", Attr::ints({2, 2})}});
      }).find("pooling_type"),
      std::string::npos);
  // ksize is required.
  EXPECT_NE(verify_error([&] {
              return conv_pool(kConv, {{"pooling_type", Attr::s("max")}});
            }).find("ksize"),
            std::string::npos);
  EXPECT_EQ(verify_error([&] { return conv_pool(kConv, kPool); }), "");
}

TEST(ConvRows, ShapesNoValueFitsAreTypedErrorsNamingTheOp) {
  cf::Executor ex;
  // 3 input channels in 2 groups.
  try {
    ex.run(conv_pool({{"groups", Attr::i(2)}}, kPool),
           {{"x", Tensor::zeros({2, 3, 7, 6}, DType::kFloat64)},
            {"w", Tensor::zeros({4, 3, 3, 3}, DType::kFloat64)}});
    FAIL() << "no error";
  } catch (const cf::ProgramError& e) {
    EXPECT_EQ(e.op_type(), "conv2d") << e.what();
  }
  // A 9x9 kernel larger than the padded 7x6 input.
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat32, {1, 1, 7, 6});
  b.var("w", DType::kFloat32, {1, 1, 9, 9});
  b.var("y", DType::kFloat32, {});
  b.append_op("conv2d", {{"Input", {"x"}}, {"Filter", {"w"}}}, {{"Output", {"y"}}});
  EXPECT_THROW(ex.run(b.build(), {{"x", Tensor::zeros({1, 1, 7, 6}, DType::kFloat32)},
                                  {"w", Tensor::zeros({1, 1, 9, 9}, DType::kFloat32)}}),
               cf::Error);
}

}  // namespace
