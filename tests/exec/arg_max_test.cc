// arg_max run by the executor from .pbtxt text: axis (negative too), keepdims, flatten, INT32 and
// INT64 indices, first index on ties, NaN as the tensor layer treats it, inference, and run-time
// errors positioned at the op; the fuzz seed and examples/training/mlp_eval.pbtxt run with known
// answers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/tensor_obj.h"

namespace cf = chanflow;
using cf::DType;
using cf::Tensor;

namespace {

// A program `out = arg_max(x)` with the given attribute text; x is fed (declared `x_type`), a
// fill_constant before it makes arg_max op 1 of block 0.
// `out_type` is Out's declared element type, which must be the index dtype arg_max computes.
cf::Program arg_max_program(const std::string& attrs, const std::string& x_type = "FP32",
                            const std::string& out_type = "INT64") {
  return cf::Program::from_text(
      "blocks { idx: 0 parent_idx: -1\n"
      "  vars { name: \"x\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: " +
          x_type +
          " } } } }\n"
          "  vars { name: \"out\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: " +
          out_type +
          " } } } }\n"
          "  vars { name: \"one\" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 } "
          "} "
          "} }\n"
          "  ops { outputs { parameter: \"Out\" arguments: \"one\" } type: \"fill_constant\"\n"
          "    attrs { name: \"shape\" type: INTS ints: 1 } attrs { name: \"value\" type: FLOAT f: "
          "1 "
          "} }\n"
          "  ops { inputs { parameter: \"X\" arguments: \"x\" } outputs { parameter: \"Out\" "
          "arguments: \"out\" }\n"
          "    type: \"arg_max\" " +
          attrs +
          " }\n"
          "}\n",
      "arg_max_test");
}

std::string axis(int64_t a) {
  return "attrs { name: \"axis\" type: LONG l: " + std::to_string(a) + " } ";
}

Tensor run_arg_max(const std::string& attrs, const Tensor& x, const std::string& x_type = "FP32",
                   const std::string& out_type = "INT64") {
  cf::Executor ex;
  return ex.run(arg_max_program(attrs, x_type, out_type), {{"x", x}}, {"out"})["out"];
}

std::vector<int64_t> values(const Tensor& t) {
  Tensor c = t.cast(DType::kInt64).contiguous();
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) v[static_cast<size_t>(i)] = c.data<int64_t>()[i];
  return v;
}

// [[1, 3, 3], [5, 5, 2]]: ties in both rows and in column 1.
Tensor ties() { return Tensor::from_vector<float>({1, 3, 3, 5, 5, 2}, {2, 3}); }

}  // namespace

TEST(ArgMax, LastAxisTakesTheFirstOfTies) {
  Tensor r = run_arg_max(axis(1), ties());
  EXPECT_EQ(r.dtype(), DType::kInt64);
  EXPECT_EQ(r.shape(), (cf::Shape{2}));
  EXPECT_EQ(values(r), (std::vector<int64_t>{1, 0}));
}

TEST(ArgMax, NegativeAxisAndKeepdims) {
  Tensor r = run_arg_max(axis(-2), ties());  // along axis 0
  EXPECT_EQ(r.shape(), (cf::Shape{3}));
  EXPECT_EQ(values(r), (std::vector<int64_t>{1, 1, 0}));
  Tensor k = run_arg_max(axis(-1) + "attrs { name: \"keepdims\" type: BOOLEAN b: true }", ties());
  EXPECT_EQ(k.shape(), (cf::Shape{2, 1}));
  EXPECT_EQ(values(k), (std::vector<int64_t>{1, 0}));
  Tensor k0 = run_arg_max(axis(0) + "attrs { name: \"keepdims\" type: BOOLEAN b: true }", ties());
  EXPECT_EQ(k0.shape(), (cf::Shape{1, 3}));
  EXPECT_EQ(values(k0), (std::vector<int64_t>{1, 1, 0}));
}

TEST(ArgMax, FlattenSearchesEveryElementAndGivesShapeOne) {
  const std::string flat = "attrs { name: \"flatten\" type: BOOLEAN b: true } ";
  Tensor r = run_arg_max(axis(0) + flat, ties());
  EXPECT_EQ(r.shape(), (cf::Shape{1}));
  EXPECT_EQ(values(r), (std::vector<int64_t>{3}));  // the first 5, row-major
  // Paddle: flatten ignores keepdims (shape [1], not [1, 1]).
  Tensor k =
      run_arg_max(axis(1) + flat + "attrs { name: \"keepdims\" type: BOOLEAN b: true }", ties());
  EXPECT_EQ(k.shape(), (cf::Shape{1}));
  EXPECT_EQ(values(k), (std::vector<int64_t>{3}));
  // A transposed (non-contiguous) view of the same values is searched in its logical order:
  // index 3, where the storage order (1, 5, 3, 5, 3, 2) would give 1.
  Tensor t = Tensor::from_vector<float>({1, 5, 3, 5, 3, 2}, {3, 2}).transpose({1, 0});
  ASSERT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(run_arg_max(axis(0) + flat, t)), (std::vector<int64_t>{3}));
}

