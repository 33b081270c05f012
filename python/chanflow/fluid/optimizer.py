"""Fluid's optimisers: ``SGD``, ``Momentum``, ``Adam``, ``Adamax``, ``RMSProp``
(``SGDOptimizer`` ...)::

    loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))
    fluid.optimizer.Adam(learning_rate=0.01).minimize(loss)
    exe.run(fluid.default_startup_program())          # parameters, accumulators, learning rate
    for x, y in batches:
        exe.run(feed={'img': x, 'label': y}, fetch_list=[loss])

``minimize(loss)`` appends the backward ops (``backward.append_backward``), the regularisation
ops (``regularization=`` or a parameter's ``ParamAttr(regularizer=)``) and one optimiser op per
parameter, with op_role Optimize. The learning rate is a persistable ``learning_rate_<n>``
variable set by the startup program (or the Variable given); a parameter's
``ParamAttr(learning_rate=f)`` scales it by ``f``. Accumulators (Momentum's velocity, Adam's
moments and beta powers, Adamax's moment, inf_norm and beta1 power, RMSProp's momentum and
mean_square) are persistable variables ``<param>_<name>_<n>`` initialised in the startup
program; a beta power is one per parameter (mid-2018 Fluid shared one per optimizer, with the
same values).

Optimisers Fluid had whose ops chanflow does not register (``Adagrad``, ``DecayedAdagrad``,
``Ftrl``, ``Adadelta``, ``ModelAverage``) raise ``UnimplementedError`` naming the class when
made.

``LARS_weight_decay=wd > 0`` scales each parameter's learning rate by LARS (Fluid's
``append_LARS``): ``lr * ||param|| / (||grad|| + wd * ||param||)``, computed by ops of the main
program (role Optimize) every step.
"""

from .. import _native
from . import framework
from . import unique_name
from .backward import append_backward
from .initializer import Constant
from .layer_helper import LayerHelper
from .regularizer import append_regularization_ops

__all__ = [
    "SGD",
    "Momentum",
    "Adam",
    "Adamax",
    "RMSProp",
    "Adagrad",
    "DecayedAdagrad",
    "Ftrl",
    "Adadelta",
    "ModelAverage",
    "SGDOptimizer",
    "MomentumOptimizer",
    "AdamOptimizer",
    "AdamaxOptimizer",
    "RMSPropOptimizer",
    "AdagradOptimizer",
    "DecayedAdagradOptimizer",
    "FtrlOptimizer",
    "AdadeltaOptimizer",
    "UnimplementedError",
]


class UnimplementedError(_native.Error, NotImplementedError):
    """A Fluid feature chanflow does not have (an optimiser without kernels): a
    ``chanflow.Error`` and a ``NotImplementedError``."""


