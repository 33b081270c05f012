// npy.cc — the .npy format (NumPy's NEP 1): magic, version, header dict, raw data.
//
// The parser works on a byte span and checks every length against it before reading, so a
// truncated or hostile file yields an Error, never an over-read (fuzzed by fuzz/tensor/).
#include "chanflow/tensor/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
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

Tensor parse_npy(const void* data, size_t size, std::string_view name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    corrupt(name, "not a .npy file (bad magic string)");
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  size_t len_bytes;
  if (major == 1) {
    len_bytes = 2;
  } else if (major == 2 || major == 3) {
    len_bytes = 4;
  } else {
    corrupt(name,
            "unsupported format version " + std::to_string(major) + "." + std::to_string(minor));
  }
  if (size < 8 + len_bytes) corrupt(name, "truncated before the header length");
  const size_t header_len = read_le(bytes + 8, static_cast<int>(len_bytes));
  const size_t header_start = 8 + len_bytes;
  if (header_len > size - header_start) {
    corrupt(name, "truncated header (needs " + std::to_string(header_len) + " bytes, file has " +
                      std::to_string(size - header_start) + ")");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes + header_start), header_len);
  std::string descr;
  bool fortran = false;
  Shape shape;
  HeaderParser(header, name).parse(&descr, &fortran, &shape);
  const Descr d = parse_descr(descr, name);

  int64_t numel;
  try {
    numel = shape_numel(shape);
  } catch (const ShapeError&) {
    corrupt(name, "shape " + shape_to_string(shape) + " is too large");
  }
  const int64_t item = dtype_size(d.dtype);
  const size_t data_start = header_start + header_len;
  const size_t available = size - data_start;
  if (numel > 0 && static_cast<uint64_t>(numel) > available / static_cast<uint64_t>(item)) {
    corrupt(name, "truncated data: shape " + shape_to_string(shape) + " of " +
                      std::string(dtype_name(d.dtype)) + " needs " +
                      std::to_string(static_cast<unsigned long long>(numel) *
                                     static_cast<unsigned long long>(item)) +
                      " bytes, " + std::to_string(available) + " present");
  }
  // Fortran order: the bytes are the C-order data of the reversed shape.
  Shape storage_shape = shape;
  if (fortran) std::reverse(storage_shape.begin(), storage_shape.end());
  Tensor t = Tensor::empty(storage_shape, d.dtype);
  if (numel > 0) {
    auto* dst = static_cast<unsigned char*>(t->raw_data());
    std::memcpy(dst, bytes + data_start, static_cast<size_t>(numel * item));
    if (d.swap) {
      for (int64_t i = 0; i < numel; ++i) std::reverse(dst + i * item, dst + (i + 1) * item);
    }
    if (d.dtype == DType::kBool) {  // only 0 and 1 are valid bools
      for (int64_t i = 0; i < numel; ++i) dst[i] = dst[i] != 0 ? 1 : 0;
    }
  }
  if (fortran) t = numel == 0 ? Tensor::empty(shape, d.dtype) : t.transpose().clone();
  return t;
}

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    CHANFLOW_THROW(Error) << "load_npy: cannot open '" << path << "': " << std::strerror(errno);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) CHANFLOW_THROW(Error) << "load_npy: error reading '" << path << "'";
  const std::string bytes = ss.str();
  return parse_npy(bytes.data(), bytes.size(), path);
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
