// rows_optimizer.cc — Paddle 1.x's optimiser ops (sgd, momentum, adam, adamax, rmsprop) and
// random initialisers (uniform_random, gaussian_random), on the tensor layer's optim.h and init.h.
//
// The optimiser ops update in place: in a Paddle program ParamOut is the variable Param (and
// VelocityOut Velocity, Moment1Out Moment1 ...), and when the scope holds the only reference to
// its tensor the kernel takes that tensor out of the output (KernelCall::take_output) and writes
// it without a copy. When another handle shares it (a fetched or fed tensor, a variable assigned
// from it) or the output is another variable, copy on write gives the output its own values and
// leaves the input's unchanged.
//
// adam reads Beta1Pow and Beta2Pow (beta1^t and beta2^t for the step t it performs), adamax
// Beta1Pow, and neither advances them: as in Paddle 1.x, the optimizer that builds the program
// appends a `scale` op per accumulator after the update (scale = beta1 or beta2) and initialises
// them to beta1 and beta2.
#include <atomic>
#include <cmath>

#include "chanflow/ir/var_type.h"
#include "chanflow/tensor/init.h"
#include "chanflow/tensor/optim.h"
#include "rows.h"
#include "shape_util.h"

namespace chanflow {
namespace {

// ---- checks shared by the updates ---------------------------------------------------------
void check_param(const char* op, const Tensor& p) {
  if (p.dtype() != DType::kFloat32 && p.dtype() != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, op) << "Param must be FP32 or FP64, it is " << p.dtype();
  }
}
// A tensor that must have Param's shape and dtype.
void check_like_param(const char* op, const Tensor& p, const Tensor& t, const char* slot) {
  if (t.shape() != p.shape()) {
    CHANFLOW_OP_THROW(ShapeError, op) << slot << " has shape " << shape_to_string(t.shape())
                                      << " but Param has " << shape_to_string(p.shape());
  }
  if (t.dtype() != p.dtype()) {
    CHANFLOW_OP_THROW(TypeError, op)
        << slot << " is " << t.dtype() << " but Param is " << p.dtype();
  }
}
// A one-element float tensor (LearningRate, Beta1Pow, Beta2Pow), of any shape.
void check_scalar(const char* op, const Tensor& t, const char* slot) {
  if (t.numel() != 1) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << slot << " must have 1 element, it has shape " << shape_to_string(t.shape());
  }
  if (t.dtype() != DType::kFloat32 && t.dtype() != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, op) << slot << " must be FP32 or FP64, it is " << t.dtype();
  }
}

// The state an update writes: for each (input slot, output slot) pair, the output's current
// tensor when it is the input's very tensor object and nothing else holds it (updated in place),
// else the input (whose first write then copies). The identity test is sound: a tensor held by
// two variables is not unique, so take_output only returns Param's object when ParamOut is
// Param. commit() stores every tensor in its output; a destructor without commit (an error in a
// check or the kernel) puts taken tensors back, so a failed op never leaves its variables empty.
class UpdatedState {
 public:
  explicit UpdatedState(KernelCall& c) : c_(c) { entries_.reserve(kMaxBindings); }
  UpdatedState(const UpdatedState&) = delete;
  UpdatedState& operator=(const UpdatedState&) = delete;
  ~UpdatedState() {
    if (committed_) return;
    for (Entry& e : entries_) {
      if (!e.taken) continue;
      try {
        c_.set_output(e.out, std::move(e.value));
      } catch (...) {  // storing the variable's own tensor back cannot fail its dtype check
      }
    }
  }

  // Binds input `in` to output `out`; the returned tensor stays valid until commit().
  Tensor& bind(int in, int out) {
    // References returned earlier stay valid: the vector never grows past its reservation.
    CHANFLOW_CHECK(entries_.size() < kMaxBindings) << "UpdatedState: too many bindings";
    Tensor x = c_.input(in);
    if (c_.wants(out)) {
      const Object* id = x.get();
      x = Tensor();  // the scope's reference is now the only one when nothing else holds it
      Tensor t = c_.take_output(out);
      if (t.defined() && t.get() == id) {
        entries_.push_back({out, std::move(t), true});
        return entries_.back().value;
      }
      if (t.defined()) c_.set_output(out, std::move(t));  // another variable's: put it back
      x = c_.input(in);
    }
    entries_.push_back({out, std::move(x), false});
    return entries_.back().value;
  }

