"""Fluid's neural-network layers: ``fc``, ``conv2d``, ``pool2d``, ``batch_norm``, ``dropout``,
the losses (``cross_entropy``, ``softmax_with_cross_entropy``, ``square_error_cost``), ``mean``,
``accuracy``, the activations by name, shape layers (``reshape``, ``flatten``, ``split``,
``transpose``), ``matmul``, ``scale``, reductions, the elementwise and the logical layers::

    img = fluid.layers.data(name='img', shape=[1, 28, 28])
    label = fluid.layers.data(name='label', shape=[1], dtype='int64')
    conv = fluid.layers.conv2d(img, num_filters=8, filter_size=5, act='relu')
    pool = fluid.layers.pool2d(conv, pool_size=2, pool_stride=2)
    prediction = fluid.layers.fc(pool, size=10, act='softmax')
    loss = fluid.layers.mean(fluid.layers.cross_entropy(prediction, label))

Each layer appends the op table's op of Paddle's name (docs/ops.md) and declares its output
with the shape Paddle's compile-time inference gave (-1 for the batch), so the layers after it
can size their parameters. Parameters are made as ``LayerHelper.create_parameter`` says
(``<layer>_<n>.w_<m>``, initialised in the startup program). ``act`` is an op type (``'relu'``)
or a dict with ``type`` and the activation's attributes.

``elementwise_<op>(x, y, axis=-1, use_mkldnn=False, act=None, name=None)``: ``x <op> y`` with
NumPy broadcasting (and Fluid's ``axis``: where ``y``'s dimensions line up in ``x``'s) into a new
variable of ``x``'s dtype (named ``name`` when given), then ``act``.
"""

import math

from .. import framework
from ..initializer import Constant, Normal
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr

__all__ = [
    "fc",
    "conv2d",
    "pool2d",
    "batch_norm",
    "dropout",
    "cross_entropy",
    "softmax_with_cross_entropy",
    "square_error_cost",
    "mean",
    "mul",
    "accuracy",
    "topk",
    "relu",
    "sigmoid",
    "tanh",
    "softmax",
    "softplus",
    "leaky_relu",
    "exp",
    "log",
    "sqrt",
    "square",
    "abs",
    "reshape",
    "flatten",
    "split",
    "transpose",
    "matmul",
    "scale",
    "reduce_sum",
    "reduce_mean",
    "elementwise_add",
    "elementwise_sub",
    "elementwise_mul",
    "elementwise_div",
    "elementwise_max",
    "elementwise_min",
    "logical_and",
    "logical_or",
    "logical_not",
]


def _elementwise_op(op_type, x, y, axis, use_mkldnn, act, name):
    for arg, value in (("x", x), ("y", y)):
        if not isinstance(value, framework.Variable):
            raise TypeError("%s: %s must be a Variable, got %r" % (op_type, arg, value))
    helper = LayerHelper(op_type, name=name, act=act)
    if name is None:
        # Fluid's 2018 layer: a temporary "<op>_<n>.tmp_<m>".
        out = helper.create_tmp_variable(dtype=x.dtype, shape=x.shape)
    else:
        out = helper.create_variable(name=name, dtype=x.dtype, shape=x.shape, persistable=False)
    helper.append_op(
        type=op_type,
        inputs={"X": x, "Y": y},
        outputs={"Out": out},
        attrs={"axis": axis, "use_mkldnn": use_mkldnn},
    )
    out._shape = _broadcast_shape(x.shape, y.shape, axis)
    return helper.append_activation(out)


