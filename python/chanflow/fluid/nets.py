"""Fluid's composite networks: ``simple_img_conv_pool`` (conv2d then pool2d) and
``img_conv_group`` (conv2d [+ batch_norm [+ dropout]] per entry, then pool2d)::

    conv_pool = fluid.nets.simple_img_conv_pool(img, num_filters=20, filter_size=5,
                                                pool_size=2, pool_stride=2, act='relu')
"""

from . import layers

__all__ = ["simple_img_conv_pool", "img_conv_group"]


def simple_img_conv_pool(input, num_filters, filter_size, pool_size, pool_stride,
                         pool_padding=0, pool_type="max", global_pooling=False, conv_stride=1,
                         conv_padding=0, conv_dilation=1, conv_groups=1, param_attr=None,
                         bias_attr=None, act=None, use_cudnn=True, use_mkldnn=False):
    """``pool2d(conv2d(input, ..., act=act), ...)``; returns the pooled variable."""
    conv_out = layers.conv2d(
        input=input,
        num_filters=num_filters,
        filter_size=filter_size,
        stride=conv_stride,
        padding=conv_padding,
        dilation=conv_dilation,
        groups=conv_groups,
        param_attr=param_attr,
        bias_attr=bias_attr,
        act=act,
        use_cudnn=use_cudnn,
    )
    return layers.pool2d(
        input=conv_out,
        pool_size=pool_size,
        pool_type=pool_type,
        pool_stride=pool_stride,
        pool_padding=pool_padding,
        global_pooling=global_pooling,
        use_cudnn=use_cudnn,
    )


def img_conv_group(input, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,
                   conv_act=None, param_attr=None, conv_with_batchnorm=False,
                   conv_batchnorm_drop_rate=0.0, pool_stride=1, pool_type="max",
                   use_cudnn=True, use_mkldnn=False):
    """One conv2d per entry of ``conv_num_filter`` (each argument a value for all or a list of
    one per conv); with ``conv_with_batchnorm`` a batch_norm carrying ``conv_act`` after each
    (and a dropout of ``conv_batchnorm_drop_rate`` when above 1e-5); then a pool2d."""
    if not isinstance(conv_num_filter, (list, tuple)):
        raise TypeError("img_conv_group: conv_num_filter must be a list or tuple")
    n = len(conv_num_filter)

    def extend(obj, what):
        if isinstance(obj, (list, tuple)):
            if len(obj) != n:
                raise ValueError(
                    "img_conv_group: %s has %d entries for %d convolutions" % (what, len(obj), n)
                )
            return list(obj)
        return [obj] * n

    conv_padding = extend(conv_padding, "conv_padding")
    conv_filter_size = extend(conv_filter_size, "conv_filter_size")
    param_attr = extend(param_attr, "param_attr")
    conv_with_batchnorm = extend(conv_with_batchnorm, "conv_with_batchnorm")
    conv_batchnorm_drop_rate = extend(conv_batchnorm_drop_rate, "conv_batchnorm_drop_rate")
    tmp = input
    for i in range(n):
        local_act = None if conv_with_batchnorm[i] else conv_act
        tmp = layers.conv2d(
            input=tmp,
            num_filters=conv_num_filter[i],
            filter_size=conv_filter_size[i],
            padding=conv_padding[i],
            param_attr=param_attr[i],
            act=local_act,
            use_cudnn=use_cudnn,
        )
        if conv_with_batchnorm[i]:
            tmp = layers.batch_norm(input=tmp, act=conv_act)
            drop_rate = conv_batchnorm_drop_rate[i]
            if abs(drop_rate) > 1e-5:
                tmp = layers.dropout(x=tmp, dropout_prob=drop_rate)
    return layers.pool2d(
        input=tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
        use_cudnn=use_cudnn,
    )
