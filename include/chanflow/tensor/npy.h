// npy.h — NumPy .npy files: load and save tensors interoperably with numpy.load / numpy.save.
//
//   cf::save_npy(t, "x.npy");                 // format 1.0 (2.0 when the header needs it)
//   cf::Tensor u = cf::load_npy("x.npy");     // reads 1.0, 2.0 and 3.0 (utf-8 header)
//
// Reading accepts little- and big-endian data (byte-swapped on load) and Fortran order (loaded
// as the transposed C-order data, then made C-contiguous), for the dtypes of dtype.h ('|b1',
// 'i1' 'i2' 'i4' 'i8', 'u1', 'f2' 'f4' 'f8'). A truncated or corrupt file throws Error naming the
// file and the problem; an unsupported dtype (e.g. '<u4', '<c8', 'O') throws TypeError. The
// reader never reads past the bytes it was given. All functions are thread-safe and block on file
// I/O only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chanflow/core/export.h"
#include "chanflow/tensor/tensor.h"

namespace chanflow {

// Reads a .npy file. Throws Error (file missing, truncated, corrupt) or TypeError (dtype).
CHANFLOW_API Tensor load_npy(const std::string& path);
// Parses .npy bytes held in memory; `name` is used in error messages. Never reads outside
// [data, data + size).
CHANFLOW_API Tensor parse_npy(const void* data, size_t size, std::string_view name = "<memory>");
// Writes `t` (any strides) as a C-order little-endian .npy file, replacing `path`.
// Throws Error when the file cannot be written.
CHANFLOW_API void save_npy(const Tensor& t, const std::string& path);
// The bytes save_npy would write.
CHANFLOW_API std::string serialize_npy(const Tensor& t);

}  // namespace chanflow
