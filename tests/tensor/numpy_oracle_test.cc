// Every tensor kernel checked against NumPy: cases and expected results come from
// gen_fixtures.py (fixtures/cases.json + fixtures/arrays.bin, generated with numpy). Each case
// applies views (transpose, permute, strided slice) to its inputs, runs the op and compares dtype,
// shape and values (exact for integers and bools, rtol/atol for floats, NaN matches NaN), or
// checks that the op throws the expected error kind. Inputs must be unchanged afterwards.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "chanflow/tensor.h"

namespace cf = chanflow;
using json = nlohmann::json;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Oracle {
  json doc;
  std::string arrays;

  static const Oracle& get() {
    static const Oracle o = [] {
      Oracle r;
      const std::string dir = CHANFLOW_TENSOR_FIXTURES;
      r.doc = json::parse(read_file(dir + "/cases.json"));
      r.arrays = read_file(dir + "/arrays.bin");
      return r;
    }();
    return o;
  }

  cf::Tensor blob(const std::string& name) const {
    const auto& e = doc.at("blobs").at(name);
    const size_t off = e.at(0).get<size_t>();
    const size_t len = e.at(1).get<size_t>();
    return cf::parse_npy(arrays.data() + off, len, name);
  }
};

cf::Tensor make_input(const Oracle& o, const json& in) {
  cf::Tensor t = o.blob(in.at("file").get<std::string>());
  for (const auto& v : in.at("view")) {
    const std::string kind = v.at(0).get<std::string>();
    if (kind == "T") {
      t = t.transpose();
    } else if (kind == "perm") {
      t = t.transpose(v.at(1).get<std::vector<int64_t>>());
    } else if (kind == "slice") {
      t = t.slice(v.at(1).get<int64_t>(), v.at(2).get<int64_t>(), v.at(3).get<int64_t>(),
                  v.at(4).get<int64_t>());
    } else {
      ADD_FAILURE() << "unknown view " << kind;
    }
  }
  return t;
}

// Returns an empty string when `got` matches `want`, else a description of the first mismatch.
std::string compare(const cf::Tensor& got, const cf::Tensor& want, double rtol, double atol) {
  if (got.dtype() != want.dtype()) {
    return "dtype " + std::string(cf::dtype_name(got.dtype())) + " != expected " +
           std::string(cf::dtype_name(want.dtype()));
  }
  if (got.shape() != want.shape()) {
    return "shape " + cf::shape_to_string(got.shape()) + " != expected " +
           cf::shape_to_string(want.shape());
  }
  if (!cf::is_floating(want.dtype())) {
    const cf::Tensor g = got.cast(cf::DType::kInt64);
    const cf::Tensor w = want.cast(cf::DType::kInt64);
    const int64_t* gp = g.data<int64_t>();
    const int64_t* wp = w.data<int64_t>();
    for (int64_t i = 0; i < g.numel(); ++i) {
      if (gp[i] != wp[i]) {
        return "element " + std::to_string(i) + ": " + std::to_string(gp[i]) + " != expected " +
               std::to_string(wp[i]);
      }
    }
    return {};
  }
  const cf::Tensor g = got.cast(cf::DType::kFloat64);
  const cf::Tensor w = want.cast(cf::DType::kFloat64);
  const double* gp = g.data<double>();
  const double* wp = w.data<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = gp[i];
    const double b = wp[i];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) {
        return "element " + std::to_string(i) + ": " + std::to_string(a) + " vs expected " +
               std::to_string(b);
      }
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return "element " + std::to_string(i) + ": inf mismatch";
      continue;
    }
    if (std::fabs(a - b) > atol + rtol * std::fabs(b)) {
      std::ostringstream m;
      m.precision(17);
      m << "element " << i << ": " << a << " != expected " << b << " (rtol " << rtol << ", atol "
        << atol << ")";
      return m.str();
    }
  }
  return {};
}

using BinaryFn = cf::Tensor (*)(const cf::Tensor&, const cf::Tensor&, const cf::KernelOptions&);
using UnaryFn = cf::Tensor (*)(const cf::Tensor&, const cf::KernelOptions&);

cf::Tensor run_op(const std::string& op, const std::vector<cf::Tensor>& in, const json& params) {
  static const std::map<std::string, BinaryFn> binary = {{"add", &cf::add},
                                                         {"sub", &cf::sub},
                                                         {"mul", &cf::mul},
                                                         {"div", &cf::div},
                                                         {"pow", &cf::pow},
                                                         {"maximum", &cf::maximum},
                                                         {"minimum", &cf::minimum},
                                                         {"equal", &cf::equal},
                                                         {"not_equal", &cf::not_equal},
                                                         {"less", &cf::less},
                                                         {"less_equal", &cf::less_equal},
                                                         {"greater", &cf::greater},
                                                         {"greater_equal", &cf::greater_equal},
                                                         {"logical_and", &cf::logical_and},
                                                         {"logical_or", &cf::logical_or},
                                                         {"matmul", &cf::matmul}};
  static const std::map<std::string, UnaryFn> unary = {
      {"neg", &cf::neg},   {"abs", &cf::abs},         {"relu", &cf::relu},
      {"exp", &cf::exp},   {"log", &cf::log},         {"sqrt", &cf::sqrt},
      {"tanh", &cf::tanh}, {"sigmoid", &cf::sigmoid}, {"logical_not", &cf::logical_not}};
  if (auto it = binary.find(op); it != binary.end()) return it->second(in.at(0), in.at(1), {});
  if (auto it = unary.find(op); it != unary.end()) return it->second(in.at(0), {});
  const cf::Axes axes = params.value("axes", std::vector<int64_t>{});
  const bool keep = params.value("keepdims", false);
  if (op == "sum") return cf::sum(in.at(0), axes, keep);
  if (op == "mean") return cf::mean(in.at(0), axes, keep);
  if (op == "max") return cf::max(in.at(0), axes, keep);
  if (op == "min") return cf::min(in.at(0), axes, keep);
  if (op == "argmax") {
    std::optional<int64_t> axis;
    if (params.contains("axis")) axis = params.at("axis").get<int64_t>();
    return cf::argmax(in.at(0), axis, keep);
  }
  if (op == "softmax") return cf::softmax(in.at(0), params.at("axis").get<int64_t>());
  if (op == "log_softmax") return cf::log_softmax(in.at(0), params.at("axis").get<int64_t>());
  if (op == "cast")
    return in.at(0).cast(cf::dtype_from_name(params.at("dtype").get<std::string>()));
  throw std::runtime_error("unknown op " + op);
}