  void commit() {
    committed_ = true;
    for (Entry& e : entries_) c_.set_output(e.out, std::move(e.value));
  }

 private:
  static constexpr size_t kMaxBindings = 4;
  struct Entry {
    int out;
    Tensor value;
    bool taken;
  };
  KernelCall& c_;
  std::vector<Entry> entries_;
  bool committed_ = false;
};

// ---- inference shared by the updates --------------------------------------------------------
// Checks input `slot` against Param (input 0): compatible shape, same dtype.
void infer_check_like_param(const char* op, InferCall& c, int slot, const char* name) {
  const TensorInfo& p = c.input(0);
  const TensorInfo& t = c.input(slot);
  if (!shapes_compatible(t.shape, p.shape)) {
    CHANFLOW_OP_THROW(ShapeError, op) << name << " has shape " << shape_to_string(t.shape)
                                      << " but Param has " << shape_to_string(p.shape);
  }
  if (t.dtype != p.dtype) {
    CHANFLOW_OP_THROW(TypeError, op) << name << " is " << t.dtype << " but Param is " << p.dtype;
  }
}
void infer_check_scalar(const char* op, InferCall& c, int slot, const char* name) {
  const TensorInfo& t = c.input(slot);
  const int64_t n = known_product(t.shape, 0, static_cast<int64_t>(t.shape.size()));
  if (n >= 0 && n != 1) {
    CHANFLOW_OP_THROW(ShapeError, op)
        << name << " must have 1 element, it has shape " << shape_to_string(t.shape);
  }
}
void infer_check_param(const char* op, InferCall& c) {
  const DType d = c.input(0).dtype;
  if (d != DType::kFloat32 && d != DType::kFloat64) {
    CHANFLOW_OP_THROW(TypeError, op) << "Param must be FP32 or FP64, it is " << d;
  }
}

// ---- sgd: Param, Grad, LearningRate -> ParamOut ---------------------------------------------
void infer_sgd(const AttrReader&, InferCall& c) {
  infer_check_param("sgd", c);
  infer_check_like_param("sgd", c, 1, "Grad");
  infer_check_scalar("sgd", c, 2, "LearningRate");
  c.set_output(0, c.input(0));
}
void run_sgd(const AttrReader&, KernelCall& c) {
  const Tensor grad = c.input(1), lr = c.input(2);
  UpdatedState s(c);
  Tensor& param = s.bind(0, 0);
  check_param("sgd", param);
  check_like_param("sgd", param, grad, "Grad");
  check_scalar("sgd", lr, "LearningRate");
  paddle_sgd(param, grad, lr, c.options(param.numel()));
  s.commit();
}

// ---- momentum: Param, Grad, Velocity, LearningRate -> ParamOut, VelocityOut ------------------
std::string check_mu(const Attr& a) {
  const double v = a.as_float();
  return std::isfinite(v) && v >= 0 ? "" : "must be finite and >= 0, got " + std::to_string(v);
}
void infer_momentum(const AttrReader&, InferCall& c) {
  infer_check_param("momentum", c);
  infer_check_like_param("momentum", c, 1, "Grad");
  infer_check_like_param("momentum", c, 2, "Velocity");
  infer_check_scalar("momentum", c, 3, "LearningRate");
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
}
void run_momentum(const AttrReader& a, KernelCall& c) {
  const Tensor grad = c.input(1), lr = c.input(3);
  UpdatedState s(c);
  Tensor& param = s.bind(0, 0);
  Tensor& velocity = s.bind(2, 1);
  check_param("momentum", param);
  check_like_param("momentum", param, grad, "Grad");
  check_like_param("momentum", param, velocity, "Velocity");
  check_scalar("momentum", lr, "LearningRate");
  paddle_momentum(param, grad, velocity, lr, a.f("mu"), a.b("use_nesterov"),
                  c.options(param.numel()));
  s.commit();
}

