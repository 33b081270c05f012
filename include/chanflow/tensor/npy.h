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

// The most bytes (header and data) load_npy reads from one file by default: 4 GiB.
inline constexpr std::uint64_t kDefaultMaxNpyBytes = std::uint64_t{1} << 32;
// The longest header load_npy reads: 1 MiB (NumPy's own headers are a few hundred bytes; a header
// holds the dtype, the order and at most 64 extents).
inline constexpr std::size_t kMaxNpyHeaderBytes = std::size_t{1} << 20;

// Reads a .npy file: its magic and header first, then only the data the header declares, read
// straight into the tensor. Throws Error naming the file when it is missing, a directory, not a
// .npy file, corrupt, or when its data is shorter or longer than the header declares (a file
// holds one array and nothing after it); TypeError for an unsupported dtype; LimitError (limit
// "max_bytes") when the header declares more than `max_bytes` bytes of header and data, before
// anything is allocated. A regular file's size is checked against the header before the data is
// read; any other file (a pipe, a FIFO, a device such as /dev/zero) is read as a stream, never
// more than the header (at most kMaxNpyHeaderBytes) and the data it declares plus one byte.
CHANFLOW_API Tensor load_npy(const std::string& path,
                             std::uint64_t max_bytes = kDefaultMaxNpyBytes);
// Parses .npy bytes held in memory; `name` is used in error messages. Never reads outside
// [data, data + size). As load_npy, the bytes must be exactly one array: Error when the data is
// shorter or longer than the header declares.
CHANFLOW_API Tensor parse_npy(const void* data, size_t size, std::string_view name = "<memory>");
// Writes `t` (any strides) as a C-order little-endian .npy file, replacing `path`.
// Throws Error when the file cannot be written.
CHANFLOW_API void save_npy(const Tensor& t, const std::string& path);
// The bytes save_npy would write.
CHANFLOW_API std::string serialize_npy(const Tensor& t);

}  // namespace chanflow
