// The optimiser and initialiser rows (sgd, momentum, adam, adamax, rmsprop, uniform_random,
// gaussian_random) and sign: programs run by the Executor over many steps against scalar
// references written here from Paddle 1.x's operator formulas, in-place updates without copies,
// and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/ops/op_table.h"
#include "chanflow/tensor/init.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::Tensor;

namespace {

using Feeds = std::map<std::string, Tensor>;
constexpr int64_t kN = 29;
constexpr int kSteps = 40;

double grad_value(int64_t i, int t) {
  const double x = static_cast<double>(i);
  return std::sin(0.9 * x + 1.7 * t) + 0.3 * std::cos(0.05 * x * t);
}
double lr_value(int t) { return 0.04 * std::pow(0.98, t); }
// A FLOAT attribute's value: float32, as Paddle's AddAttr<float> stores it.
double f32(double v) { return Attr::f(v).as_float(); }

Tensor vec(const std::vector<double>& v, DType dt) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}).cast(dt);
}
Tensor scalar1(double v, DType dt) { return Tensor::full({1}, v, dt); }
std::vector<double> values(const Tensor& t) {
  const Tensor d = t.cast(DType::kFloat64).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}
std::vector<double> init_vector() {
  std::vector<double> p;
  for (int64_t i = 0; i < kN; ++i) p.push_back(0.4 - 0.03 * static_cast<double>(i));
  return p;
}
std::vector<double> grad_vector(int t) {
  std::vector<double> g;
  for (int64_t i = 0; i < kN; ++i) g.push_back(grad_value(i, t));
  return g;
}
void expect_close(const Tensor& got, const std::vector<double>& want, double rtol,
                  const std::string& what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], want[i], rtol * (1.0 + std::abs(want[i]))) << what << "[" << i << "]";
  }
}
// The message of an error and of every error nested in it.
std::string messages(const std::exception& e) {
  std::string m = e.what();
  try {
    std::rethrow_if_nested(e);
  } catch (const std::exception& inner) {
    m += " | " + messages(inner);
  }
  return m;
}