// ---- adam: Param, Grad, LearningRate, Moment1, Moment2, Beta1Pow, Beta2Pow ->
//            ParamOut, Moment1Out, Moment2Out ------------------------------------------------
std::string check_beta(const Attr& a) {
  const double v = a.as_float();
  return v >= 0 && v < 1 ? "" : "must be in [0, 1), got " + std::to_string(v);
}
std::string check_epsilon(const Attr& a) {
  const double v = a.as_float();
  return std::isfinite(v) && v >= 0 ? "" : "must be finite and >= 0, got " + std::to_string(v);
}
void infer_adam(const AttrReader&, InferCall& c) {
  infer_check_param("adam", c);
  infer_check_like_param("adam", c, 1, "Grad");
  infer_check_scalar("adam", c, 2, "LearningRate");
  infer_check_like_param("adam", c, 3, "Moment1");
  infer_check_like_param("adam", c, 4, "Moment2");
  infer_check_scalar("adam", c, 5, "Beta1Pow");
  infer_check_scalar("adam", c, 6, "Beta2Pow");
  for (int k = 0; k < 3; ++k) c.set_output(k, c.input(0));
}
void run_adam(const AttrReader& a, KernelCall& c) {
  const Tensor grad = c.input(1), lr = c.input(2), b1p = c.input(5), b2p = c.input(6);
  UpdatedState s(c);
  Tensor& param = s.bind(0, 0);
  Tensor& m1 = s.bind(3, 1);
  Tensor& m2 = s.bind(4, 2);
  check_param("adam", param);
  check_like_param("adam", param, grad, "Grad");
  check_like_param("adam", param, m1, "Moment1");
  check_like_param("adam", param, m2, "Moment2");
  check_scalar("adam", lr, "LearningRate");
  check_scalar("adam", b1p, "Beta1Pow");
  check_scalar("adam", b2p, "Beta2Pow");
  paddle_adam(param, grad, m1, m2, lr, b1p, b2p, a.f("beta1"), a.f("beta2"), a.f("epsilon"),
              c.options(param.numel()));
  s.commit();
}

// ---- adamax: Param, Grad, LearningRate, Moment, InfNorm, Beta1Pow ->
//              ParamOut, MomentOut, InfNormOut ------------------------------------------------
void infer_adamax(const AttrReader&, InferCall& c) {
  infer_check_param("adamax", c);
  infer_check_like_param("adamax", c, 1, "Grad");
  infer_check_scalar("adamax", c, 2, "LearningRate");
  infer_check_like_param("adamax", c, 3, "Moment");
  infer_check_like_param("adamax", c, 4, "InfNorm");
  infer_check_scalar("adamax", c, 5, "Beta1Pow");
  for (int k = 0; k < 3; ++k) c.set_output(k, c.input(0));
}
void run_adamax(const AttrReader& a, KernelCall& c) {
  const Tensor grad = c.input(1), lr = c.input(2), b1p = c.input(5);
  UpdatedState s(c);
  Tensor& param = s.bind(0, 0);
  Tensor& moment = s.bind(3, 1);
  Tensor& inf_norm = s.bind(4, 2);
  check_param("adamax", param);
  check_like_param("adamax", param, grad, "Grad");
  check_like_param("adamax", param, moment, "Moment");
  check_like_param("adamax", param, inf_norm, "InfNorm");
  check_scalar("adamax", lr, "LearningRate");
  check_scalar("adamax", b1p, "Beta1Pow");
  if (b1p.cast(DType::kFloat64).item<double>() == 1.0) {
    CHANFLOW_OP_THROW(Error, "adamax") << "Beta1Pow is 1 (1 - Beta1Pow would divide by zero)";
  }
  paddle_adamax(param, grad, moment, inf_norm, lr, b1p, a.f("beta1"), a.f("beta2"), a.f("epsilon"),
                c.options(param.numel()));
  s.commit();
}