TEST(ArgMax, Int32Indices) {
  const std::string i32 = "attrs { name: \"dtype\" type: INT i: 2 } ";
  Tensor r = run_arg_max(axis(1) + i32, ties(), "FP32", "INT32");
  EXPECT_EQ(r.dtype(), DType::kInt32);
  EXPECT_EQ(r.shape(), (cf::Shape{2}));
  EXPECT_EQ(r.at<int32_t>({0}), 1);
  EXPECT_EQ(r.at<int32_t>({1}), 0);
  Tensor f = run_arg_max(axis(0) + i32 + "attrs { name: \"flatten\" type: BOOLEAN b: true }",
                         ties(), "FP32", "INT32");
  EXPECT_EQ(f.dtype(), DType::kInt32);
  EXPECT_EQ(f.at<int32_t>({0}), 3);
  // Paddle's older default -1 means INT64.
  EXPECT_EQ(run_arg_max(axis(1) + "attrs { name: \"dtype\" type: INT i: -1 }", ties()).dtype(),
            DType::kInt64);
}

TEST(ArgMax, NaNCountsAsTheMaximumLikeTheTensorLayer) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector<float>({1, nan, 7, nan, 9, 2, 3, 4}, {2, 4});
  Tensor r = run_arg_max(axis(1), x);
  EXPECT_EQ(values(r), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values(r), values(cf::argmax(x, 1)));
  Tensor c = run_arg_max(axis(0), x);
  EXPECT_EQ(values(c), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(values(c), values(cf::argmax(x, 0)));
}

TEST(ArgMax, IntegerBoolAndFloat64Inputs) {
  Tensor i = Tensor::from_vector<int32_t>({-4, 9, 9, -1}, {4});
  EXPECT_EQ(values(run_arg_max(axis(0), i, "INT32")), (std::vector<int64_t>{1}));
  Tensor b = Tensor::from_vector<bool>({false, false, true, true}, {2, 2});
  EXPECT_EQ(values(run_arg_max(axis(1), b, "BOOL")), (std::vector<int64_t>{0, 0}));
  Tensor d = Tensor::from_vector<double>({0.5, -1, 0.25, 2}, {2, 2});
  EXPECT_EQ(values(run_arg_max(axis(-1), d, "FP64")), (std::vector<int64_t>{0, 1}));
}

TEST(ArgMax, RunTimeErrorsArePositioned) {
  auto expect_positioned = [](const std::string& attrs, const Tensor& x, const std::string& what) {
    try {
      run_arg_max(attrs, x);
      ADD_FAILURE() << "expected a ProgramError containing: " << what;
    } catch (const cf::ProgramError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.op_type(), "arg_max") << msg;
      EXPECT_EQ(e.block_index(), 0) << msg;
      EXPECT_EQ(e.op_index(), 1) << msg;
      EXPECT_EQ(msg.rfind("block 0, op 1 ('arg_max')", 0), 0u) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  };
  expect_positioned(axis(2), ties(), "axis 2 out of range for X ('x') of shape (2, 3)");
  expect_positioned(axis(-3), ties(), "axis -3 out of range");
  // Paddle checks axis against the rank even when flattening.
  expect_positioned(axis(5) + "attrs { name: \"flatten\" type: BOOLEAN b: true }", ties(),
                    "axis 5 out of range");
  expect_positioned(axis(1), Tensor::zeros({2, 0}, DType::kFloat32), "empty");
  expect_positioned(axis(0), Tensor::scalar(1.0, DType::kFloat32), "out of range");
}