// One optimiser op whose state variables are both its inputs and its outputs (as Paddle's
// optimizers emit them); for adam also the two scale ops Paddle's AdamOptimizer appends to
// advance the beta powers. Extents are declared unknown, so the kernels check the shapes.
cf::Program update_program(const std::string& op, DType dt, const cf::OpDesc::Attrs& attrs,
                           bool advance_pows = true) {
  cf::ProgramBuilder b;
  for (const char* n : {"w", "g", "v", "m1", "m2"}) b.var(n, dt, {-1});
  for (const char* n : {"lr", "b1p", "b2p"}) b.var(n, dt, {1});
  if (op == "sgd") {
    b.append_op("sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                {{"ParamOut", {"w"}}}, attrs);
  } else if (op == "momentum") {
    b.append_op("momentum",
                {{"Param", {"w"}}, {"Grad", {"g"}}, {"Velocity", {"v"}}, {"LearningRate", {"lr"}}},
                {{"ParamOut", {"w"}}, {"VelocityOut", {"v"}}}, attrs);
  } else if (op == "adamax") {
    b.append_op("adamax",
                {{"Param", {"w"}},
                 {"Grad", {"g"}},
                 {"LearningRate", {"lr"}},
                 {"Moment", {"m1"}},
                 {"InfNorm", {"m2"}},
                 {"Beta1Pow", {"b1p"}}},
                {{"ParamOut", {"w"}}, {"MomentOut", {"m1"}}, {"InfNormOut", {"m2"}}}, attrs);
    if (advance_pows) {
      double beta1 = 0.9;
      for (const auto& [k, v] : attrs) {
        if (k == "beta1") beta1 = v.as_float();
      }
      b.append_op("scale", {{"X", {"b1p"}}}, {{"Out", {"b1p"}}}, {{"scale", Attr::f(beta1)}});
    }
  } else if (op == "rmsprop") {
    b.append_op("rmsprop",
                {{"Param", {"w"}},
                 {"MeanSquare", {"m2"}},
                 {"LearningRate", {"lr"}},
                 {"Grad", {"g"}},
                 {"Moment", {"m1"}}},
                {{"ParamOut", {"w"}}, {"MomentOut", {"m1"}}, {"MeanSquareOut", {"m2"}}}, attrs);
  } else {
    b.append_op("adam",
                {{"Param", {"w"}},
                 {"Grad", {"g"}},
                 {"LearningRate", {"lr"}},
                 {"Moment1", {"m1"}},
                 {"Moment2", {"m2"}},
                 {"Beta1Pow", {"b1p"}},
                 {"Beta2Pow", {"b2p"}}},
                {{"ParamOut", {"w"}}, {"Moment1Out", {"m1"}}, {"Moment2Out", {"m2"}}}, attrs);
    if (advance_pows) {
      double beta1 = 0.9, beta2 = 0.999;
      for (const auto& [k, v] : attrs) {
        if (k == "beta1") beta1 = v.as_float();
        if (k == "beta2") beta2 = v.as_float();
      }
      b.append_op("scale", {{"X", {"b1p"}}}, {{"Out", {"b1p"}}}, {{"scale", Attr::f(beta1)}});
      b.append_op("scale", {{"X", {"b2p"}}}, {{"Out", {"b2p"}}}, {{"scale", Attr::f(beta2)}});
    }
  }
  return b.build();
}

// Paddle's formulas, in double, element by element.
struct Reference {
  std::vector<double> w, v, m1, m2;
  double b1p = 0, b2p = 0;
  void sgd(const std::vector<double>& g, double lr) {
    for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * g[i];
  }
  void momentum(const std::vector<double>& g, double lr, double mu, bool nesterov) {
    for (size_t i = 0; i < w.size(); ++i) {
      v[i] = mu * v[i] + g[i];
      w[i] -= nesterov ? (g[i] + mu * v[i]) * lr : lr * v[i];
    }
  }
  void adam(const std::vector<double>& g, double lr, double beta1, double beta2, double eps) {
    const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
    for (size_t i = 0; i < w.size(); ++i) {
      m1[i] = beta1 * m1[i] + (1 - beta1) * g[i];
      m2[i] = beta2 * m2[i] + (1 - beta2) * g[i] * g[i];
      w[i] -= lr_t * m1[i] / (std::sqrt(m2[i]) + eps);
    }
    b1p *= beta1;  // the scale ops
    b2p *= beta2;
  }
  // m1: Moment, m2: InfNorm.
  void adamax(const std::vector<double>& g, double lr, double beta1, double beta2, double eps) {
    const double lr_t = lr / (1 - b1p);
    for (size_t i = 0; i < w.size(); ++i) {
      m1[i] = beta1 * m1[i] + (1 - beta1) * g[i];
      m2[i] = std::max(beta2 * m2[i] + eps, std::abs(g[i]));
      w[i] -= lr_t * m1[i] / m2[i];
    }
    b1p *= beta1;  // the scale op
  }
  // m1: Moment, m2: MeanSquare.
  void rmsprop(const std::vector<double>& g, double lr, double decay, double mu, double eps) {
    for (size_t i = 0; i < w.size(); ++i) {
      m2[i] = decay * m2[i] + (1 - decay) * g[i] * g[i];
      m1[i] = mu * m1[i] + lr * g[i] / std::sqrt(m2[i] + eps);
      w[i] -= m1[i];
    }
  }
};

struct Config {
  std::string op;
  cf::OpDesc::Attrs attrs;
  double mu = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, decay = 0.9;
  bool nesterov = false;
};

// Runs `c` for kSteps steps, feeding each step's outputs back as the next step's state, next to
// the reference; float64 to 1e-12, float32 to 2e-5 (float32 arithmetic against double).
void run_steps(const Config& c, DType dt) {
  const double rtol = dt == DType::kFloat64 ? 1e-12 : 2e-5;
  const cf::Program p = update_program(c.op, dt, c.attrs);
  cf::Executor ex;
  Reference r;
  r.w = init_vector();
  r.v.assign(kN, 0.0);
  r.m1.assign(kN, 0.0);
  r.m2.assign(kN, 0.0);
  r.b1p = values(scalar1(c.beta1, dt))[0];  // as fed
  r.b2p = values(scalar1(c.beta2, dt))[0];
  auto rounded = [&](std::vector<double> x) { return values(vec(x, dt)); };
  r.w = rounded(r.w);
  Feeds state{{"w", vec(r.w, dt)},   {"v", vec(r.v, dt)},           {"m1", vec(r.m1, dt)},
              {"m2", vec(r.m2, dt)}, {"b1p", scalar1(c.beta1, dt)}, {"b2p", scalar1(c.beta2, dt)}};
  for (int t = 1; t <= kSteps; ++t) {
    const std::vector<double> g = rounded(grad_vector(t));
    const double lr = values(scalar1(lr_value(t), dt))[0];
    Feeds feeds = state;
    feeds["g"] = vec(g, dt);
    feeds["lr"] = scalar1(lr, dt);
    if (c.op == "sgd") r.sgd(g, lr);
    if (c.op == "momentum") r.momentum(g, lr, f32(c.mu), c.nesterov);
    if (c.op == "adam") r.adam(g, lr, f32(c.beta1), f32(c.beta2), f32(c.eps));
    if (c.op == "adamax") r.adamax(g, lr, f32(c.beta1), f32(c.beta2), f32(c.eps));
    if (c.op == "rmsprop") r.rmsprop(g, lr, f32(c.decay), f32(c.mu), f32(c.eps));
    const std::vector<std::string> fetch = {"w", "v", "m1", "m2", "b1p", "b2p"};
    std::map<std::string, Tensor> out = ex.run(p, feeds, fetch);
    for (const std::string& n : fetch) state[n] = out.at(n);
    const std::string at = c.op + " step " + std::to_string(t);
    expect_close(out.at("w"), r.w, rtol, at + " w");
    if (c.op == "momentum") expect_close(out.at("v"), r.v, rtol, at + " v");
    if (c.op == "adam" || c.op == "adamax" || c.op == "rmsprop") {
      expect_close(out.at("m1"), r.m1, rtol, at + " m1");
      expect_close(out.at("m2"), r.m2, rtol, at + " m2");
    }
    if (c.op == "adam" || c.op == "adamax") {
      expect_close(out.at("b1p"), {r.b1p}, rtol, at + " b1p");
    }
    if (c.op == "adam") expect_close(out.at("b2p"), {r.b2p}, rtol, at + " b2p");
    if (testing::Test::HasFailure()) return;
  }
}

TEST(OptimizerRows, SchemasHavePaddleSlotsAttributesAndDefaults) {
  auto slots = [](const cf::OpDef* d, bool inputs) {
    std::vector<std::string> s;
    for (const cf::ArgSpec& a : inputs ? d->schema().inputs() : d->schema().outputs()) {
      s.push_back(a.name);
    }
    return s;
  };
  using V = std::vector<std::string>;
  const cf::OpDef* sgd = cf::find_op_def("sgd");
  ASSERT_NE(sgd, nullptr);
  EXPECT_EQ(slots(sgd, true), (V{"Param", "Grad", "LearningRate"}));
  EXPECT_EQ(slots(sgd, false), (V{"ParamOut"}));
  const cf::OpDef* mom = cf::find_op_def("momentum");
  ASSERT_NE(mom, nullptr);
  EXPECT_EQ(slots(mom, true), (V{"Param", "Grad", "Velocity", "LearningRate"}));
  EXPECT_EQ(slots(mom, false), (V{"ParamOut", "VelocityOut"}));
  EXPECT_TRUE(mom->schema().attr("mu")->required());
  EXPECT_FALSE(mom->schema().attr("use_nesterov")->make_default().as_bool());
  const cf::OpDef* adam = cf::find_op_def("adam");
  ASSERT_NE(adam, nullptr);
  EXPECT_EQ(slots(adam, true),
            (V{"Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow"}));
  EXPECT_EQ(slots(adam, false), (V{"ParamOut", "Moment1Out", "Moment2Out"}));
  // FLOAT attributes hold float32 values, as Paddle's AddAttr<float>.
  EXPECT_EQ(adam->schema().attr("beta1")->make_default().as_float(), f32(0.9));
  EXPECT_EQ(adam->schema().attr("beta2")->make_default().as_float(), f32(0.999));
  EXPECT_EQ(adam->schema().attr("epsilon")->make_default().as_float(), f32(1e-8));
  const cf::OpDef* adamax = cf::find_op_def("adamax");
  ASSERT_NE(adamax, nullptr);
  EXPECT_EQ(slots(adamax, true),
            (V{"Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow"}));
  EXPECT_EQ(slots(adamax, false), (V{"ParamOut", "MomentOut", "InfNormOut"}));
  EXPECT_EQ(adamax->schema().attr("beta1")->make_default().as_float(), f32(0.9));
  EXPECT_EQ(adamax->schema().attr("beta2")->make_default().as_float(), f32(0.999));
  EXPECT_EQ(adamax->schema().attr("epsilon")->make_default().as_float(), f32(1e-8));
  const cf::OpDef* rms = cf::find_op_def("rmsprop");
  ASSERT_NE(rms, nullptr);
  EXPECT_EQ(slots(rms, true), (V{"Param", "MeanSquare", "LearningRate", "Grad", "Moment"}));
  EXPECT_EQ(slots(rms, false), (V{"ParamOut", "MomentOut", "MeanSquareOut"}));
  EXPECT_EQ(rms->schema().attr("epsilon")->make_default().as_float(), f32(1e-10));
  EXPECT_EQ(rms->schema().attr("decay")->make_default().as_float(), f32(0.9));
  EXPECT_EQ(rms->schema().attr("momentum")->make_default().as_float(), 0.0);
  EXPECT_EQ(rms->schema().attrs().size(), 3u) << "mid-2018 rmsprop has no 'centered'";
  const cf::OpDef* uni = cf::find_op_def("uniform_random");
  ASSERT_NE(uni, nullptr);
  EXPECT_EQ(slots(uni, false), (V{"Out"}));
  EXPECT_DOUBLE_EQ(uni->schema().attr("min")->make_default().as_float(), -1.0);
  EXPECT_DOUBLE_EQ(uni->schema().attr("max")->make_default().as_float(), 1.0);
  EXPECT_EQ(uni->schema().attr("seed")->make_default().as_int(), 0);
  EXPECT_EQ(uni->schema().attr("dtype")->make_default().as_int(), 5);  // FP32
  const cf::OpDef* gau = cf::find_op_def("gaussian_random");
  ASSERT_NE(gau, nullptr);
  EXPECT_DOUBLE_EQ(gau->schema().attr("mean")->make_default().as_float(), 0.0);
  EXPECT_DOUBLE_EQ(gau->schema().attr("std")->make_default().as_float(), 1.0);
  EXPECT_EQ(gau->schema().attr("seed")->make_default().as_int(), 0);
  EXPECT_EQ(gau->schema().attr("dtype")->make_default().as_int(), 5);
  for (const cf::OpDef* d : {sgd, mom, adam, adamax, rms, uni, gau}) {
    EXPECT_FALSE(d->has_grad()) << d->type();
    EXPECT_FALSE(d->no_grad_reason().empty()) << d->type();
  }
}

TEST(OptimizerRows, SgdOverStepsMatchesPaddlesFormula) {
  Config c;
  c.op = "sgd";
  for (DType dt : {DType::kFloat64, DType::kFloat32}) run_steps(c, dt);
}

TEST(OptimizerRows, MomentumOverStepsMatchesPaddlesFormula) {
  Config c;
  c.op = "momentum";
  c.attrs = {{"mu", Attr::f(0.9)}};
  c.mu = 0.9;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) run_steps(c, dt);
}

