// npy.cc — the .npy format (NumPy's NEP 1): magic, version, header dict, raw data.
//
// The parser works on a byte span and checks every length against it before reading, so a
// truncated or hostile file yields an Error, never an over-read (fuzzed by fuzz/tensor/).
#include "chanflow/tensor/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "chanflow/tensor/detail/dispatch.h"
#include "internal.h"

namespace chanflow {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

[[noreturn]] void corrupt(std::string_view name, const std::string& what) {
  CHANFLOW_THROW(Error) << "load_npy: '" << std::string(name) << "': " << what;
  __builtin_unreachable();  // the thrower's destructor throws
}

// A tiny reader for the Python literal dict NumPy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : s_(text), name_(name) {}

  void parse(std::string* descr, bool* fortran, Shape* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') {
          corrupt(name_,
                  "header 'descr' is not a simple type string (structured dtypes are "
                  "not supported)");
        }
        *descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        *fortran = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        *shape = parse_tuple();
        have_shape = true;
      } else {
        corrupt(name_, "unexpected header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape) {
      corrupt(name_, "header lacks one of 'descr', 'fortran_order', 'shape'");
    }
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  void expect(char c) {
    if (peek() != c) {
      std::string msg = "malformed header: expected '";
      msg += c;
      msg += "' at offset " + std::to_string(i_);
      corrupt(name_, msg);
    }
    ++i_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') corrupt(name_, "malformed header: expected a quoted string");
    ++i_;
    const size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) corrupt(name_, "malformed header: unterminated string");
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    corrupt(name_, "malformed header: 'fortran_order' is not True or False");
  }
  Shape parse_tuple() {
    expect('(');
    Shape shape;
    while (true) {
      skip_ws();
      if (peek() == ')') {
        ++i_;
        return shape;
      }
      if (peek() < '0' || peek() > '9') {
        corrupt(name_, "malformed header: shape entries must be non-negative integers");
      }
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int64_t digit = peek() - '0';
        if (v > (INT64_MAX - digit) / 10) corrupt(name_, "shape extent overflows int64");
        v = v * 10 + digit;
        ++i_;
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      shape.push_back(v);
      if (shape.size() > 64) corrupt(name_, "shape has more than 64 axes");
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      expect(')');
      return shape;
    }
  }

  std::string_view s_;
  std::string_view name_;
  size_t i_ = 0;
};

struct Descr {
  DType dtype;
  bool swap;  // big-endian data on this little-endian host
};

Descr parse_descr(const std::string& d, std::string_view name) {
  if (d.size() < 3) {
    CHANFLOW_THROW(TypeError) << "load_npy: '" << std::string(name) << "': unsupported dtype '" << d
                              << "'";
  }
  const char order = d[0];
  const std::string kind = d.substr(1);
  static_assert(std::endian::native == std::endian::little, "chanflow assumes little-endian");
  bool big = order == '>';
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    CHANFLOW_THROW(TypeError) << "load_npy: '" << std::string(name) << "': unsupported dtype '" << d
                              << "'";
  }
  // The kind letter and the size in bytes ("f4"): one row of CHANFLOW_DTYPES.
  std::optional<DType> t;
  if (kind.size() == 2 && kind[1] >= '1' && kind[1] <= '8')
    t = dtype_from_kind(kind[0], kind[1] - '0');
  if (!t) {
    CHANFLOW_THROW(TypeError) << "load_npy: '" << std::string(name) << "': dtype '" << d
                              << "' is not supported (bool, int8/16/32/64, uint8, float16/32/64)";
  }
  return Descr{*t, big && dtype_size(*t) > 1};
}

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