TEST(ArgMax, Inference) {
  using cf::OpDesc;
  auto op = [](int64_t a, bool keep, bool flat, int64_t dtype) {
    return OpDesc::make("arg_max", {{"X", {"x"}}}, {{"Out", {"o"}}},
                        {{"axis", cf::Attr::l(a)},
                         {"keepdims", cf::Attr::b(keep)},
                         {"flatten", cf::Attr::b(flat)},
                         {"dtype", cf::Attr::i(dtype)}});
  };
  auto r = cf::infer_op(op(-1, false, false, 3), {{DType::kFloat32, {-1, 10}}});
  EXPECT_EQ(r[0].dtype, DType::kInt64);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{-1}));
  r = cf::infer_op(op(0, true, false, 2), {{DType::kFloat64, {4, 5, 6}}});
  EXPECT_EQ(r[0].dtype, DType::kInt32);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{1, 5, 6}));
  r = cf::infer_op(op(1, true, true, -1), {{DType::kInt8, {4, 5, 6}}});
  EXPECT_EQ(r[0].dtype, DType::kInt64);
  EXPECT_EQ(r[0].shape, (std::vector<int64_t>{1}));
  EXPECT_THROW(cf::infer_op(op(3, false, false, 3), {{DType::kFloat32, {4, 5, 6}}}),
               cf::ShapeError);
  EXPECT_TRUE(cf::has_kernel("arg_max"));
}

// The fuzz corpus's arg_max seed runs and gives what its header says.
TEST(ArgMax, FuzzCorpusSeedRuns) {
  cf::Program p = cf::Program::from_file(std::string(CHANFLOW_SOURCE_DIR) +
                                         "/fuzz/ir/corpus/text/programs_arg_max.pbtxt");
  cf::Executor ex;
  auto o = ex.run(p, {}, {"rows", "flat"});
  EXPECT_EQ(o["rows"].shape(), (cf::Shape{2, 1}));
  EXPECT_EQ(values(o["rows"]), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(o["flat"].dtype(), DType::kInt32);
  EXPECT_EQ(o["flat"].shape(), (cf::Shape{1}));
  EXPECT_EQ(values(o["flat"]), (std::vector<int64_t>{0}));
}

// examples/training/mlp_eval.pbtxt counts a row when arg_max(logits) == arg_max(label), over real
// rows only. Weights make logits = relu(x[:, :10]) so each row's logits are chosen here.
TEST(ArgMax, MlpEvalProgramCountsArgmaxHits) {
  cf::Program p = cf::Program::from_file(std::string(CHANFLOW_SOURCE_DIR) +
                                         "/examples/training/mlp_eval.pbtxt");
  const int64_t h = 10;
  Tensor w1 = Tensor::zeros({64, h}, DType::kFloat32);
  Tensor w2 = Tensor::zeros({h, 10}, DType::kFloat32);
  for (int64_t i = 0; i < h; ++i) {
    w1.data<float>()[i * h + i] = 1;
    w2.data<float>()[i * 10 + i] = 1;
  }
  // Row r of a batch: logits (the first 10 pixels) and a label (-1: a padding row, y all zero).
  auto batch = [](const std::vector<std::pair<std::vector<float>, int>>& rows) {
    const auto n = static_cast<int64_t>(rows.size());
    Tensor x = Tensor::zeros({n, 64}, DType::kFloat32);
    Tensor y = Tensor::zeros({n, 10}, DType::kFloat32);
    for (int64_t r = 0; r < n; ++r) {
      const auto& [logits, label] = rows[static_cast<size_t>(r)];
      for (size_t j = 0; j < logits.size(); ++j)
        x.data<float>()[r * 64 + static_cast<int64_t>(j)] = logits[j];
      if (label >= 0) y.data<float>()[r * 10 + label] = 1;
    }
    return std::pair{x, y};
  };
  auto [x1, y1] = batch({
      {{0, 0, 0, 4, 1}, 3},           // hit
      {{0, 0, 1, 0, 0, 0, 0, 8}, 2},  // miss
      {{0, 5, 5}, 2},                 // tie 1/2, label 2: the first index (1) wins: miss
      {{9}, -1},                      // padding: counts in neither
  });
  auto [x2, y2] = batch({
      {{}, 0},                              // all logits 0: index 0 == label: hit
      {{0, 0, 0, 0, 0, 0, 0, 0, 1, 2}, 9},  // hit
  });
  cf::Channel images = cf::Channel::make<cf::TensorObj>(2);
  cf::Channel labels = cf::Channel::make<cf::TensorObj>(2);
  images.send(x1);
  images.send(x2);
  images.close();
  labels.send(y1);
  labels.send(y2);
  labels.close();
  cf::Executor ex;
  auto o = ex.run(p,
                  {{"w1", w1},
                   {"b1", Tensor::zeros({h}, DType::kFloat32)},
                   {"w2", w2},
                   {"b2", Tensor::zeros({10}, DType::kFloat32)}},
                  {"correct", "seen"}, {{"images", images}, {"labels", labels}});
  EXPECT_EQ(o["correct"].item<float>(), 3);
  EXPECT_EQ(o["seen"].item<float>(), 5);
}