TEST(OptimizerRows, NesterovMomentumOverStepsMatchesPaddlesFormula) {
  Config c;
  c.op = "momentum";
  c.attrs = {{"mu", Attr::f(0.8)}, {"use_nesterov", Attr::b(true)}};
  c.mu = 0.8;
  c.nesterov = true;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) run_steps(c, dt);
}

TEST(OptimizerRows, AdamWithScaleOpsAdvancingThePowersMatchesPaddlesFormula) {
  Config defaults;
  defaults.op = "adam";
  Config c = defaults;
  c.attrs = {{"beta1", Attr::f(0.8)}, {"beta2", Attr::f(0.99)}, {"epsilon", Attr::f(1e-3)}};
  c.beta1 = 0.8;
  c.beta2 = 0.99;
  c.eps = 1e-3;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    run_steps(defaults, dt);
    run_steps(c, dt);
  }
}

TEST(OptimizerRows, AdamaxWithAScaleOpAdvancingBeta1PowMatchesPaddlesFormula) {
  Config defaults;
  defaults.op = "adamax";
  Config c = defaults;
  // beta2 0.5 and epsilon 0.05: the max takes the decayed norm on some steps, |Grad| on others.
  c.attrs = {{"beta1", Attr::f(0.8)}, {"beta2", Attr::f(0.5)}, {"epsilon", Attr::f(0.05)}};
  c.beta1 = 0.8;
  c.beta2 = 0.5;
  c.eps = 0.05;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    run_steps(defaults, dt);
    run_steps(c, dt);
  }
}

