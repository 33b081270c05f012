// tensor.h — the tensor layer: Tensor (DLPack-compatible, copy on write), kernels with NumPy
// broadcasting, matmul through OpenBLAS, .npy files, DLPack exchange, reproducible random tensors,
// parameter initialisers and optimiser updates.
//
//   #include <chanflow/tensor.h>
//   cf::Tensor x = cf::uniform({2, 3}, 0, 1, /*seed=*/1);
//   cf::Tensor y = cf::softmax(cf::matmul(x, x.transpose()));
#pragma once

#include "chanflow/core.h"
#include "chanflow/tensor/blas.h"
#include "chanflow/tensor/buffer_cache.h"
#include "chanflow/tensor/conv.h"
#include "chanflow/tensor/dlpack_interop.h"
#include "chanflow/tensor/dtype.h"
#include "chanflow/tensor/init.h"
#include "chanflow/tensor/memory_budget.h"
#include "chanflow/tensor/nn.h"
#include "chanflow/tensor/npy.h"
#include "chanflow/tensor/ops.h"
#include "chanflow/tensor/optim.h"
#include "chanflow/tensor/random.h"
#include "chanflow/tensor/tensor.h"
#include "chanflow/tensor/tensor_obj.h"