namespace {

// What a .npy header declares: the element type, the shape, where the data starts and its size.
struct Layout {
  Descr descr;
  bool fortran = false;
  Shape shape;
  int64_t numel = 0;
  size_t data_start = 0;  // bytes before the data: magic, version, header length, header
  uint64_t data_bytes = 0;
};

// The bytes of the magic, version and header length: 8, then 2 (version 1) or 4 (2 and 3).
// Needs the first 8 bytes; throws Error for a bad magic string or version.
size_t prefix_size(const unsigned char* bytes, size_t size, std::string_view name) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    corrupt(name, "not a .npy file (bad magic string)");
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  if (major == 1) return 10;
  if (major == 2 || major == 3) return 12;
  corrupt(name,
          "unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
}

// The length of the header that follows the prefix (which bytes[0, size) must hold).
size_t header_length(const unsigned char* bytes, size_t size, std::string_view name) {
  const size_t prefix = prefix_size(bytes, size, name);
  if (size < prefix) corrupt(name, "truncated before the header length");
  return read_le(bytes + 8, static_cast<int>(prefix - 8));
}

// The layout declared by the prefix and header in bytes[0, size) (the data may follow or not).
Layout parse_layout(const unsigned char* bytes, size_t size, std::string_view name) {
  const size_t header_len = header_length(bytes, size, name);
  const size_t header_start = prefix_size(bytes, size, name);
  if (header_len > size - header_start) {
    corrupt(name, "truncated header (needs " + std::to_string(header_len) + " bytes, file has " +
                      std::to_string(size - header_start) + ")");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + header_start), header_len);
  std::string descr;
  Layout l;
  HeaderParser(header, name).parse(&descr, &l.fortran, &l.shape);
  l.descr = parse_descr(descr, name);
  try {
    l.numel = shape_numel(l.shape);
  } catch (const ShapeError&) {
    corrupt(name, "shape " + shape_to_string(l.shape) + " is too large");
  }
  const auto item = static_cast<uint64_t>(dtype_size(l.descr.dtype));
  if (__builtin_mul_overflow(static_cast<uint64_t>(l.numel), item, &l.data_bytes) ||
      l.data_bytes > static_cast<uint64_t>(INT64_MAX)) {
    corrupt(name, "shape " + shape_to_string(l.shape) + " is too large");
  }
  l.data_start = header_start + header_len;
  return l;
}

// "truncated data: shape (99,) of float64 needs 792 bytes, 80 present".
[[noreturn]] void truncated_data(std::string_view name, const Layout& l, uint64_t present) {
  corrupt(name, "truncated data: shape " + shape_to_string(l.shape) + " of " +
                    std::string(dtype_name(l.descr.dtype)) + " needs " +
                    std::to_string(l.data_bytes) + " bytes, " + std::to_string(present) +
                    " present");
}

// "... bytes after the data": a file holds one array, exactly as long as its header says.
[[noreturn]] void trailing_data(std::string_view name, const Layout& l, const std::string& extra) {
  corrupt(name, extra + " after the data that the header declares (shape " +
                    shape_to_string(l.shape) + " of " + std::string(dtype_name(l.descr.dtype)) +
                    ", " + std::to_string(l.data_bytes) +
                    " bytes): a .npy file holds one array and nothing after it");
}

// An uninitialised tensor for `l`'s data bytes, as they are stored (C order of the reversed shape
// for Fortran order).
Tensor storage_for(const Layout& l) {
  Shape storage_shape = l.shape;
  if (l.fortran) std::reverse(storage_shape.begin(), storage_shape.end());
  return Tensor::empty(storage_shape, l.descr.dtype);
}

// `t` (from storage_for) holding the file's data bytes, as the tensor the file means: byte order
// swapped to native, bools made 0 or 1, Fortran order made C-contiguous.
Tensor finish(const Layout& l, Tensor t) {
  const int64_t item = dtype_size(l.descr.dtype);
  if (l.numel > 0) {
    auto* dst = static_cast<unsigned char*>(t->raw_data());
    if (l.descr.swap) {
      for (int64_t i = 0; i < l.numel; ++i) std::reverse(dst + i * item, dst + (i + 1) * item);
    }
    if (l.descr.dtype == DType::kBool) {  // only 0 and 1 are valid bools
      for (int64_t i = 0; i < l.numel; ++i) dst[i] = dst[i] != 0 ? 1 : 0;
    }
  }
  if (l.fortran) t = l.numel == 0 ? Tensor::empty(l.shape, l.descr.dtype) : t.transpose().clone();
  return t;
}