TEST(OptimizerRows, RmspropOverStepsMatchesPaddlesFormula) {
  Config defaults;  // the op's defaults: decay 0.9, momentum 0, epsilon 1e-10
  defaults.op = "rmsprop";
  defaults.eps = 1e-10;
  Config c = defaults;  // Fluid's RMSProp defaults (rho 0.95, epsilon 1e-6) with momentum
  c.attrs = {{"decay", Attr::f(0.95)}, {"momentum", Attr::f(0.9)}, {"epsilon", Attr::f(1e-6)}};
  c.decay = 0.95;
  c.mu = 0.9;
  c.eps = 1e-6;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    run_steps(defaults, dt);
    run_steps(c, dt);
  }
}

TEST(OptimizerRows, AdamReadsTheBetaPowersWithoutAdvancingThem) {
  const cf::Program p = update_program("adam", DType::kFloat64, {}, /*advance_pows=*/false);
  cf::Executor ex;
  Feeds f{{"w", vec(init_vector(), DType::kFloat64)},
          {"g", vec(grad_vector(1), DType::kFloat64)},
          {"v", vec(std::vector<double>(kN, 0.0), DType::kFloat64)},
          {"m1", vec(std::vector<double>(kN, 0.0), DType::kFloat64)},
          {"m2", vec(std::vector<double>(kN, 0.0), DType::kFloat64)},
          {"lr", scalar1(0.01, DType::kFloat64)},
          {"b1p", scalar1(0.9, DType::kFloat64)},
          {"b2p", scalar1(0.999, DType::kFloat64)}};
  auto out = ex.run(p, f, {"b1p", "b2p", "w"});
  EXPECT_EQ(values(out.at("b1p")), (std::vector<double>{0.9}));
  EXPECT_EQ(values(out.at("b2p")), (std::vector<double>{0.999}));
  EXPECT_NE(values(out.at("w")), init_vector());
}

// A training loop inside one program: w starts seeded, each step's gradient is computed from the
// current w (that of 0.5 * ||w - target||^2 is w - target), then sgd, momentum, adamax or rmsprop
// updates it (v and u: their state; b1p adamax's Beta1Pow, advanced by a scale op).
cf::Program loop_program(const std::string& op, int steps, int64_t n, bool alias = true) {
  cf::ProgramBuilder b;
  for (const char* v : {"w", "w2", "v", "u", "t", "g"}) b.var(v, DType::kFloat32, {n});
  b.var("lr", DType::kFloat32, {1});
  b.var("b1p", DType::kFloat32, {1});
  b.append_op("uniform_random", {}, {{"Out", {"w"}}},
              {{"shape", Attr::ints({n})}, {"seed", Attr::i(11)}});
  b.fill_constant({n}, DType::kFloat32, 0.25, b.lookup("t"));
  if (op != "sgd") b.fill_constant({n}, DType::kFloat32, 0.0, b.lookup("v"));
  if (op == "adamax" || op == "rmsprop") b.fill_constant({n}, DType::kFloat32, 0.0, b.lookup("u"));
  if (op == "adamax") b.fill_constant({1}, DType::kFloat32, 0.9, b.lookup("b1p"));
  b.fill_constant({1}, DType::kFloat32, 0.1, b.lookup("lr"));
  const std::string out = alias ? "w" : "w2";
  for (int s = 0; s < steps; ++s) {
    b.append_op("elementwise_sub", {{"X", {"w"}}, {"Y", {"t"}}}, {{"Out", {"g"}}});
    if (op == "sgd") {
      b.append_op("sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                  {{"ParamOut", {out}}});
    } else if (op == "momentum") {
      b.append_op(
          "momentum",
          {{"Param", {"w"}}, {"Grad", {"g"}}, {"Velocity", {"v"}}, {"LearningRate", {"lr"}}},
          {{"ParamOut", {out}}, {"VelocityOut", {"v"}}}, {{"mu", Attr::f(0.5)}});
    } else if (op == "adamax") {
      b.append_op("adamax",
                  {{"Param", {"w"}},
                   {"Grad", {"g"}},
                   {"LearningRate", {"lr"}},
                   {"Moment", {"v"}},
                   {"InfNorm", {"u"}},
                   {"Beta1Pow", {"b1p"}}},
                  {{"ParamOut", {out}}, {"MomentOut", {"v"}}, {"InfNormOut", {"u"}}});
      b.append_op("scale", {{"X", {"b1p"}}}, {{"Out", {"b1p"}}}, {{"scale", Attr::f(0.9)}});
    } else {
      b.append_op("rmsprop",
                  {{"Param", {"w"}},
                   {"MeanSquare", {"u"}},
                   {"LearningRate", {"lr"}},
                   {"Grad", {"g"}},
                   {"Moment", {"v"}}},
                  {{"ParamOut", {out}}, {"MomentOut", {"v"}}, {"MeanSquareOut", {"u"}}},
                  {{"momentum", Attr::f(0.5)}});
    }
  }
  return b.build();
}

TEST(OptimizerRows, TrainingLoopInOneProgramMatchesTheReference) {
  const int steps = 25;
  const int64_t n = 17;
  for (const std::string op : {"sgd", "momentum", "adamax", "rmsprop"}) {
    cf::Executor ex;
    const Tensor w = ex.run(loop_program(op, steps, n), {}, {"w"}).at("w");
    std::vector<double> r = values(cf::uniform_random({n}, -1.0, 1.0, 11, DType::kFloat32));
    std::vector<double> v(static_cast<size_t>(n), 0.0), u = v;
    double b1p = f32(0.9);
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < r.size(); ++i) {
        const double g = r[i] - 0.25;
        if (op == "sgd") {
          r[i] -= 0.1 * g;
        } else if (op == "momentum") {
          v[i] = 0.5 * v[i] + g;
          r[i] -= 0.1 * v[i];
        } else if (op == "adamax") {
          v[i] = f32(0.9) * v[i] + (1 - f32(0.9)) * g;
          u[i] = std::max(f32(0.999) * u[i] + f32(1e-8), std::abs(g));
          r[i] -= 0.1 / (1 - b1p) * v[i] / u[i];
        } else {
          u[i] = f32(0.9) * u[i] + (1 - f32(0.9)) * g * g;
          v[i] = 0.5 * v[i] + 0.1 * g / std::sqrt(u[i] + f32(1e-10));
          r[i] -= v[i];
        }
      }
      b1p *= f32(0.9);
    }
    expect_close(w, r, 1e-5, op);
    // Not a fixed point: the target 0.25 is approached from the random start.
    EXPECT_GT(std::abs(r[0] - values(cf::uniform_random({n}, -1.0, 1.0, 11, DType::kFloat32))[0]),
              1e-3)
        << op;
  }
}