// ---- rmsprop: Param, MeanSquare, LearningRate, Grad, Moment ->
//               ParamOut, MomentOut, MeanSquareOut --------------------------------------------
std::string check_decay(const Attr& a) {
  const double v = a.as_float();
  return v >= 0 && v <= 1 ? "" : "must be in [0, 1], got " + std::to_string(v);
}
void infer_rmsprop(const AttrReader&, InferCall& c) {
  infer_check_param("rmsprop", c);
  infer_check_like_param("rmsprop", c, 1, "MeanSquare");
  infer_check_scalar("rmsprop", c, 2, "LearningRate");
  infer_check_like_param("rmsprop", c, 3, "Grad");
  infer_check_like_param("rmsprop", c, 4, "Moment");
  for (int k = 0; k < 3; ++k) c.set_output(k, c.input(0));
}
void run_rmsprop(const AttrReader& a, KernelCall& c) {
  const Tensor lr = c.input(2), grad = c.input(3);
  UpdatedState s(c);
  Tensor& param = s.bind(0, 0);
  Tensor& moment = s.bind(4, 1);
  Tensor& mean_square = s.bind(1, 2);
  check_param("rmsprop", param);
  check_like_param("rmsprop", param, mean_square, "MeanSquare");
  check_like_param("rmsprop", param, grad, "Grad");
  check_like_param("rmsprop", param, moment, "Moment");
  check_scalar("rmsprop", lr, "LearningRate");
  paddle_rmsprop(param, grad, mean_square, moment, lr, a.f("decay"), a.f("momentum"),
                 a.f("epsilon"), c.options(param.numel()));
  s.commit();
}

// ---- uniform_random / gaussian_random -> Out ------------------------------------------------
// Seed 0 is Paddle's "a seed generated by the system". Here it is the next value of a
// process-wide sequence: the k-th run of a seed-0 random op in the process (k = 1, 2, ...) uses
// splitmix64(k). A process that runs the same programs in the same order therefore produces the
// same values on every start, while two seed-0 ops (or two runs of one) still differ. Programs
// whose seed-0 ops run concurrently (in go blocks) draw in scheduling order.
uint64_t next_process_seed() {
  static std::atomic<uint64_t> count{0};
  uint64_t z = (count.fetch_add(1, std::memory_order_relaxed) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z == 0 ? 1 : z;
}
uint64_t seed_of(const AttrReader& a) {
  const int64_t s = a.i("seed");
  return s == 0 ? next_process_seed() : static_cast<uint64_t>(s);
}

std::string check_shape(const Attr& a) {
  for (int64_t d : a.as_ints()) {
    if (d < 0) return "extents must be >= 0, got " + std::to_string(d);
  }
  return {};
}
std::string check_random_dtype(const Attr& a) {
  const int64_t v = a.as_int();
  if (v == static_cast<int64_t>(VarType::kFP16) || v == static_cast<int64_t>(VarType::kFP32) ||
      v == static_cast<int64_t>(VarType::kFP64)) {
    return {};
  }
  return "must be FP16 (4), FP32 (5) or FP64 (6), got " + std::to_string(v);
}

// The checks of both initialisers' attributes that span two of them.
void check_random_attrs(const AttrReader& a) {
  const std::string& op = a.schema().type();
  if (op == "uniform_random") {
    const double lo = a.f("min"), hi = a.f("max");
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) {
      CHANFLOW_OP_THROW(Error, op)
          << "min must be below max, both finite; got min " << lo << ", max " << hi;
    }
  } else {
    const double mean = a.f("mean"), std = a.f("std");
    if (!(std::isfinite(mean) && std::isfinite(std) && std >= 0)) {
      CHANFLOW_OP_THROW(Error, op)
          << "mean must be finite and std finite and >= 0; got mean " << mean << ", std " << std;
    }
  }
}
void infer_random(const AttrReader& a, InferCall& c) {
  check_random_attrs(a);
  c.set_output(
      0, TensorInfo{dtype_from_var_type(static_cast<VarType>(a.i("dtype"))), a.ints("shape")});
}
void run_uniform_random(const AttrReader& a, KernelCall& c) {
  check_random_attrs(a);
  c.set_output(0, uniform_random(a.ints("shape"), a.f("min"), a.f("max"), seed_of(a),
                                 dtype_from_var_type(static_cast<VarType>(a.i("dtype")))));
}
void run_gaussian_random(const AttrReader& a, KernelCall& c) {
  check_random_attrs(a);
  c.set_output(0, gaussian_random(a.ints("shape"), a.f("mean"), a.f("std"), seed_of(a),
                                  dtype_from_var_type(static_cast<VarType>(a.i("dtype")))));
}