def elementwise_add(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x + y``."""
    return _elementwise_op("elementwise_add", x, y, axis, use_mkldnn, act, name)


def elementwise_sub(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x - y``."""
    return _elementwise_op("elementwise_sub", x, y, axis, use_mkldnn, act, name)


def elementwise_mul(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x * y``."""
    return _elementwise_op("elementwise_mul", x, y, axis, use_mkldnn, act, name)


def elementwise_div(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``x / y`` (integers: truncated toward zero; a zero divisor is an error when run)."""
    return _elementwise_op("elementwise_div", x, y, axis, use_mkldnn, act, name)


def elementwise_max(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``max(x, y)`` elementwise."""
    return _elementwise_op("elementwise_max", x, y, axis, use_mkldnn, act, name)


def elementwise_min(x, y, axis=-1, use_mkldnn=False, act=None, name=None):
    """``min(x, y)`` elementwise."""
    return _elementwise_op("elementwise_min", x, y, axis, use_mkldnn, act, name)


# ---- shapes ------------------------------------------------------------------------------------


def _broadcast_shape(xs, ys, axis):
    """The output shape of an elementwise op (``x``'s when ``y`` lines up inside it)."""
    if len(ys) <= len(xs):
        return tuple(xs)
    return tuple(ys)


def _prod(dims):
    n = 1
    for d in dims:
        if d < 0:
            return -1
        n *= d
    return n


def _pair(value, what, layer):
    """An int or a list of two ints as a list of two (Fluid's ``convert_to_list``)."""
    if isinstance(value, int):
        return [value, value]
    try:
        out = [int(v) for v in value]
    except (TypeError, ValueError):
        raise TypeError("%s: %s must be an int or a list of 2 ints, got %r" % (layer, what, value))
    if len(out) != 2:
        raise ValueError("%s: %s must be an int or a list of 2 ints, got %r" % (layer, what, value))
    return out


def _check_var(value, what, layer):
    if not isinstance(value, framework.Variable):
        raise TypeError("%s: %s must be a Variable, got %r" % (layer, what, value))


def _conv_out(size, k, pad, stride, dilation=1, ceil_mode=False):
    if size < 0:
        return -1
    span = size + 2 * pad - (dilation * (k - 1) + 1)
    if ceil_mode:
        return (span + stride - 1) // stride + 1
    return span // stride + 1


def _new_out(helper, dtype, shape, stop_gradient=False):
    return helper.create_tmp_variable(dtype=dtype, shape=shape, stop_gradient=stop_gradient)


def _unary(op_type, x, attrs, name, layer=None):
    layer = layer or op_type
    _check_var(x, "x", layer)
    helper = LayerHelper(layer, name=name)
    out = _new_out(helper, x.dtype, x.shape)
    helper.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=attrs)
    return out


# ---- layers with parameters --------------------------------------------------------------------


def fc(input, size, num_flatten_dims=1, param_attr=None, bias_attr=None, act=None, name=None,
       is_test=False, use_mkldnn=False):
    """A fully connected layer: ``act(sum_i flatten(input_i) @ W_i + b)``.

    ``input`` is a Variable or a list of them (one weight each, the products added by a ``sum``
    op); each is viewed as a matrix of ``prod(shape[:num_flatten_dims])`` rows. ``W_i`` has shape
    ``[prod(shape[num_flatten_dims:]), size]`` (Xavier by default), ``b`` ``[size]`` (zero; none
    when ``bias_attr`` is False). Ops: ``mul`` (``x_num_col_dims=num_flatten_dims``), ``sum``,
    ``elementwise_add`` (``axis=num_flatten_dims``), the activation."""
    helper = LayerHelper("fc", **locals())
    inputs = helper.input()
    if not inputs:
        raise ValueError("fc: input must be a Variable or a non-empty list of Variables")
    for v in inputs:
        _check_var(v, "input", "fc")
    if not isinstance(size, int) or size <= 0:
        raise ValueError("fc: size must be a positive int, got %r" % (size,))
    dtype = helper.input_dtype()
    mul_results = []
    for input_var, param_attr in helper.iter_inputs_and_params():
        shape = input_var.shape
        if not 0 < num_flatten_dims < len(shape):
            raise ValueError(
                "fc: num_flatten_dims %d out of range for input '%s' of shape %s"
                % (num_flatten_dims, input_var.name, list(shape))
            )
        in_features = _prod(shape[num_flatten_dims:])
        if in_features < 0:
            raise ValueError(
                "fc: input '%s' has shape %s: its dimensions after num_flatten_dims must be "
                "known" % (input_var.name, list(shape))
            )
        w = helper.create_parameter(attr=param_attr, shape=[in_features, size], dtype=dtype)
        tmp = _new_out(helper, dtype, list(shape[:num_flatten_dims]) + [size])
        helper.append_op(
            type="mul",
            inputs={"X": input_var, "Y": w},
            outputs={"Out": tmp},
            attrs={"x_num_col_dims": num_flatten_dims, "y_num_col_dims": 1},
        )
        mul_results.append(tmp)
    if len(mul_results) == 1:
        pre_bias = mul_results[0]
    else:
        pre_bias = _new_out(helper, dtype, mul_results[0].shape)
        helper.append_op(type="sum", inputs={"X": mul_results}, outputs={"Out": pre_bias})
    pre_activation = helper.append_bias_op(pre_bias, dim_start=num_flatten_dims)
    return helper.append_activation(pre_activation)


def conv2d(input, num_filters, filter_size, stride=1, padding=0, dilation=1, groups=None,
           param_attr=None, bias_attr=None, use_cudnn=True, act=None, name=None,
           use_mkldnn=False):
    """A 2-D convolution of an NCHW ``input``: filter ``[num_filters, C / groups, kh, kw]``
    (by default normal of std ``sqrt(2 / (kh * kw * C))``, as Paddle), bias ``[num_filters]``
    added along axis 1, then ``act``. A grouped convolution with one group per input channel
    and ``use_cudnn=False`` is a ``depthwise_conv2d`` op, as in Paddle."""
    _check_var(input, "input", "conv2d")
    if len(input.shape) != 4:
        raise ValueError(
            "conv2d: input '%s' must be NCHW (4-D), its shape is %s"
            % (input.name, list(input.shape))
        )
    num_channels = input.shape[1]
    if num_channels < 0:
        raise ValueError("conv2d: input '%s' must declare its channels (dim 1)" % input.name)
    helper = LayerHelper("conv2d", **locals())
    dtype = input.dtype
    if groups is None:
        num_filter_channels = num_channels
        groups = 1
    else:
        if num_channels % groups != 0:
            raise ValueError(
                "conv2d: %d input channels are not divisible by groups=%d" % (num_channels, groups)
            )
        num_filter_channels = num_channels // groups
    l_type = "conv2d"
    if num_channels == groups and num_filters % num_channels == 0 and not use_cudnn:
        l_type = "depthwise_conv2d"
    filter_size = _pair(filter_size, "filter_size", "conv2d")
    stride = _pair(stride, "stride", "conv2d")
    padding = _pair(padding, "padding", "conv2d")
    dilation = _pair(dilation, "dilation", "conv2d")
    filter_shape = [num_filters, num_filter_channels] + filter_size
    std = math.sqrt(2.0 / (filter_size[0] * filter_size[1] * num_channels))
    w = helper.create_parameter(
        attr=helper.param_attr,
        shape=filter_shape,
        dtype=dtype,
        default_initializer=Normal(0.0, std, 0),
    )
    out_shape = [input.shape[0], num_filters] + [
        _conv_out(input.shape[2 + i], filter_size[i], padding[i], stride[i], dilation[i])
        for i in range(2)
    ]
    pre_bias = _new_out(helper, dtype, out_shape)
    helper.append_op(
        type=l_type,
        inputs={"Input": input, "Filter": w},
        outputs={"Output": pre_bias},
        attrs={
            "strides": stride,
            "paddings": padding,
            "dilations": dilation,
            "groups": groups,
            "use_cudnn": use_cudnn,
            "use_mkldnn": use_mkldnn,
        },
    )
    pre_act = helper.append_bias_op(pre_bias, dim_start=1, dim_end=2)
    return helper.append_activation(pre_act)


def pool2d(input, pool_size=-1, pool_type="max", pool_stride=1, pool_padding=0,
           global_pooling=False, use_cudnn=True, ceil_mode=False, use_mkldnn=False, name=None,
           exclusive=True):
    """Max or average pooling of an NCHW ``input`` (``pool_type`` ``'max'`` or ``'avg'``):
    windows ``pool_size``, steps ``pool_stride``, zero ``pool_padding``; ``global_pooling``
    pools each channel to 1x1; ``ceil_mode`` rounds the output size up; ``exclusive`` averages
    over the window's elements inside the input only."""
    _check_var(input, "input", "pool2d")
    if pool_type not in ("max", "avg"):
        raise ValueError(
            "pool2d: pool_type must be 'max' or 'avg', got %r" % (pool_type,)
        )
    if global_pooling is False and pool_size == -1:
        raise ValueError("pool2d: pool_size must be given unless global_pooling is True")
    if len(input.shape) != 4:
        raise ValueError(
            "pool2d: input '%s' must be NCHW (4-D), its shape is %s"
            % (input.name, list(input.shape))
        )
    if global_pooling and pool_size == -1:
        # chanflow's pool2d checks ksize even when pooling globally: the whole plane.
        pool_size = [d if d > 0 else 1 for d in input.shape[2:]]
    pool_size = _pair(pool_size, "pool_size", "pool2d")
    pool_stride = _pair(pool_stride, "pool_stride", "pool2d")
    pool_padding = _pair(pool_padding, "pool_padding", "pool2d")
    helper = LayerHelper("pool2d", **locals())
    if global_pooling:
        hw = [1, 1]
    else:
        hw = [
            _conv_out(input.shape[2 + i], pool_size[i], pool_padding[i], pool_stride[i],
                      1, ceil_mode)
            for i in range(2)
        ]
    out = _new_out(helper, input.dtype, list(input.shape[:2]) + hw)
    helper.append_op(
        type="pool2d",
        inputs={"X": input},
        outputs={"Out": out},
        attrs={
            "pooling_type": pool_type,
            "ksize": pool_size,
            "global_pooling": global_pooling,
            "strides": pool_stride,
            "paddings": pool_padding,
            "use_cudnn": use_cudnn,
            "ceil_mode": ceil_mode,
            "exclusive": exclusive,
        },
    )
    return out


def batch_norm(input, act=None, is_test=False, momentum=0.9, epsilon=1e-05, param_attr=None,
               bias_attr=None, data_layout="NCHW", in_place=False, name=None,
               moving_mean_name=None, moving_variance_name=None,
               do_model_average_for_mean_and_var=False, fuse_with_relu=False, use_mkldnn=False):
    """Batch normalisation over the channel axis (1 for NCHW, the last for NHWC): scale (ones)
    and bias (zeros) parameters of ``[C]``, and the moving mean (zeros) and variance (ones),
    non-trainable persistable parameters the op updates in place with ``momentum`` while
    training; ``is_test`` normalises with them instead."""
    _check_var(input, "input", "batch_norm")
    if data_layout not in ("NCHW", "NHWC"):
        raise ValueError("batch_norm: data_layout must be 'NCHW' or 'NHWC', got %r" % data_layout)
    if fuse_with_relu:
        raise ValueError("batch_norm: fuse_with_relu is not supported (use act='relu')")
    helper = LayerHelper("batch_norm", **locals())
    dtype = input.dtype
    shape = input.shape
    if len(shape) < 2:
        raise ValueError("batch_norm: input '%s' needs at least 2 dims" % input.name)
    channels = shape[1] if data_layout == "NCHW" else shape[-1]
    if channels < 0:
        raise ValueError("batch_norm: input '%s' must declare its channel dim" % input.name)
    param_shape = [channels]
    scale = helper.create_parameter(
        attr=helper.param_attr, shape=param_shape, dtype=dtype,
        default_initializer=Constant(1.0),
    )
    bias = helper.create_parameter(
        attr=helper.bias_attr, shape=param_shape, dtype=dtype, is_bias=True
    )
    mean = helper.create_parameter(
        attr=ParamAttr(name=moving_mean_name, initializer=Constant(0.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var),
        shape=param_shape, dtype=dtype,
    )
    mean.stop_gradient = True
    variance = helper.create_parameter(
        attr=ParamAttr(name=moving_variance_name, initializer=Constant(1.0), trainable=False,
                       do_model_average=do_model_average_for_mean_and_var),
        shape=param_shape, dtype=dtype,
    )
    variance.stop_gradient = True
    saved_mean = _new_out(helper, dtype, param_shape, stop_gradient=True)
    saved_variance = _new_out(helper, dtype, param_shape, stop_gradient=True)
    out = input if in_place else _new_out(helper, dtype, shape)
    helper.append_op(
        type="batch_norm",
        inputs={"X": input, "Scale": scale, "Bias": bias, "Mean": mean, "Variance": variance},
        outputs={
            "Y": out,
            "MeanOut": mean,
            "VarianceOut": variance,
            "SavedMean": saved_mean,
            "SavedVariance": saved_variance,
        },
        attrs={
            "momentum": momentum,
            "epsilon": epsilon,
            "is_test": is_test,
            "data_layout": data_layout,
        },
    )
    return helper.append_activation(out)


# ---- layers without parameters -----------------------------------------------------------------


def dropout(x, dropout_prob, is_test=False, seed=None, name=None):
    """Zeroes each element with probability ``dropout_prob`` while training (Paddle's 2018
    dropout: no rescaling then, the output is scaled by ``1 - dropout_prob`` when ``is_test``).
    ``seed`` fixes the mask's draw."""
    _check_var(x, "x", "dropout")
    if not 0.0 <= dropout_prob <= 1.0:
        raise ValueError("dropout: dropout_prob must be in [0, 1], got %r" % (dropout_prob,))
    helper = LayerHelper("dropout", **locals())
    out = _new_out(helper, x.dtype, x.shape)
    mask = _new_out(helper, x.dtype, x.shape, stop_gradient=True)
    helper.append_op(
        type="dropout",
        inputs={"X": [x]},
        outputs={"Out": [out], "Mask": [mask]},
        attrs={
            "dropout_prob": float(dropout_prob),
            "is_test": is_test,
            "fix_seed": seed is not None,
            "seed": seed if seed is not None else 0,
        },
    )
    return out


def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    """``-log(input[label])`` per row (``input`` holds probabilities, ``label`` int64 class ids
    of shape ``[N, 1]``), or ``-sum(label * log(input))`` with ``soft_label``: shape ``[N, 1]``."""
    _check_var(input, "input", "cross_entropy")
    _check_var(label, "label", "cross_entropy")
    helper = LayerHelper("cross_entropy", **locals())
    out = _new_out(helper, input.dtype, list(input.shape[:-1]) + [1])
    helper.append_op(
        type="cross_entropy",
        inputs={"X": [input], "Label": [label]},
        outputs={"Y": [out]},
        attrs={"soft_label": soft_label, "ignore_index": ignore_index},
    )
    return out


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100):
    """``cross_entropy(softmax(logits), label)`` computed stably in one op; returns the loss
    (``[N, 1]``)."""
    _check_var(logits, "logits", "softmax_with_cross_entropy")
    _check_var(label, "label", "softmax_with_cross_entropy")
    helper = LayerHelper("softmax_with_cross_entropy", **locals())
    softmax_out = _new_out(helper, logits.dtype, logits.shape)
    loss = _new_out(helper, logits.dtype, list(logits.shape[:-1]) + [1])
    helper.append_op(
        type="softmax_with_cross_entropy",
        inputs={"Logits": logits, "Label": label},
        outputs={"Softmax": softmax_out, "Loss": loss},
        attrs={"soft_label": soft_label, "ignore_index": ignore_index},
    )
    return loss


def square_error_cost(input, label):
    """``(input - label) ** 2`` elementwise (``elementwise_sub`` and ``square``)."""
    _check_var(input, "input", "square_error_cost")
    _check_var(label, "label", "square_error_cost")
    helper = LayerHelper("square_error_cost", **locals())
    minus_out = _new_out(helper, input.dtype, input.shape)
    helper.append_op(
        type="elementwise_sub", inputs={"X": [input], "Y": [label]}, outputs={"Out": [minus_out]}
    )
    square_out = _new_out(helper, input.dtype, input.shape)
    helper.append_op(type="square", inputs={"X": [minus_out]}, outputs={"Out": [square_out]})
    return square_out


def mean(x, name=None):
    """The mean of all elements of ``x``: shape ``[1]``."""
    _check_var(x, "x", "mean")
    helper = LayerHelper("mean", **locals())
    out = _new_out(helper, x.dtype, [1])
    helper.append_op(type="mean", inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """``flatten(x, x_num_col_dims) @ flatten(y, y_num_col_dims)``."""
    _check_var(x, "x", "mul")
    _check_var(y, "y", "mul")
    helper = LayerHelper("mul", **locals())
    out = _new_out(
        helper, x.dtype, list(x.shape[:x_num_col_dims]) + list(y.shape[y_num_col_dims:])
    )
    helper.append_op(
        type="mul",
        inputs={"X": x, "Y": y},
        outputs={"Out": out},
        attrs={"x_num_col_dims": x_num_col_dims, "y_num_col_dims": y_num_col_dims},
    )
    return out


def topk(input, k, name=None):
    """The ``k`` largest values of each row of ``input`` and their int64 indices."""
    _check_var(input, "input", "topk")
    helper = LayerHelper("top_k", **locals())
    shape = list(input.shape[:-1]) + [k]
    values = _new_out(helper, input.dtype, shape)
    indices = _new_out(helper, "int64", shape, stop_gradient=True)
    helper.append_op(
        type="top_k",
        inputs={"X": [input]},
        outputs={"Out": [values], "Indices": [indices]},
        attrs={"k": k},
    )
    values.stop_gradient = True
    return values, indices


def accuracy(input, label, k=1, correct=None, total=None):
    """The fraction of rows whose ``label`` is among the ``k`` largest of ``input`` (``top_k``
    then ``accuracy``): float32 ``[1]``; ``correct`` and ``total`` (``[1]``) are written
    when given, else made (int32, as the op computes them)."""
    _check_var(input, "input", "accuracy")
    _check_var(label, "label", "accuracy")
    helper = LayerHelper("accuracy", **locals())
    topk_out, topk_indices = topk(input, k=k)
    acc_out = _new_out(helper, "float32", [1], stop_gradient=True)
    if correct is None:
        correct = _new_out(helper, "int32", [1], stop_gradient=True)
    if total is None:
        total = _new_out(helper, "int32", [1], stop_gradient=True)
    helper.append_op(
        type="accuracy",
        inputs={"Out": [topk_out], "Indices": [topk_indices], "Label": [label]},
        outputs={"Accuracy": [acc_out], "Correct": [correct], "Total": [total]},
    )
    return acc_out


# ---- activations ---------------------------------------------------------------------------------


def relu(x, name=None):
    """``max(x, 0)``."""
    return _unary("relu", x, {}, name)


def sigmoid(x, name=None):
    """``1 / (1 + exp(-x))``."""
    return _unary("sigmoid", x, {}, name)


def tanh(x, name=None):
    """``tanh(x)``."""
    return _unary("tanh", x, {}, name)


def softplus(x, name=None):
    """``log(1 + exp(x))``."""
    return _unary("softplus", x, {}, name)


def exp(x, name=None):
    """``exp(x)``."""
    return _unary("exp", x, {}, name)


def log(x, name=None):
    """``log(x)`` (-inf at 0, NaN below)."""
    return _unary("log", x, {}, name)


def sqrt(x, name=None):
    """``sqrt(x)``."""
    return _unary("sqrt", x, {}, name)


def square(x, name=None):
    """``x * x``."""
    return _unary("square", x, {}, name)


def abs(x, name=None):
    """``|x|``."""
    return _unary("abs", x, {}, name)


def leaky_relu(x, alpha=0.02, name=None):
    """``x`` where positive, else ``alpha * x``."""
    return _unary("leaky_relu", x, {"alpha": float(alpha)}, name)


def softmax(input, use_cudnn=True, name=None, axis=-1):
    """The softmax over the last axis (or ``axis``)."""
    return _unary("softmax", input, {"axis": axis}, name)


# ---- shapes and arithmetic -----------------------------------------------------------------------


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` with shape ``shape``: a 0 copies ``x``'s dimension at that position, one -1 is
    inferred from the element count. ``actual_shape`` (a shape given at run time) is not
    supported."""
    _check_var(x, "x", "reshape")
    if actual_shape is not None:
        raise ValueError("reshape: actual_shape (a shape variable) is not supported")
    try:
        shape = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise TypeError("reshape: shape must be a list of ints, got %r" % (shape,))
    if shape.count(-1) > 1:
        raise ValueError("reshape: at most one dimension of shape %s may be -1" % shape)
    helper = LayerHelper("reshape", **locals())
    out_shape = []
    for i, d in enumerate(shape):
        if d == 0:
            if i >= len(x.shape):
                raise ValueError(
                    "reshape: shape %s copies dim %d of '%s', which has %d dims"
                    % (shape, i, x.name, len(x.shape))
                )
            out_shape.append(x.shape[i])
        else:
            out_shape.append(d)
    if -1 in shape:
        # The copied dims (0) cancel out of the element count, so a -1 elsewhere is known
        # whenever the dims that are not copied are.
        copied = set(i for i, d in enumerate(shape) if d == 0)
        known = _prod([d for i, d in enumerate(out_shape) if i not in copied and shape[i] != -1])
        total = _prod([d for i, d in enumerate(x.shape) if i not in copied])
        if total > 0 and known > 0:
            out_shape[shape.index(-1)] = total // known
    out = _new_out(helper, x.dtype, out_shape)
    helper.append_op(
        type="reshape", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"shape": shape}
    )
    return helper.append_activation(out)


def flatten(x, axis=1, name=None):
    """``x`` as a matrix: the dims before ``axis`` make the rows, the others the columns."""
    _check_var(x, "x", "flatten")
    if not 0 <= axis <= len(x.shape):
        raise ValueError("flatten: axis %d out of range for '%s' (%d dims)" % (axis, x.name,
                                                                              len(x.shape)))
    helper = LayerHelper("flatten", **locals())
    out = _new_out(helper, x.dtype, [_prod(x.shape[:axis]), _prod(x.shape[axis:])])
    helper.append_op(type="flatten", inputs={"X": x}, outputs={"Out": out}, attrs={"axis": axis})
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """``input`` cut along ``dim`` into ``num_or_sections`` equal parts (an int) or parts of the
    given sizes (a list); returns the list of parts."""
    _check_var(input, "input", "split")
    helper = LayerHelper("split", **locals())
    rank = len(input.shape)
    if dim < 0:
        dim += rank
    if not 0 <= dim < rank:
        raise ValueError("split: dim out of range for '%s' of shape %s" % (input.name,
                                                                         list(input.shape)))
    size = input.shape[dim]
    if isinstance(num_or_sections, int):
        num = num_or_sections
        if num <= 0 or (size > 0 and size % num != 0):
            raise ValueError(
                "split: dim %d of '%s' (%d) does not split into %d equal parts"
                % (dim, input.name, size, num)
            )
        sections = []
        part_sizes = [size // num if size > 0 else -1] * num
    else:
        sections = [int(s) for s in num_or_sections]
        num = 0
        part_sizes = sections
    outs = []
    for s in part_sizes:
        shape = list(input.shape)
        shape[dim] = s
        outs.append(_new_out(helper, input.dtype, shape))
    helper.append_op(
        type="split",
        inputs={"X": input},
        outputs={"Out": outs},
        attrs={"num": num, "sections": sections, "axis": dim},
    )
    return outs


def transpose(x, perm, name=None):
    """``x`` with its dims permuted by ``perm``."""
    _check_var(x, "x", "transpose")
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError(
            "transpose: perm %s is not a permutation of the %d dims of '%s'"
            % (list(perm), len(x.shape), x.name)
        )
    helper = LayerHelper("transpose", **locals())
    out = _new_out(helper, x.dtype, [x.shape[i] for i in perm])
    helper.append_op(
        type="transpose", inputs={"X": [x]}, outputs={"Out": [out]}, attrs={"axis": list(perm)}
    )
    return out


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """``alpha * x @ y`` (batched over leading dims), either operand transposed first."""
    _check_var(x, "x", "matmul")
    _check_var(y, "y", "matmul")
    helper = LayerHelper("matmul", **locals())
    xs, ys = list(x.shape), list(y.shape)
    shape = []
    if len(xs) >= 2 and len(ys) >= 2:
        rows = xs[-1] if transpose_x else xs[-2]
        cols = ys[-2] if transpose_y else ys[-1]
        batch = xs[:-2] if len(xs) >= len(ys) else ys[:-2]
        shape = batch + [rows, cols]
    out = _new_out(helper, x.dtype, shape or None)
    helper.append_op(
        type="matmul",
        inputs={"X": x, "Y": y},
        outputs={"Out": out},
        attrs={"transpose_X": transpose_x, "transpose_Y": transpose_y, "alpha": float(alpha)},
    )
    return out


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """``scale * x + bias`` (``scale * (x + bias)`` unless ``bias_after_scale``)."""
    _check_var(x, "x", "scale")
    helper = LayerHelper("scale", **locals())
    out = _new_out(helper, x.dtype, x.shape)
    helper.append_op(
        type="scale",
        inputs={"X": [x]},
        outputs={"Out": [out]},
        attrs={"scale": float(scale), "bias": float(bias), "bias_after_scale": bias_after_scale},
    )
    return helper.append_activation(out)


def _reduce(op_type, input, dim, keep_dim, name):
    _check_var(input, "input", op_type)
    helper = LayerHelper(op_type, name=name)
    rank = len(input.shape)
    if dim is None:
        dims = list(range(rank))
        reduce_all = True
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        reduce_all = False
    axes = set(d + rank if d < 0 else d for d in dims)
    if keep_dim:
        shape = [1 if i in axes else d for i, d in enumerate(input.shape)]
    else:
        shape = [d for i, d in enumerate(input.shape) if i not in axes] or [1]
    out = _new_out(helper, input.dtype, shape)
    helper.append_op(
        type=op_type,
        inputs={"X": input},
        outputs={"Out": out},
        attrs={"dim": dims if dims else [0], "keep_dim": keep_dim, "reduce_all": reduce_all},
    )
    return out


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    """The sum over ``dim`` (an int or a list; None: every dim)."""
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    """The mean over ``dim`` (an int or a list; None: every dim)."""
    return _reduce("reduce_mean", input, dim, keep_dim, name)


# ---- logical layers ----------------------------------------------------------------------------


def _logical(op_type, x, y, out, name):
    _check_var(x, "x", op_type)
    inputs = {"X": [x]}
    if y is not None:
        _check_var(y, "y", op_type)
        inputs["Y"] = [y]
    helper = LayerHelper(op_type, name=name)
    if out is None:
        out = _new_out(helper, "bool", x.shape, stop_gradient=True)
    else:
        _check_var(out, "out", op_type)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": [out]})
    return out


def logical_and(x, y, out=None, name=None):
    """``x and y`` elementwise (BOOL) into ``out`` (a new BOOL variable when None)."""
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    """``x or y`` elementwise (BOOL) into ``out`` (a new BOOL variable when None)."""
    return _logical("logical_or", x, y, out, name)


def logical_not(x, out=None, name=None):
    """``not x`` elementwise (BOOL) into ``out`` (a new BOOL variable when None)."""
    return _logical("logical_not", x, None, out, name)