// Tensor memory the program may hold: w, t, g and the states (v, u) of n float32 each plus small
// change. A copy of w (or of a state) on any step would need one more n-element buffer alive at
// once and hit the limit.
TEST(OptimizerRows, UpdatesInPlaceWithoutCopiesWhenTheScopeHoldsTheOnlyReference) {
  const int64_t n = 1 << 18;  // 1 MiB per tensor
  const int64_t mib = int64_t{1} << 20;
  for (const std::string op : {"sgd", "momentum", "adamax", "rmsprop"}) {
    const int64_t live = (op == "sgd" ? 3 : op == "momentum" ? 4 : 5) * mib;
    cf::Executor ex({.max_memory_bytes = live + mib / 2});
    EXPECT_NO_THROW(ex.run(loop_program(op, 10, n), {}, {"w"})) << op;
    // The check can fail: with ParamOut another variable, each step needs a second buffer.
    cf::Executor tight({.max_memory_bytes = live + mib / 2});
    EXPECT_THROW(tight.run(loop_program(op, 10, n, /*alias=*/false), {}, {"w2"}), cf::LimitError)
        << op;
  }
}

// The protocol itself, through a KernelCall like the executor's: variables hold tensors, an input
// reads a new handle, take_output moves a variable's tensor out when it is unique.
struct FakeCall final : cf::KernelCall {
  std::vector<Tensor> vars;
  std::vector<int> in_var, out_var;  // slot -> variable (-1: absent)
  size_t num_inputs(int s) const override { return in_var[static_cast<size_t>(s)] >= 0; }
  Tensor input(int s, size_t) const override { return vars[in_var[static_cast<size_t>(s)]]; }
  size_t num_outputs(int s) const override { return out_var[static_cast<size_t>(s)] >= 0; }
  Tensor take_output(int s, size_t) override {
    Tensor& v = vars[out_var[static_cast<size_t>(s)]];
    if (!v.defined() || !v.unique()) return {};
    return std::move(v);
  }
  void set_output(int s, Tensor t, size_t) override { vars[out_var[static_cast<size_t>(s)]] = t; }
  cf::KernelOptions options(int64_t, cf::WorkKind) const override { return {}; }
};