// Runs every case whose op is in `ops`; returns the number run.
int run_cases(const std::vector<std::string>& ops) {
  const Oracle& o = Oracle::get();
  int ran = 0;
  for (const json& c : o.doc.at("cases")) {
    const std::string op = c.at("op").get<std::string>();
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) continue;
    ++ran;
    const std::string name = c.at("name").get<std::string>();
    std::vector<cf::Tensor> inputs;
    std::vector<cf::Tensor> before;
    for (const json& in : c.at("inputs")) {
      inputs.push_back(make_input(o, in));
      before.push_back(inputs.back().clone());
    }
    const json params = c.at("params");
    if (c.contains("error")) {
      const std::string kind = c.at("error").get<std::string>();
      try {
        (void)run_op(op, inputs, params);
        ADD_FAILURE() << name << ": expected " << kind << ", nothing thrown";
      } catch (const cf::ShapeError& e) {
        EXPECT_EQ(kind, "ShapeError") << name << ": " << e.what();
      } catch (const cf::TypeError& e) {
        EXPECT_EQ(kind, "TypeError") << name << ": " << e.what();
      } catch (const cf::Error& e) {
        EXPECT_EQ(kind, "Error") << name << ": " << e.what();
      }
      continue;
    }
    cf::Tensor got;
    try {
      got = run_op(op, inputs, params);
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": threw " << e.what();
      continue;
    }
    const cf::Tensor want = o.blob(c.at("expected").get<std::string>());
    const std::string diff =
        compare(got, want, c.at("rtol").get<double>(), c.at("atol").get<double>());
    EXPECT_TRUE(diff.empty()) << name << ": " << diff << "\n got " << got << "\n want " << want;
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_TRUE(inputs[i].equal_to(before[i]) || compare(inputs[i], before[i], 0, 0).empty())
          << name << ": input " << i << " changed";
    }
  }
  return ran;
}

}  // namespace

TEST(TensorNumpy, PromotionTableMatchesNumpy) {
  const Oracle& o = Oracle::get();
  const auto names = o.doc.at("dtypes").get<std::vector<std::string>>();
  const auto& table = o.doc.at("promote_types");
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < names.size(); ++j) {
      const cf::DType got =
          cf::promote_types(cf::dtype_from_name(names[i]), cf::dtype_from_name(names[j]));
      EXPECT_EQ(cf::dtype_name(got), table.at(i).at(j).get<std::string>())
          << names[i] << " + " << names[j];
    }
  }
}

TEST(TensorNumpy, BinaryArithmetic) {
  EXPECT_GT(run_cases({"add", "sub", "mul", "div", "pow", "maximum", "minimum"}), 500);
}

TEST(TensorNumpy, ComparisonsAndLogic) {
  EXPECT_GT(run_cases({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                       "logical_and", "logical_or", "logical_not"}),
            400);
}

TEST(TensorNumpy, Unary) {
  EXPECT_GT(run_cases({"neg", "abs", "relu", "exp", "log", "sqrt", "tanh", "sigmoid"}), 300);
}

TEST(TensorNumpy, Reductions) { EXPECT_GT(run_cases({"sum", "mean", "max", "min"}), 500); }

TEST(TensorNumpy, Argmax) { EXPECT_GT(run_cases({"argmax"}), 200); }

TEST(TensorNumpy, Softmax) { EXPECT_GT(run_cases({"softmax", "log_softmax"}), 50); }

TEST(TensorNumpy, Matmul) { EXPECT_GT(run_cases({"matmul"}), 90); }

TEST(TensorNumpy, Cast) { EXPECT_EQ(run_cases({"cast"}), 81); }

TEST(TensorNumpy, NpyFilesWrittenByNumpy) {
  const Oracle& o = Oracle::get();
  const std::string dir = CHANFLOW_TENSOR_FIXTURES;
  int n = 0;
  for (const json& c : o.doc.at("npy_cases")) {
    ++n;
    const std::string name = c.at("name").get<std::string>();
    const std::string path = dir + "/" + c.at("file").get<std::string>();
    if (c.contains("error")) {
      const std::string kind = c.at("error").get<std::string>();
      try {
        (void)cf::load_npy(path);
        ADD_FAILURE() << name << ": expected " << kind;
      } catch (const cf::TypeError& e) {
        EXPECT_EQ(kind, "TypeError") << name << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      } catch (const cf::Error& e) {
        EXPECT_EQ(kind, "Error") << name << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
      continue;
    }
    const cf::Tensor got = cf::load_npy(path);
    const cf::Tensor want = o.blob(c.at("expected").get<std::string>());
    EXPECT_TRUE(got.is_contiguous()) << name;
    EXPECT_EQ(compare(got, want, 0, 0), "") << name;
  }
  EXPECT_GT(n, 40);
}