class Optimizer(object):
    """The base of the optimisers: ``Optimizer(learning_rate, regularization=None,
    LARS_weight_decay=0.0)``. ``learning_rate`` is a float or a one-element float Variable."""

    def __init__(self, learning_rate, regularization=None, LARS_weight_decay=0.0, name=None,
                 **kwargs):
        cls = type(self).__name__
        if kwargs:
            raise TypeError(
                "%s: unexpected keyword arguments %s" % (cls, ", ".join(sorted(kwargs)))
            )
        if not isinstance(learning_rate, (float, int, framework.Variable)) or isinstance(
            learning_rate, bool
        ):
            raise TypeError("%s: learning_rate must be a float or a Variable, got %r"
                            % (cls, learning_rate))
        if not isinstance(LARS_weight_decay, (float, int)) or isinstance(LARS_weight_decay, bool) \
                or LARS_weight_decay < 0:
            raise TypeError("%s: LARS_weight_decay must be a float >= 0, got %r"
                            % (cls, LARS_weight_decay))
        self._LARS_weight_decay = float(LARS_weight_decay)
        self._learning_rate = learning_rate
        self.regularization = regularization
        self._name = name
        self._learning_rate_map = {}
        self._accumulators = {}
        self._lars_lr = {}  # parameter name -> its LARS-scaled learning-rate Variable
        self.helper = None

    def _global_learning_rate(self, program=None):
        if program is None:
            program = framework.default_main_program()
        return self._learning_rate_map.get(program, None)

    global_learning_rate = _global_learning_rate

    def _create_global_learning_rate(self):
        program = framework.default_main_program()
        if isinstance(self._learning_rate, framework.Variable):
            self._learning_rate_map[program] = self._learning_rate
            return
        if program in self._learning_rate_map:
            return
        lr = program.global_block().create_var(
            name=unique_name.generate("learning_rate"),
            shape=[1],
            dtype="float32",
            persistable=True,
        )
        lr.stop_gradient = True
        self.helper.set_variable_initializer(lr, Constant(float(self._learning_rate)))
        self._learning_rate_map[program] = lr

    def _create_param_lr(self, param_and_grad):
        param = param_and_grad[0]
        lars = self._lars_lr.get(param.name)
        if lars is not None:
            return lars
        factor = param.optimize_attr.get("learning_rate", 1.0)
        lr = self._global_learning_rate()
        if factor == 1.0:
            return lr
        block = framework.default_main_program().global_block()
        scaled = block.create_var(
            name=unique_name.generate(param.name + "_learning_rate"), shape=[1], dtype=lr.dtype
        )
        with block.program._lr_schedule_guard():
            block.append_op(
                type="scale",
                inputs={"X": lr},
                outputs={"Out": scaled},
                attrs={"scale": float(factor)},
            )
        return scaled

    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None):
        per_param = self._accumulators.setdefault(name, {})
        if param.name in per_param:
            raise ValueError(
                "%s: accumulator %s of parameter '%s' already exists"
                % (type(self).__name__, name, param.name)
            )
        if shape is None:
            shape = param.shape
        var = self.helper.create_global_variable(
            name=unique_name.generate(param.name + "_" + name),
            persistable=True,
            dtype=dtype or param.dtype,
            shape=shape,
        )
        var.stop_gradient = True
        self.helper.set_variable_initializer(var, Constant(float(fill_value)))
        per_param[param.name] = var
        return var

    def _get_accumulator(self, name, param):
        try:
            return self._accumulators[name][param.name]
        except KeyError:
            raise ValueError(
                "%s: no accumulator %s for parameter '%s'" % (type(self).__name__, name, param.name)
            )

    def _create_accumulators(self, block, parameters):
        pass

    def _append_lars(self, block, parameters_and_grads):
        """LARS (You, Gitman & Ginsburg 2017), as Fluid's ``append_LARS``: each parameter's
        learning rate becomes ``lr * f * ||param|| / (||grad|| + wd * ||param||)`` (``f`` the
        ``ParamAttr`` factor, ``wd`` = ``LARS_weight_decay``, L2 norms over every element),
        computed by ops each step before the updates. A parameter whose norm is 0 (a bias
        initialised to 0) gets learning rate 0, and 0/0 (parameter and gradient both 0) is
        NaN, as in Fluid."""
        from .layers import nn

        wd = self._LARS_weight_decay
        lr = self._global_learning_rate()
        first = len(block.ops)
        for param, grad in parameters_and_grads:
            if grad is None or not param.trainable:
                continue
            with block.program._optimized_guard([param, grad]):
                param_norm = nn.sqrt(nn.reduce_sum(nn.square(param)))
                grad_norm = nn.sqrt(nn.reduce_sum(nn.square(grad)))
                balance = nn.elementwise_add(
                    grad_norm, param_norm if wd == 1.0 else nn.scale(param_norm, scale=wd))
                factor = param.optimize_attr.get("learning_rate", 1.0)
                base = lr if factor == 1.0 else nn.scale(lr, scale=float(factor))
                self._lars_lr[param.name] = nn.elementwise_div(
                    nn.elementwise_mul(base, param_norm), balance)
        return block.ops[first:]

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError()

    def _finish_update(self, block, parameters_and_grads):
        return []

    def _create_optimization_pass(self, parameters_and_grads, loss, startup_program=None):
        program = loss.block.program
        with framework.program_guard(program, startup_program):
            block = program.global_block()
            self.helper = LayerHelper(type(self).__name__)
            params = [p for p, g in parameters_and_grads if g is not None]
            self._create_accumulators(block, params)
            self._create_global_learning_rate()
            ops = []
            if self._LARS_weight_decay > 0.0:
                ops.extend(self._append_lars(block, parameters_and_grads))
            for param_and_grad in parameters_and_grads:
                if param_and_grad[1] is None or not param_and_grad[0].trainable:
                    continue
                with program._optimized_guard(param_and_grad):
                    ops.append(self._append_optimize_op(block, param_and_grad))
            with program._op_role_guard(framework.OpRole.Optimize):
                ops.extend(self._finish_update(block, parameters_and_grads))
        return ops

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Appends backward, regularisation and optimiser ops for ``loss`` (accumulator and
        learning-rate initialisers go to ``startup_program``, default the default startup
        program). Returns ``(optimize_ops, params_grads)``."""
        params_grads = append_backward(loss, parameter_list, no_grad_set)
        params_grads = sorted(params_grads, key=lambda pg: pg[0].name)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        optimize_ops = self._create_optimization_pass(params_grads, loss, startup_program)
        return optimize_ops, params_grads


class SGDOptimizer(Optimizer):
    """``param -= lr * grad`` (an ``sgd`` op)."""

    def __init__(self, learning_rate, **kwargs):
        super(SGDOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "sgd"

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        return block.append_op(
            type="sgd",
            inputs={"Param": param, "Grad": grad, "LearningRate": self._create_param_lr(
                param_and_grad)},
            outputs={"ParamOut": param},
        )


class MomentumOptimizer(Optimizer):
    """``v = momentum * v + grad; param -= lr * v`` (Nesterov: ``param -= lr * (grad +
    momentum * v)``): a ``momentum`` op with a velocity accumulator."""

    _velocity_acc_str = "velocity"

    def __init__(self, learning_rate, momentum, use_nesterov=False, **kwargs):
        super(MomentumOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "momentum"
        self._momentum = float(momentum)
        self._use_nesterov = bool(use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        velocity = self._get_accumulator(self._velocity_acc_str, param)
        return block.append_op(
            type="momentum",
            inputs={
                "Param": param,
                "Grad": grad,
                "Velocity": velocity,
                "LearningRate": self._create_param_lr(param_and_grad),
            },
            outputs={"ParamOut": param, "VelocityOut": velocity},
            attrs={"mu": self._momentum, "use_nesterov": self._use_nesterov},
        )


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba): an ``adam`` op per parameter with its two moments and the powers
    ``beta1 ** t``, ``beta2 ** t`` (accumulators, the powers advanced by ``scale`` ops after
    the updates)."""

    _moment1_acc_str = "moment1"
    _moment2_acc_str = "moment2"
    _beta1_pow_acc_str = "beta1_pow_acc"
    _beta2_pow_acc_str = "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, **kwargs):
        super(AdamOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adam"
        self._beta1 = float(beta1)
        self._beta2 = float(beta2)
        self._epsilon = float(epsilon)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment1_acc_str, p)
            self._add_accumulator(self._moment2_acc_str, p)
            self._add_accumulator(self._beta1_pow_acc_str, p, fill_value=self._beta1, shape=[1])
            self._add_accumulator(self._beta2_pow_acc_str, p, fill_value=self._beta2, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        m1 = self._get_accumulator(self._moment1_acc_str, param)
        m2 = self._get_accumulator(self._moment2_acc_str, param)
        return block.append_op(
            type="adam",
            inputs={
                "Param": param,
                "Grad": grad,
                "LearningRate": self._create_param_lr(param_and_grad),
                "Moment1": m1,
                "Moment2": m2,
                "Beta1Pow": self._get_accumulator(self._beta1_pow_acc_str, param),
                "Beta2Pow": self._get_accumulator(self._beta2_pow_acc_str, param),
            },
            outputs={"ParamOut": param, "Moment1Out": m1, "Moment2Out": m2},
            attrs={"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon},
        )

    def _finish_update(self, block, parameters_and_grads):
        ops = []
        for param, grad in parameters_and_grads:
            if grad is None or not param.trainable:
                continue
            for acc, beta in (
                (self._beta1_pow_acc_str, self._beta1),
                (self._beta2_pow_acc_str, self._beta2),
            ):
                pow_acc = self._get_accumulator(acc, param)
                ops.append(
                    block.append_op(
                        type="scale",
                        inputs={"X": pow_acc},
                        outputs={"Out": pow_acc},
                        attrs={"scale": beta},
                    )
                )
        return ops


class AdamaxOptimizer(Optimizer):
    """Adamax (Kingma & Ba, section 7), Adam with the infinity norm: an ``adamax`` op per
    parameter with its ``moment`` and ``inf_norm`` accumulators and ``beta1 ** t`` (a
    ``beta1_pow_acc`` accumulator starting at ``beta1``, advanced by a ``scale`` op after the
    updates)::

        moment = beta1 * moment + (1 - beta1) * grad
        inf_norm = max(beta2 * inf_norm + epsilon, |grad|)
        param -= lr / (1 - beta1 ** t) * moment / inf_norm
    """

    _moment_acc_str = "moment"
    _inf_norm_acc_str = "inf_norm"
    _beta1_pow_acc_str = "beta1_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, **kwargs):
        _require_set(type(self).__name__, beta1=beta1, beta2=beta2, epsilon=epsilon)
        super(AdamaxOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "adamax"
        self._beta1 = float(beta1)
        self._beta2 = float(beta2)
        self._epsilon = float(epsilon)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment_acc_str, p)
            self._add_accumulator(self._inf_norm_acc_str, p)
            self._add_accumulator(self._beta1_pow_acc_str, p, fill_value=self._beta1, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        moment = self._get_accumulator(self._moment_acc_str, param)
        inf_norm = self._get_accumulator(self._inf_norm_acc_str, param)
        return block.append_op(
            type="adamax",
            inputs={
                "Param": param,
                "Grad": grad,
                "LearningRate": self._create_param_lr(param_and_grad),
                "Moment": moment,
                "InfNorm": inf_norm,
                "Beta1Pow": self._get_accumulator(self._beta1_pow_acc_str, param),
            },
            outputs={"ParamOut": param, "MomentOut": moment, "InfNormOut": inf_norm},
            attrs={"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon},
        )

    def _finish_update(self, block, parameters_and_grads):
        ops = []
        for param, grad in parameters_and_grads:
            if grad is None or not param.trainable:
                continue
            pow_acc = self._get_accumulator(self._beta1_pow_acc_str, param)
            ops.append(
                block.append_op(
                    type="scale",
                    inputs={"X": pow_acc},
                    outputs={"Out": pow_acc},
                    attrs={"scale": self._beta1},
                )
            )
        return ops


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton's lecture 6e) with optional momentum: an ``rmsprop`` op per parameter
    with its ``mean_square`` and ``momentum`` accumulators::

        mean_square = rho * mean_square + (1 - rho) * grad ** 2
        momentum = momentum_coeff * momentum + lr * grad / sqrt(mean_square + epsilon)
        param -= momentum

    ``rho`` is the op's ``decay`` attribute. As Fluid in mid-2018, there is no ``centered``
    variant."""

    _momentum_acc_str = "momentum"
    _mean_square_acc_str = "mean_square"

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, **kwargs):
        _require_set(type(self).__name__, rho=rho, epsilon=epsilon, momentum=momentum)
        super(RMSPropOptimizer, self).__init__(learning_rate=learning_rate, **kwargs)
        self.type = "rmsprop"
        self._rho = float(rho)
        self._epsilon = float(epsilon)
        self._momentum = float(momentum)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._momentum_acc_str, p)
            self._add_accumulator(self._mean_square_acc_str, p)

    def _append_optimize_op(self, block, param_and_grad):
        param, grad = param_and_grad
        momentum = self._get_accumulator(self._momentum_acc_str, param)
        mean_square = self._get_accumulator(self._mean_square_acc_str, param)
        return block.append_op(
            type="rmsprop",
            inputs={
                "Param": param,
                "Grad": grad,
                "Moment": momentum,
                "MeanSquare": mean_square,
                "LearningRate": self._create_param_lr(param_and_grad),
            },
            outputs={"ParamOut": param, "MomentOut": momentum, "MeanSquareOut": mean_square},
            attrs={"epsilon": self._epsilon, "decay": self._rho, "momentum": self._momentum},
        )


def _require_set(cls, **values):
    """Fluid's checks: a hyperparameter given as None raises ValueError naming it."""
    for name in sorted(values):
        if values[name] is None:
            raise ValueError("%s: %s is not set" % (cls, name))


def _unimplemented(name, missing):
    def __init__(self, *args, **kwargs):
        raise UnimplementedError(
            "%s: chanflow has no '%s' op (the op table's optimisers are sgd, momentum, adam, "
            "adamax and rmsprop); use fluid.optimizer.SGD, Momentum, Adam, Adamax or RMSProp"
            % (name, missing)
        )

    return type(name, (Optimizer,), {"__init__": __init__, "__doc__": "Not supported: raises "
                                     "``UnimplementedError`` when made."})


AdagradOptimizer = _unimplemented("AdagradOptimizer", "adagrad")
DecayedAdagradOptimizer = _unimplemented("DecayedAdagradOptimizer", "decayed_adagrad")
FtrlOptimizer = _unimplemented("FtrlOptimizer", "ftrl")
AdadeltaOptimizer = _unimplemented("AdadeltaOptimizer", "adadelta")
ModelAverage = _unimplemented("ModelAverage", "average_accumulates")

SGD = SGDOptimizer
Momentum = MomentumOptimizer
Adam = AdamOptimizer
Adamax = AdamaxOptimizer
RMSProp = RMSPropOptimizer
Adagrad = AdagradOptimizer
DecayedAdagrad = DecayedAdagradOptimizer
Ftrl = FtrlOptimizer
Adadelta = AdadeltaOptimizer
