"""Fashion-MNIST the Fluid way on chanflow.fluid: a two-layer MLP (fc 200 relu + fc 10 softmax,
Adam) fed by layers.py_reader reaches >= 85 % test accuracy in 5 epochs (about 6 s here). The
LeNet-style CNN is test_fluid_fashion_mnist_cnn.py (label `slow`). Skipped when Debian's
dataset-fashion-mnist is not installed."""

import time

import chanflow.fluid as fluid
from chanflow.fluid import layers
import pytest

from fashion_mnist_helpers import accuracy, needs_dataset, shuffled_batches, train_and_test

pytestmark = needs_dataset


@pytest.fixture(scope="module")
def data():
    return train_and_test()


def test_mlp_with_py_reader(data):
    (train_x, train_y), (test_x, test_y) = data
    t0 = time.perf_counter()
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 1
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        reader = layers.py_reader(capacity=4, shapes=[(-1, 784), (-1, 1)],
                                  dtypes=["float32", "int64"])
        img, label = layers.read_file(reader)
        hidden = layers.fc(img, 200, act="relu")
        pred = layers.fc(hidden, 10, act="softmax")
        loss = layers.mean(layers.cross_entropy(pred, label))
        fluid.optimizer.Adam(learning_rate=0.001).minimize(loss)
    # The evaluation program: the same layers over a data layer (a clone of main would read
    # from the reader); under a fresh unique_name guard its parameters get main's names, so it
    # evaluates the trained weights of the shared scope.
    test_main = fluid.Program()
    with fluid.program_guard(test_main, fluid.Program()), fluid.unique_name.guard():
        x = layers.data("x", shape=[784])
        h = layers.fc(x, 200, act="relu")
        test_pred = layers.fc(h, 10, act="softmax")
    with fluid.scope_guard(fluid.core.Scope()):
        exe = fluid.Executor(fluid.CPUPlace())
        exe.run(startup)
        epochs = 5
        for epoch in range(epochs):
            reader.decorate_tensor_provider(
                lambda e=epoch: shuffled_batches(train_x, train_y, 100, e))
            reader.start()
            steps = 0
            try:
                while True:
                    exe.run(main, fetch_list=[loss])
                    steps += 1
            except fluid.core.EOFException:
                reader.reset()
            assert steps == 600
        acc = accuracy(exe, test_main, test_pred, lambda xs, ys: {"x": xs},
                            test_x, test_y)
    elapsed = time.perf_counter() - t0
    print("MLP: test accuracy %.4f after %d epochs in %.1f s" % (acc, epochs, elapsed))
    assert acc >= 0.85