TEST(OptimizerRows, KernelWritesTheUniqueParamTensorItselfAndCopiesASharedOne) {
  const cf::OpDef* sgd = cf::find_op_def("sgd");
  ASSERT_NE(sgd, nullptr);
  const cf::OpDesc desc = cf::OpDesc::make("sgd", {}, {});
  FakeCall c;
  c.vars = {vec({1, 2, 3}, DType::kFloat32), vec({1, 1, 1}, DType::kFloat32),
            scalar1(0.5, DType::kFloat32)};
  c.in_var = {0, 1, 2};
  c.out_var = {0};
  const void* before = c.vars[0].get()->raw_data();
  sgd->run(cf::AttrReader(sgd->schema(), desc), c);
  EXPECT_EQ(c.vars[0].get()->raw_data(), before) << "the unique tensor was copied";
  EXPECT_EQ(values(c.vars[0]), (std::vector<double>{0.5, 1.5, 2.5}));

  const Tensor held = c.vars[0];  // another handle: copy on write keeps its values
  sgd->run(cf::AttrReader(sgd->schema(), desc), c);
  EXPECT_EQ(values(held), (std::vector<double>{0.5, 1.5, 2.5}));
  EXPECT_EQ(values(c.vars[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_NE(c.vars[0].get()->raw_data(), held.get()->raw_data());

  // ParamOut another variable: Param keeps its values, ParamOut gets the update.
  c.vars.push_back(vec({9, 9, 9}, DType::kFloat32));
  c.out_var = {3};
  sgd->run(cf::AttrReader(sgd->schema(), desc), c);
  EXPECT_EQ(values(c.vars[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(values(c.vars[3]), (std::vector<double>{-0.5, 0.5, 1.5}));

  // A failing update puts a taken tensor back: the variable is never left empty.
  c.out_var = {0};
  c.vars[1] = vec({1, 1}, DType::kFloat32);
  EXPECT_THROW(sgd->run(cf::AttrReader(sgd->schema(), desc), c), cf::ShapeError);
  ASSERT_TRUE(c.vars[0].defined());
  EXPECT_EQ(values(c.vars[0]), (std::vector<double>{0, 1, 2}));
}

// Runs `p` and returns the error's messages (nested ones too); "" when it succeeds.
std::string error_of(const cf::Program& p, const Feeds& f) {
  try {
    cf::Executor ex;
    ex.run(p, f, {});
  } catch (const std::exception& e) {
    return messages(e);
  }
  return "";
}

TEST(OptimizerRows, ShapeMismatchesAreNamedBySlot) {
  const DType dt = DType::kFloat64;
  const Tensor w = vec({1, 2, 3}, dt), z3 = vec({0, 0, 0}, dt), z2 = vec({0, 0}, dt);
  Feeds base{{"w", w},
             {"g", z3},
             {"v", z3},
             {"m1", z3},
             {"m2", z3},
             {"lr", scalar1(0.1, dt)},
             {"b1p", scalar1(0.9, dt)},
             {"b2p", scalar1(0.999, dt)}};
  struct Case {
    std::string op, var, want;
  };
  const cf::OpDesc::Attrs mu{{"mu", Attr::f(0.9)}};
  for (const Case& k : {Case{"sgd", "g", "sgd: Grad has shape (2,) but Param has (3,)"},
                        Case{"momentum", "g", "momentum: Grad has shape (2,)"},
                        Case{"momentum", "v", "momentum: Velocity has shape (2,)"},
                        Case{"adam", "m1", "adam: Moment1 has shape (2,)"},
                        Case{"adam", "m2", "adam: Moment2 has shape (2,)"},
                        Case{"adamax", "g", "adamax: Grad has shape (2,) but Param has (3,)"},
                        Case{"adamax", "m1", "adamax: Moment has shape (2,)"},
                        Case{"adamax", "m2", "adamax: InfNorm has shape (2,)"},
                        Case{"rmsprop", "g", "rmsprop: Grad has shape (2,) but Param has (3,)"},
                        Case{"rmsprop", "m1", "rmsprop: Moment has shape (2,)"},
                        Case{"rmsprop", "m2", "rmsprop: MeanSquare has shape (2,)"}}) {
    Feeds f = base;
    f[k.var] = z2;
    const std::string err =
        error_of(update_program(k.op, dt, k.op == "momentum" ? mu : cf::OpDesc::Attrs{}), f);
    EXPECT_NE(err.find(k.want), std::string::npos) << k.op << " " << k.var << ": " << err;
  }
}

TEST(OptimizerRows, LearningRateAndBetaPowersMustHaveOneElement) {
  const DType dt = DType::kFloat64;
  const Tensor z3 = vec({0, 0, 0}, dt);
  Feeds base{{"w", vec({1, 2, 3}, dt)},
             {"g", z3},
             {"v", z3},
             {"m1", z3},
             {"m2", z3},
             {"lr", vec({0.1, 0.1}, dt)},
             {"b1p", scalar1(0.9, dt)},
             {"b2p", scalar1(0.999, dt)}};
  // Declared [-1] so the run-time check is the one that fires.
  auto program = [&](const std::string& op) {
    cf::ProgramBuilder b;
    for (const char* n : {"w", "g", "v", "m1", "m2", "lr", "b1p", "b2p"}) b.var(n, dt, {-1});
    if (op == "sgd") {
      b.append_op("sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                  {{"ParamOut", {"w"}}});
    } else {
      b.append_op("adam",
                  {{"Param", {"w"}},
                   {"Grad", {"g"}},
                   {"LearningRate", {"lr"}},
                   {"Moment1", {"m1"}},
                   {"Moment2", {"m2"}},
                   {"Beta1Pow", {"b1p"}},
                   {"Beta2Pow", {"b2p"}}},
                  {{"ParamOut", {"w"}}, {"Moment1Out", {"m1"}}, {"Moment2Out", {"m2"}}});
    }
    return b.build();
  };
  std::string err = error_of(program("sgd"), base);
  EXPECT_NE(err.find("sgd: LearningRate must have 1 element, it has shape (2,)"), std::string::npos)
      << err;
  Feeds f = base;
  f["lr"] = scalar1(0.1, dt);
  f["b2p"] = vec({0.9, 0.9}, dt);
  err = error_of(program("adam"), f);
  EXPECT_NE(err.find("adam: Beta2Pow must have 1 element"), std::string::npos) << err;

  // Inference (infer_op) rejects a LearningRate whose declared shape has more elements.
  const cf::OpDesc sgd = cf::OpDesc::make(
      "sgd", {{"Param", {"w"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}}, {{"ParamOut", {"w"}}});
  try {
    cf::infer_op(sgd, {{dt, {3}}, {dt, {3}}, {dt, {2, 1}}});
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const cf::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sgd: LearningRate must have 1 element"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cf::infer_op(sgd, {{dt, {3}}, {dt, {-1}}, {dt, {-1}}})[0].shape,
            (std::vector<int64_t>{3}));
  EXPECT_THROW(cf::infer_op(sgd, {{dt, {3}}, {dt, {4}}, {dt, {1}}}), cf::ShapeError);
}

TEST(OptimizerRows, AdamaxAndRmspropCheckTypesScalarsAndAttributes) {
  const DType dt = DType::kFloat64;
  const Tensor z3 = vec({0, 0, 0}, dt);
  Feeds base{{"w", vec({1, 2, 3}, dt)},
             {"g", vec({0.5, -1, 2}, dt)},
             {"v", z3},
             {"m1", z3},
             {"m2", z3},
             {"lr", scalar1(0.1, dt)},
             {"b1p", scalar1(0.9, dt)},
             {"b2p", scalar1(0.999, dt)}};
  // A state of another dtype: TypeError naming the slot (inference; a feed of another dtype than
  // the variable's is refused before any op runs).
  const cf::TensorInfo p64{dt, {3}}, p32{DType::kFloat32, {3}}, one{dt, {1}};
  const cf::OpDesc rms = cf::OpDesc::make("rmsprop",
                                          {{"Param", {"w"}},
                                           {"MeanSquare", {"m2"}},
                                           {"LearningRate", {"lr"}},
                                           {"Grad", {"g"}},
                                           {"Moment", {"m1"}}},
                                          {{"ParamOut", {"w"}}});
  const cf::OpDesc amax = cf::OpDesc::make("adamax",
                                           {{"Param", {"w"}},
                                            {"Grad", {"g"}},
                                            {"LearningRate", {"lr"}},
                                            {"Moment", {"m1"}},
                                            {"InfNorm", {"m2"}},
                                            {"Beta1Pow", {"b1p"}}},
                                           {{"ParamOut", {"w"}}});
  std::string err;
  try {
    cf::infer_op(rms, {p64, p32, one, p64, p64});
  } catch (const cf::TypeError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("rmsprop: MeanSquare is float32 but Param is float64"), std::string::npos)
      << err;
  err.clear();
  try {
    cf::infer_op(amax, {p64, p64, one, p64, p32, one});
  } catch (const cf::TypeError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find("adamax: InfNorm is float32 but Param is float64"), std::string::npos) << err;
  EXPECT_THROW(cf::infer_op(amax, {p64, p64, one, p64, p64, {dt, {2}}}), cf::ShapeError);
  EXPECT_EQ(cf::infer_op(rms, {p64, p64, one, p64, p64})[0].shape, (std::vector<int64_t>{3}));
  // Beta1Pow and LearningRate: one element; Beta1Pow not 1.
  Feeds f = base;
  f["b1p"] = vec({0.9, 0.9}, dt);
  err = error_of(update_program("adamax", dt, {}), f);
  EXPECT_NE(err.find("adamax: Beta1Pow must have 1 element"), std::string::npos) << err;
  f = base;
  f["b1p"] = scalar1(1.0, dt);
  err = error_of(update_program("adamax", dt, {}), f);
  EXPECT_NE(err.find("adamax: Beta1Pow is 1"), std::string::npos) << err;
  f = base;
  f["lr"] = vec({0.1, 0.1}, dt);
  err = error_of(update_program("rmsprop", dt, {}), f);
  EXPECT_NE(err.find("rmsprop: LearningRate must have 1 element"), std::string::npos) << err;
  // An integer Param: TypeError.
  cf::ProgramBuilder b;
  for (const char* n : {"w", "g", "m1", "m2", "lr"}) b.var(n, DType::kInt32, {-1});
  b.append_op("rmsprop",
              {{"Param", {"w"}},
               {"MeanSquare", {"m2"}},
               {"LearningRate", {"lr"}},
               {"Grad", {"g"}},
               {"Moment", {"m1"}}},
              {{"ParamOut", {"w"}}, {"MomentOut", {"m1"}}, {"MeanSquareOut", {"m2"}}});
  const Tensor i3 = Tensor::from_vector<int32_t>({1, 2, 3});
  err = error_of(
      b.build(),
      {{"w", i3}, {"g", i3}, {"m1", i3}, {"m2", i3}, {"lr", Tensor::from_vector<int32_t>({1})}});
  EXPECT_NE(err.find("rmsprop: Param must be FP32 or FP64"), std::string::npos) << err;
  // Bad attributes are refused when the program is built or run, naming the attribute.
  struct Bad {
    std::string op;
    cf::OpDesc::Attrs attrs;
    std::string want;
  };
  for (const Bad& k :
       {Bad{"rmsprop", {{"epsilon", Attr::f(-1e-6)}}, "'epsilon' must be finite and >= 0"},
        Bad{"rmsprop", {{"decay", Attr::f(1.5)}}, "'decay' must be in [0, 1], got 1.5"},
        Bad{"rmsprop", {{"momentum", Attr::f(-0.1)}}, "'momentum' must be finite and >= 0"},
        Bad{"adamax", {{"epsilon", Attr::f(-1e-8)}}, "'epsilon' must be finite and >= 0"},
        Bad{"adamax", {{"beta1", Attr::f(1.0)}}, "'beta1' must be in [0, 1)"},
        Bad{"adamax", {{"beta2", Attr::f(-0.5)}}, "'beta2' must be in [0, 1)"}}) {
    try {
      err = error_of(update_program(k.op, dt, k.attrs), base);
    } catch (const std::exception& e) {
      err = messages(e);
    }
    EXPECT_NE(err.find(k.want), std::string::npos) << k.op << ": " << err;
    EXPECT_NE(err.find(k.op), std::string::npos) << err;
  }
}

TEST(OptimizerRows, SignRowGivesMinusOneZeroOneInFloatTypesOnly) {
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    cf::ProgramBuilder b;
    b.var("x", dt, {-1});
    b.var("y", dt, {});
    b.append_op("sign", {{"X", {"x"}}}, {{"Out", {"y"}}});
    cf::Executor ex;
    const Tensor y = ex.run(b.build(), {{"x", vec({-3, 0, 0.25, -1e-20}, dt)}}, {"y"}).at("y");
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(values(y), (std::vector<double>{-1, 0, 1, -1}));
  }
  cf::ProgramBuilder b;
  b.var("x", DType::kInt64, {-1});
  b.var("y", DType::kInt64, {});
  b.append_op("sign", {{"X", {"x"}}}, {{"Out", {"y"}}});
  const std::string err = error_of(b.build(), {{"x", Tensor::from_vector<int64_t>({1, -2})}});
  EXPECT_NE(err.find("sign: X must be FP32 or FP64"), std::string::npos) << err;
}

cf::Program random_program(const std::string& op, const cf::OpDesc::Attrs& attrs) {
  cf::ProgramBuilder b;
  b.var("x", DType::kFloat64, {});
  b.var("y", DType::kFloat64, {});
  for (const char* out : {"x", "y"}) b.append_op(op, {}, {{"Out", {out}}}, attrs);
  return b.build();
}

TEST(OptimizerRows, RandomOpsWithASeedAreReproducibleAndUseInitH) {
  cf::Executor ex;
  const cf::OpDesc::Attrs u{{"shape", Attr::ints({4, 5})},
                            {"min", Attr::f(-0.5)},
                            {"max", Attr::f(2.0)},
                            {"seed", Attr::i(42)},
                            {"dtype", Attr::i(6)}};
  auto a = ex.run(random_program("uniform_random", u), {}, {"x", "y"});
  EXPECT_TRUE(a.at("x").equal_to(cf::uniform_random({4, 5}, -0.5, 2.0, 42, DType::kFloat64)));
  EXPECT_TRUE(a.at("x").equal_to(a.at("y")));  // one seed, the same values
  for (double x : values(a.at("x"))) {
    EXPECT_GE(x, -0.5);
    EXPECT_LT(x, 2.0);
  }
  const cf::OpDesc::Attrs g{{"shape", Attr::ints({3, 7})},
                            {"mean", Attr::f(1.0)},
                            {"std", Attr::f(0.5)},
                            {"seed", Attr::i(9)},
                            {"dtype", Attr::i(6)}};
  auto b = ex.run(random_program("gaussian_random", g), {}, {"x"});
  EXPECT_TRUE(b.at("x").equal_to(cf::gaussian_random({3, 7}, 1.0, 0.5, 9, DType::kFloat64)));
}

TEST(OptimizerRows, RandomOpsWithSeedZeroDifferBetweenOpsAndRuns) {
  cf::Executor ex;
  const cf::OpDesc::Attrs u{{"shape", Attr::ints({64})}, {"dtype", Attr::i(6)}};
  const cf::Program p = random_program("uniform_random", u);
  auto r1 = ex.run(p, {}, {"x", "y"});
  auto r2 = ex.run(p, {}, {"x", "y"});
  EXPECT_FALSE(r1.at("x").equal_to(r1.at("y")));
  EXPECT_FALSE(r1.at("x").equal_to(r2.at("x")));
  for (double x : values(r1.at("x"))) {
    EXPECT_GE(x, -1.0);  // the defaults
    EXPECT_LT(x, 1.0);
  }
  // The default dtype is FP32.
  cf::ProgramBuilder b;
  b.var("z", DType::kFloat32, {});
  b.append_op("gaussian_random", {}, {{"Out", {"z"}}}, {{"shape", Attr::ints({2, 3})}});
  const Tensor z = ex.run(b.build(), {}, {"z"}).at("z");
  EXPECT_EQ(z.dtype(), DType::kFloat32);
  EXPECT_EQ(z.shape(), (cf::Shape{2, 3}));
}

TEST(OptimizerRows, RandomOpsRejectBadAttributes) {
  // Building verifies each attribute alone; min < max is checked when the op runs.
  auto error_building_or_running = [](const std::string& op, const cf::OpDesc::Attrs& attrs) {
    try {
      cf::Executor ex;
      ex.run(random_program(op, attrs), {}, {});
    } catch (const std::exception& e) {
      return messages(e);
    }
    return std::string();
  };
  std::string err = error_building_or_running("uniform_random", {{"shape", Attr::ints({2})},
                                                                 {"min", Attr::f(1.0)},
                                                                 {"max", Attr::f(1.0)},
                                                                 {"dtype", Attr::i(6)}});
  EXPECT_NE(err.find("uniform_random: min must be below max"), std::string::npos) << err;
  err = error_building_or_running(
      "gaussian_random",
      {{"shape", Attr::ints({2})}, {"std", Attr::f(-1.0)}, {"dtype", Attr::i(6)}});
  EXPECT_NE(err.find("gaussian_random: mean must be finite and std finite and >= 0"),
            std::string::npos)
      << err;
  err = error_building_or_running("uniform_random",
                                  {{"shape", Attr::ints({2})}, {"dtype", Attr::i(3)}});
  EXPECT_NE(err.find("'dtype' must be FP16 (4), FP32 (5) or FP64 (6), got 3"), std::string::npos)
      << err;
  err = error_building_or_running("gaussian_random", {{"shape", Attr::ints({2, -1})}});
  EXPECT_NE(err.find("'shape' extents must be >= 0, got -1"), std::string::npos) << err;
  err = error_building_or_running("gaussian_random", {});
  EXPECT_NE(err.find("shape"), std::string::npos) << err;  // required
}

}  // namespace