constexpr const char* kUpdateNoGrad =
    "an optimiser update writes parameters after the gradients are computed; it is not "
    "differentiated";
constexpr const char* kRandomNoGrad = "a random initialiser has no input to differentiate";

}  // namespace

std::vector<OpDef> optimizer_rows() {
  std::vector<OpDef> rows;
  const auto fp32 = i_default(static_cast<int64_t>(VarType::kFP32));

  rows.push_back(OpDefBuilder("sgd")
                     .doc("ParamOut = Param - LearningRate * Grad (ParamOut is Param: updated in "
                          "place)")
                     .input("Param")
                     .input("Grad")
                     .input("LearningRate", true, false, "one element")
                     .output("ParamOut", true, false, "the variable Param")
                     .infer(infer_sgd)
                     .kernel(run_sgd)
                     .no_grad(kUpdateNoGrad)
                     .build());

  rows.push_back(
      OpDefBuilder("momentum")
          .doc("VelocityOut = mu * Velocity + Grad; ParamOut = Param - (Grad + mu * VelocityOut) "
               "* LearningRate with use_nesterov, else Param - LearningRate * VelocityOut")
          .input("Param")
          .input("Grad")
          .input("Velocity", true, false, "zeros before the first step")
          .input("LearningRate", true, false, "one element")
          .output("ParamOut", true, false, "the variable Param")
          .output("VelocityOut", true, false, "the variable Velocity")
          .attr("mu", T::kFloat, {}, "momentum coefficient (required)", check_mu)
          .attr("use_nesterov", T::kBoolean, b_default(false), "Nesterov momentum")
          .infer(infer_momentum)
          .kernel(run_momentum)
          .no_grad(kUpdateNoGrad)
          .build());

  rows.push_back(
      OpDefBuilder("adam")
          .doc("Moment1Out = beta1 * Moment1 + (1 - beta1) * Grad; Moment2Out = beta2 * Moment2 "
               "+ (1 - beta2) * Grad^2; ParamOut = Param - LearningRate * sqrt(1 - Beta2Pow) / "
               "(1 - Beta1Pow) * Moment1Out / (sqrt(Moment2Out) + epsilon). Beta1Pow and "
               "Beta2Pow are read, not advanced (the optimizer's scale ops advance them)")
          .input("Param")
          .input("Grad")
          .input("LearningRate", true, false, "one element")
          .input("Moment1", true, false, "zeros before the first step")
          .input("Moment2", true, false, "zeros before the first step")
          .input("Beta1Pow", true, false, "beta1^t for this step t, one element")
          .input("Beta2Pow", true, false, "beta2^t for this step t, one element")
          .output("ParamOut", true, false, "the variable Param")
          .output("Moment1Out", true, false, "the variable Moment1")
          .output("Moment2Out", true, false, "the variable Moment2")
          .attr("beta1", T::kFloat, f_default(0.9), "first moment decay", check_beta)
          .attr("beta2", T::kFloat, f_default(0.999), "second moment decay", check_beta)
          .attr("epsilon", T::kFloat, f_default(1e-8), "added to sqrt(Moment2Out)", check_epsilon)
          .infer(infer_adam)
          .kernel(run_adam)
          .no_grad(kUpdateNoGrad)
          .build());

  rows.push_back(
      OpDefBuilder("adamax")
          .doc("MomentOut = beta1 * Moment + (1 - beta1) * Grad; InfNormOut = max(beta2 * InfNorm "
               "+ epsilon, |Grad|); ParamOut = Param - LearningRate / (1 - Beta1Pow) * MomentOut "
               "/ InfNormOut. Beta1Pow is read, not advanced (the optimizer's scale op advances "
               "it)")
          .input("Param")
          .input("Grad")
          .input("LearningRate", true, false, "one element")
          .input("Moment", true, false, "zeros before the first step")
          .input("InfNorm", true, false, "zeros before the first step")
          .input("Beta1Pow", true, false, "beta1^t for this step t, one element")
          .output("ParamOut", true, false, "the variable Param")
          .output("MomentOut", true, false, "the variable Moment")
          .output("InfNormOut", true, false, "the variable InfNorm")
          .attr("beta1", T::kFloat, f_default(0.9), "first moment decay", check_beta)
          .attr("beta2", T::kFloat, f_default(0.999), "infinity norm decay", check_beta)
          .attr("epsilon", T::kFloat, f_default(1e-8), "added to the decayed infinity norm",
                check_epsilon)
          .infer(infer_adamax)
          .kernel(run_adamax)
          .no_grad(kUpdateNoGrad)
          .build());

  rows.push_back(
      OpDefBuilder("rmsprop")
          .doc("MeanSquareOut = decay * MeanSquare + (1 - decay) * Grad^2; MomentOut = momentum * "
               "Moment + LearningRate * Grad / sqrt(MeanSquareOut + epsilon); ParamOut = Param - "
               "MomentOut")
          .input("Param")
          .input("MeanSquare", true, false, "zeros before the first step")
          .input("LearningRate", true, false, "one element")
          .input("Grad")
          .input("Moment", true, false, "zeros before the first step")
          .output("ParamOut", true, false, "the variable Param")
          .output("MomentOut", true, false, "the variable Moment")
          .output("MeanSquareOut", true, false, "the variable MeanSquare")
          .attr("epsilon", T::kFloat, f_default(1e-10), "added to MeanSquareOut under the root",
                check_epsilon)
          .attr("decay", T::kFloat, f_default(0.9), "mean square decay (Fluid's rho)", check_decay)
          .attr("momentum", T::kFloat, f_default(0.0), "momentum coefficient", check_mu)
          .infer(infer_rmsprop)
          .kernel(run_rmsprop)
          .no_grad(kUpdateNoGrad)
          .build());

  rows.push_back(
      OpDefBuilder("uniform_random")
          .doc("Out = values uniform in [min, max) of `shape` and `dtype`; seed 0: the process's "
               "next seed (see docs/ops.md)")
          .output("Out")
          .attr("shape", T::kInts, {}, "the output's shape (required)", check_shape)
          .attr("min", T::kFloat, f_default(-1.0), "lower bound (included)")
          .attr("max", T::kFloat, f_default(1.0), "upper bound (excluded)")
          .attr("seed", T::kInt, i_default(0), "0: the process's next seed; else reproducible")
          .attr("dtype", T::kInt, fp32, "element VarType: FP16, FP32 or FP64", check_random_dtype)
          .infer(infer_random)
          .kernel(run_uniform_random)
          .no_grad(kRandomNoGrad)
          .build());

  rows.push_back(
      OpDefBuilder("gaussian_random")
          .doc("Out = normal values with `mean` and `std` of `shape` and `dtype`; seed 0: the "
               "process's next seed (see docs/ops.md)")
          .output("Out")
          .attr("shape", T::kInts, {}, "the output's shape (required)", check_shape)
          .attr("mean", T::kFloat, f_default(0.0), "mean")
          .attr("std", T::kFloat, f_default(1.0), "standard deviation (>= 0)")
          .attr("seed", T::kInt, i_default(0), "0: the process's next seed; else reproducible")
          .attr("dtype", T::kInt, fp32, "element VarType: FP16, FP32 or FP64", check_random_dtype)
          .infer(infer_random)
          .kernel(run_gaussian_random)
          .no_grad(kRandomNoGrad)
          .build());
  return rows;
}

}  // namespace chanflow
