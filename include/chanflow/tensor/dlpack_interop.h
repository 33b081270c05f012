// dlpack_interop.h — exchanging tensors with other frameworks through DLPack, without copies.
//
//   DLManagedTensor* m = cf::to_dlpack(t);     // consumer owns m; calls m->deleter(m) once
//   cf::Tensor u = cf::from_dlpack(m);          // u owns m; m->deleter runs when u's storage dies
//
// Ownership follows the DLPack protocol: the producer's deleter runs exactly once, by whoever owns
// the DLManagedTensor last. Only CPU tensors of chanflow's dtypes are accepted.
#pragma once

#include <dlpack/dlpack.h>

#include "chanflow/core/export.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Exports `t` without copying: the returned DLManagedTensor's dl_tensor points into t's storage
// and keeps it alive until its deleter is called. The caller (consumer) must call
// `m->deleter(m)` exactly once. The exported bytes must be treated as read-only: t may be shared.
// Thread-safe; never blocks. A null tensor throws Error.
CHANFLOW_API DLManagedTensor* to_dlpack(const Tensor& t);

// Imports a DLManagedTensor without copying: on success the returned tensor owns `m` and calls
// m->deleter(m) once, when the last view of its storage is released (a null deleter is allowed).
// Null strides mean row-major. On failure (m null, non-CPU device, lanes != 1, an unsupported
// dtype, negative extents, a misaligned data pointer) it throws TypeError or Error and does NOT
// take ownership: the caller still owns m. Thread-safe; never blocks.
CHANFLOW_API Tensor from_dlpack(DLManagedTensor* m);

}  // namespace chanflow