// Reads up to `n` bytes of `fd` into `out`; returns how many (fewer only at the end of the file).
size_t read_fully(int fd, void* out, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, static_cast<char*>(out) + got, std::min<size_t>(n - got, 1 << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      CHANFLOW_THROW(Error) << "load_npy: error reading '" << path << "': " << std::strerror(errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

Tensor parse_npy(const void* data, size_t size, std::string_view name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const Layout l = parse_layout(bytes, size, name);
  const uint64_t available = size - l.data_start;
  if (l.data_bytes > available) truncated_data(name, l, available);
  if (l.data_bytes < available) {
    trailing_data(name, l, std::to_string(available - l.data_bytes) + " bytes");
  }
  Tensor t = storage_for(l);
  if (l.data_bytes > 0) std::memcpy(t->raw_data(), bytes + l.data_start, l.data_bytes);
  return finish(l, std::move(t));
}

Tensor load_npy(const std::string& path, std::uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    CHANFLOW_THROW(Error) << "load_npy: cannot open '" << path << "': " << std::strerror(errno);
  }
  const FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    CHANFLOW_THROW(Error) << "load_npy: cannot stat '" << path << "': " << std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) corrupt(path, "is a directory, not a .npy file");
  // Regular files have a size to check the header against before anything is allocated; other
  // files (a pipe, a FIFO, a device such as /dev/zero) are read as a stream: the header first
  // (its magic checked on the first 8 bytes), then only the data it declares, then one byte more
  // to see that the stream ends there.
  const bool regular = S_ISREG(st.st_mode);
  unsigned char prefix[12];
  size_t got = read_fully(fd, prefix, 8, path);
  const size_t prefix_len = prefix_size(prefix, got, path);
  got += read_fully(fd, prefix + got, prefix_len - got, path);
  const size_t header_len = header_length(prefix, got, path);
  if (header_len > kMaxNpyHeaderBytes) {
    corrupt(path, "header of " + std::to_string(header_len) + " bytes (at most " +
                      std::to_string(kMaxNpyHeaderBytes) + " are read)");
  }
  std::string head(reinterpret_cast<const char*>(prefix), prefix_len);
  head.resize(prefix_len + header_len);
  got = read_fully(fd, head.data() + prefix_len, header_len, path);
  head.resize(prefix_len + got);
  const Layout l =
      parse_layout(reinterpret_cast<const unsigned char*>(head.data()), head.size(), path);
  if (regular) {
    const auto file_size = static_cast<uint64_t>(st.st_size);
    if (file_size < l.data_start + l.data_bytes) truncated_data(path, l, file_size - l.data_start);
    if (file_size > l.data_start + l.data_bytes) {
      trailing_data(path, l, std::to_string(file_size - l.data_start - l.data_bytes) + " bytes");
    }
  }
  if (l.data_bytes > max_bytes || l.data_start > max_bytes - l.data_bytes) {
    throw LimitError(
        path + ": the .npy file declares " + std::to_string(l.data_start + l.data_bytes) +
            " bytes (header and data), more than the limit of " + std::to_string(max_bytes) +
            " bytes (max_bytes; `chanflow` sets it with --max-feed-size)",
        "max_bytes");
  }
  Tensor t = storage_for(l);
  got = l.data_bytes == 0 ? 0 : read_fully(fd, t->raw_data(), l.data_bytes, path);
  if (got < l.data_bytes) truncated_data(path, l, got);
  unsigned char extra = 0;
  if (read_fully(fd, &extra, 1, path) != 0) trailing_data(path, l, "more bytes");
  return finish(l, std::move(t));
}

std::string serialize_npy(const Tensor& t) {
  detail::require_defined(t, "save_npy");
  // '|' (no byte order) for one-byte types, else little-endian; then kind and size ("<f4").
  const DTypeInfo& info = dtype_info(t.dtype());
  const std::string descr = {info.size == 1 ? '|' : '<', info.kind,
                             static_cast<char>('0' + info.size)};
  std::string dict = "{'descr': '" + descr +
                     "', 'fortran_order': False, 'shape': " + shape_to_string(t.shape()) + ", }";
  // NumPy pads so that the data starts at a multiple of 64 bytes, ending the header with '\n'.
  auto total = [&](size_t len_bytes) {
    const size_t unpadded = 8 + len_bytes + dict.size() + 1;
    return (unpadded + 63) / 64 * 64;
  };
  size_t len_bytes = 2;
  int major = 1;
  if (total(2) - 10 > 65535) {
    len_bytes = 4;
    major = 2;
  }
  const size_t header_len = total(len_bytes) - 8 - len_bytes;
  dict.append(header_len - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < len_bytes; ++i)
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xFF));
  out += dict;
  const Tensor c = t.contiguous();
  out.append(static_cast<const char*>(c->raw_data()), static_cast<size_t>(c.nbytes()));
  return out;
}

void save_npy(const Tensor& t, const std::string& path) {
  const std::string bytes = serialize_npy(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    CHANFLOW_THROW(Error) << "save_npy: cannot open '" << path
                          << "' for writing: " << std::strerror(errno);
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) CHANFLOW_THROW(Error) << "save_npy: error writing '" << path << "'";
}

}  // namespace chanflow
