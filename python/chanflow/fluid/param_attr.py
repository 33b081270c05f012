"""Fluid's ``ParamAttr``: how a layer creates a parameter (name, initializer, learning-rate
factor, regularizer, trainable)::

    fluid.layers.fc(x, 10, param_attr=fluid.ParamAttr(name='w', learning_rate=0.5,
                                                      regularizer=fluid.regularizer.L2Decay(1e-4)))

``bias_attr=False`` on a layer means no bias; a str is a name, an initializer or a regularizer
is a ``ParamAttr`` carrying it.
"""

from . import initializer as _initializer
from . import regularizer as _regularizer

__all__ = ["ParamAttr", "WeightNormParamAttr"]


class ParamAttr(object):
    """``ParamAttr(name=None, initializer=None, learning_rate=1.0, regularizer=None,
    trainable=True, gradient_clip=None, do_model_average=False)``."""

    def __init__(
        self,
        name=None,
        initializer=None,
        learning_rate=1.0,
        regularizer=None,
        trainable=True,
        gradient_clip=None,
        do_model_average=False,
    ):
        if name is not None and not isinstance(name, str):
            raise TypeError("ParamAttr: name must be a str, got %r" % (name,))
        if initializer is not None and not callable(initializer):
            raise TypeError("ParamAttr: initializer must be an Initializer, got %r" % (initializer,))
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = trainable
        self.gradient_clip = gradient_clip
        self.model_average = do_model_average

    def _set_default_initializer(self, initializer):
        if self.initializer is None:
            self.initializer = initializer

    def _set_default_param_initializer(self):
        self._set_default_initializer(_initializer.Xavier())

    def _set_default_bias_initializer(self):
        self._set_default_initializer(_initializer.Constant(0.0))

    @staticmethod
    def _to_attr(arg):
        """``arg`` (None, a ParamAttr, a name, an initializer, a regularizer, a bool or a list of
        these) as a ParamAttr (False stays False: no parameter)."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, _initializer.Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, _regularizer.WeightDecayRegularizer):
            return ParamAttr(regularizer=arg)
        if isinstance(arg, bool):
            return ParamAttr._to_attr(None) if arg else False
        raise TypeError("%r cannot be cast to ParamAttr" % (arg,))

    def _to_kwargs(self, with_initializer=False):
        kwargs = {
            "name": self.name,
            "optimize_attr": {"learning_rate": self.learning_rate},
            "regularizer": self.regularizer,
            "trainable": self.trainable,
            "gradient_clip_attr": self.gradient_clip,
            "do_model_average": self.model_average,
        }
        if with_initializer:
            kwargs["initializer"] = self.initializer
        return kwargs


class WeightNormParamAttr(ParamAttr):
    """Fluid's weight-normalised parameter attribute; chanflow has no weight normalisation."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("WeightNormParamAttr: weight normalisation is not supported")
