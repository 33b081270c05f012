// idx.cc — a byte source (file or memory), a decoder (gzip through zlib's inflate, or plain),
// and the IDX parser over the decoded stream. The file readers and parse_idx_* differ only in the
// source, so the fuzzer exercises the same decoder and parser the files go through.
#include "idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace train_fashion {
namespace {

[[noreturn]] void fail(const std::string& file, int64_t offset, const std::string& what) {
  std::string msg = file;
  if (offset >= 0) msg += ": offset " + std::to_string(offset);
  msg += ": " + what;
  throw IdxError(msg, file, offset);
}

std::string hex(uint64_t v, int digits) {
  std::array<char, 24> buf{};
  std::snprintf(buf.data(), buf.size(), "0x%0*llX", digits, static_cast<unsigned long long>(v));
  return buf.data();
}

// Raw (possibly compressed) bytes. read() returns 0 only at the end; errors throw IdxError.
class Source {
 public:
  virtual ~Source() = default;
  virtual std::size_t read(uint8_t* dst, std::size_t n) = 0;
};

class FileSource final : public Source {
 public:
  explicit FileSource(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    if (!f_) fail(path_, -1, std::string("cannot open: ") + std::strerror(errno));
  }

  std::size_t read(uint8_t* dst, std::size_t n) override {
    const std::size_t got = std::fread(dst, 1, n, f_.get());
    // A directory opens but does not read (EISDIR); so do files on failing storage.
    if (got < n && std::ferror(f_.get())) {
      fail(path_, -1, std::string("cannot read: ") + std::strerror(errno));
    }
    return got;
  }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  const std::string& path_;
  std::unique_ptr<std::FILE, Closer> f_;
};

class MemorySource final : public Source {
 public:
  explicit MemorySource(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  std::size_t read(uint8_t* dst, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    if (k > 0) std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::span<const uint8_t> bytes_;
  std::size_t pos_ = 0;
};

// The decompressed stream. A source starting with gzip's magic (1F 8B) is inflated, member after
// member (gzip allows concatenated members); anything else passes through unchanged (IDX starts
// with two zero bytes, so a plain IDX file is never taken for gzip). zlib checks each member's
// CRC-32 and length.
class Decoder {
 public:
  Decoder(Source& src, const std::string& file) : src_(src), file_(file), in_(kInputBuffer) {
    fill(2);
    gzip_ = available() >= 2 && in_[pos_] == 0x1F && in_[pos_ + 1] == 0x8B;
    // 16 + MAX_WBITS: a gzip wrapper (header and CRC trailer), the largest window.
    if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
      fail(file_, -1, "zlib cannot start inflating (out of memory)");
    }
  }
  ~Decoder() {
    if (gzip_) inflateEnd(&zs_);
  }
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Reads up to n decoded bytes into out; fewer only at the end of the stream. Throws IdxError
  // on a corrupt or truncated gzip stream.
  std::size_t read(uint8_t* out, std::size_t n) {
    return gzip_ ? inflate_some(out, n) : copy(out, n);
  }

  // Decoded bytes delivered so far: the offset of the next byte.
  int64_t offset() const { return decoded_; }

 private:
  static constexpr std::size_t kInputBuffer = 64 * 1024;

  std::size_t available() const { return end_ - pos_; }
  // The offset in the source of the next unconsumed byte.
  int64_t source_offset() const { return source_read_ - static_cast<int64_t>(available()); }

  // Makes at least `want` (<= the buffer's size) bytes available unless the source ends first;
  // returns whether it did.
  bool fill(std::size_t want) {
    if (available() >= want) return true;
    if (pos_ > 0) {
      std::memmove(in_.data(), in_.data() + pos_, available());
      end_ -= pos_;
      pos_ = 0;
    }
    while (available() < want && !source_ended_) {
      const std::size_t got = src_.read(in_.data() + end_, in_.size() - end_);
      if (got == 0) source_ended_ = true;
      end_ += got;
      source_read_ += static_cast<int64_t>(got);
    }
    return available() >= want;
  }

  std::size_t copy(uint8_t* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n && fill(1)) {
      const std::size_t k = std::min(n - got, available());
      std::memcpy(out + got, in_.data() + pos_, k);
      pos_ += k;
      got += k;
    }
    decoded_ += static_cast<int64_t>(got);
    return got;
  }

  std::size_t inflate_some(uint8_t* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      if (member_ended_) {
        if (!fill(1)) break;  // the end of the last member is the end of the stream
        if (!fill(2) || in_[pos_] != 0x1F || in_[pos_ + 1] != 0x8B) {
          fail(file_, decoded_,
               "the gzip stream ends at compressed byte " + std::to_string(source_offset()) +
                   " and is followed by data that is not another gzip member");
        }
        inflateReset(&zs_);
        member_ended_ = false;
      }
      if (!fill(1)) {
        fail(file_, decoded_,
             "truncated gzip stream: the file ends (at compressed byte " +
                 std::to_string(source_offset()) + ") before the gzip stream does");
      }
      const std::size_t room = std::min<std::size_t>(n - got, UINT_MAX);
      zs_.next_in = in_.data() + pos_;
      zs_.avail_in = static_cast<uInt>(available());
      zs_.next_out = out + got;
      zs_.avail_out = static_cast<uInt>(room);
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const std::size_t produced = room - zs_.avail_out;
      const std::size_t consumed = available() - zs_.avail_in;
      pos_ += consumed;
      got += produced;
      decoded_ += static_cast<int64_t>(produced);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_MEM_ERROR) {
        fail(file_, decoded_, "zlib ran out of memory inflating the gzip stream");
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && (produced > 0 || consumed > 0))) {
        // Z_BUF_ERROR without progress cannot happen with input and room available; reported
        // rather than looped on.
        fail(file_, decoded_,
             "corrupt gzip stream at compressed byte " + std::to_string(source_offset()) +
                 " (zlib: " + (zs_.msg ? zs_.msg : "error " + std::to_string(rc)) + ")");
      }
    }
    return got;
  }

  Source& src_;
  const std::string& file_;
  std::vector<uint8_t> in_;
  std::size_t pos_ = 0;  // in_[pos_, end_) is read from the source and not yet consumed
  std::size_t end_ = 0;
  bool source_ended_ = false;
  int64_t source_read_ = 0;
  bool gzip_ = false;
  z_stream zs_{};
  bool member_ended_ = false;
  int64_t decoded_ = 0;
};

// Reads until n bytes or the end of the stream; returns how many it read.
std::size_t read_full(Decoder& in, uint8_t* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const std::size_t k = in.read(out + got, n - got);
    if (k == 0) break;
    got += k;
  }
  return got;
}

struct Kind {
  const char* name;  // "images", "labels"
  uint32_t magic;
  int ndims;
  std::array<const char*, 3> dim_names;
  bool labels;  // each data byte must be below IdxOptions::classes
};
constexpr Kind kImages{"images", kIdxImagesMagic, 3, {"count", "rows", "cols"}, false};
constexpr Kind kLabels{"labels", kIdxLabelsMagic, 1, {"count", "", ""}, true};

const char* type_name(uint8_t code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

void check_options(const std::string& file, const IdxOptions& options) {
  if (options.max_bytes <= 0) {
    fail(file, -1,
         "IdxOptions::max_bytes must be positive, is " + std::to_string(options.max_bytes));
  }
  if (options.classes < 1 || options.classes > 256) {
    fail(file, -1, "IdxOptions::classes must be in 1..256, is " + std::to_string(options.classes));
  }
}

// Parses one IDX file of `kind` from `in`: header, data (read in chunks, so memory follows the
// data actually present rather than the header's claim), end of stream. Returns the dimensions;
// the data goes to `data`.
std::vector<int64_t> parse(Decoder& in, const std::string& file, const Kind& kind,
                           const IdxOptions& options, std::vector<uint8_t>& data) {
  const std::string expected = hex(kind.magic, 8) + " (" + kind.name + ")";
  std::array<uint8_t, 4> magic{};
  const std::size_t got_magic = read_full(in, magic.data(), magic.size());
  if (got_magic == 0) fail(file, 0, "empty: no IDX header, expected magic " + expected);
  if (got_magic < magic.size()) {
    fail(file, static_cast<int64_t>(got_magic),
         "truncated header: the stream ends inside the 4-byte magic");
  }
  const uint32_t magic_value = uint32_t{magic[0]} << 24 | uint32_t{magic[1]} << 16 |
                               uint32_t{magic[2]} << 8 | uint32_t{magic[3]};
  if (magic[0] != 0 || magic[1] != 0) {
    fail(file, magic[0] != 0 ? 0 : 1,
         "not an IDX file: magic is " + hex(magic_value, 8) + ", expected " + expected);
  }
  if (magic[2] != 0x08) {
    fail(file, 2,
         "magic is " + hex(magic_value, 8) + ": type code " + hex(magic[2], 2) + " (" +
             type_name(magic[2]) + "), expected 0x08 (unsigned byte) for " + expected);
  }
  if (magic[3] != kind.ndims) {
    std::string what =
        "magic is " + hex(magic_value, 8) + ": " + std::to_string(magic[3]) + " dimension(s)";
    if (magic_value == kIdxImagesMagic) what += " (an images file)";
    if (magic_value == kIdxLabelsMagic) what += " (a labels file)";
    fail(file, 3, what + ", expected " + std::to_string(kind.ndims) + " for " + expected);
  }

  const auto ndims = static_cast<std::size_t>(kind.ndims);
  const int64_t header_size = 4 + 4 * kind.ndims;
  std::array<uint8_t, 12> raw{};
  const std::size_t got_dims = read_full(in, raw.data(), 4 * ndims);
  if (got_dims < 4 * ndims) {
    fail(file, 4 + static_cast<int64_t>(got_dims),
         "truncated header: the stream ends inside the dimensions (an IDX " +
             std::string(kind.name) + " header is " + std::to_string(header_size) + " bytes)");
  }
  std::vector<int64_t> dims(ndims);
  for (std::size_t i = 0; i < ndims; ++i) {
    const uint8_t* p = raw.data() + 4 * i;
    dims[i] = int64_t{p[0]} << 24 | int64_t{p[1]} << 16 | int64_t{p[2]} << 8 | int64_t{p[3]};
    if (dims[i] == 0) {
      fail(file, 4 + 4 * static_cast<int64_t>(i),
           std::string("dimension ") + std::to_string(i) + " (" + kind.dim_names[i] + ") is 0");
    }
  }
  // Each factor is checked against what is left of the bound, so the product never overflows.
  int64_t total = 1;
  for (const int64_t d : dims) {
    if (d > options.max_bytes / total) {
      fail(file, 4,
           "the header declares " + dims_text(dims) + " bytes of data, more than max_bytes (" +
               std::to_string(options.max_bytes) + ")");
    }
    total *= d;
  }

  // 1 MiB at a time: a header that claims more than the stream holds costs no more memory than
  // the stream delivers (growth is geometric, so the copying stays linear).
  constexpr int64_t kChunk = int64_t{1} << 20;
  data.clear();
  data.reserve(static_cast<std::size_t>(std::min(total, kChunk)));
  while (static_cast<int64_t>(data.size()) < total) {
    const std::size_t old = data.size();
    const auto want = static_cast<std::size_t>(std::min(total - static_cast<int64_t>(old), kChunk));
    data.resize(old + want);
    const std::size_t got = read_full(in, data.data() + old, want);
    data.resize(old + got);
    if (kind.labels) {
      for (std::size_t i = old; i < old + got; ++i) {
        if (data[i] >= options.classes) {
          fail(file, header_size + static_cast<int64_t>(i),
               "label " + std::to_string(data[i]) + " at index " + std::to_string(i) +
                   " is outside 0.." + std::to_string(options.classes - 1));
        }
      }
    }
    if (got < want) {
      fail(file, header_size + static_cast<int64_t>(data.size()),
           "truncated: the header declares " + dims_text(dims) +
               (dims.size() > 1 ? " = " + std::to_string(total) : std::string()) +
               " bytes of data, the stream ends after " + std::to_string(data.size()));
    }
  }

  // Anything after the data is an error (a wrong header or a wrong file); counting stops at 64
  // KiB so that a long tail, or a gzip bomb behind valid data, costs little.
  std::array<uint8_t, 4096> tail{};
  int64_t extra = 0;
  constexpr int64_t kTailLimit = 64 * 1024;
  while (extra <= kTailLimit) {
    const std::size_t k = in.read(tail.data(), tail.size());
    if (k == 0) break;
    extra += static_cast<int64_t>(k);
  }
  if (extra > 0) {
    fail(file, header_size + total,
         (extra > kTailLimit ? "more than " + std::to_string(kTailLimit) : std::to_string(extra)) +
             " trailing byte(s) after the data the header declares (" + dims_text(dims) + ")");
  }
  return dims;
}

IdxImages images_from(Source& src, const std::string& name, const IdxOptions& options) {
  check_options(name, options);
  Decoder in(src, name);
  IdxImages out;
  const std::vector<int64_t> dims = parse(in, name, kImages, options, out.pixels);
  out.count = dims[0];
  out.rows = dims[1];
  out.cols = dims[2];
  return out;
}

IdxLabels labels_from(Source& src, const std::string& name, const IdxOptions& options) {
  check_options(name, options);
  Decoder in(src, name);
  IdxLabels out;
  out.count = parse(in, name, kLabels, options, out.labels)[0];
  return out;
}

}  // namespace

IdxImages read_idx_images(const std::string& path, const IdxOptions& options) {
  FileSource src(path);
  return images_from(src, path, options);
}

IdxLabels read_idx_labels(const std::string& path, const IdxOptions& options) {
  FileSource src(path);
  return labels_from(src, path, options);
}

IdxImages parse_idx_images(std::span<const uint8_t> bytes, const std::string& name,
                           const IdxOptions& options) {
  MemorySource src(bytes);
  return images_from(src, name, options);
}

IdxLabels parse_idx_labels(std::span<const uint8_t> bytes, const std::string& name,
                           const IdxOptions& options) {
  MemorySource src(bytes);
  return labels_from(src, name, options);
}

FashionMnist load_fashion_mnist(const std::string& dir, const IdxOptions& options) {
  namespace fs = std::filesystem;
  const std::string hint =
      "the Debian package dataset-fashion-mnist provides it (apt-get install "
      "dataset-fashion-mnist)";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fail(dir, -1, (fs::exists(dir, ec) ? "not a directory; " : "no such directory; ") + hint);
  }
  const auto path = [&](const char* name) {
    std::string p = (fs::path(dir) / name).string();
    if (!fs::exists(p, ec)) fail(p, -1, "no such file; " + hint);
    return p;
  };
  const std::string train_images = path("train-images-idx3-ubyte.gz");
  const std::string train_labels = path("train-labels-idx1-ubyte.gz");
  const std::string test_images = path("t10k-images-idx3-ubyte.gz");
  const std::string test_labels = path("t10k-labels-idx1-ubyte.gz");

  FashionMnist d;
  d.train_images = read_idx_images(train_images, options);
  d.train_labels = read_idx_labels(train_labels, options);
  d.test_images = read_idx_images(test_images, options);
  d.test_labels = read_idx_labels(test_labels, options);

  const auto check = [](const std::string& images_path, const IdxImages& images,
                        const std::string& labels_path, const IdxLabels& labels) {
    if (images.rows != 28 || images.cols != 28) {
      fail(images_path, images.rows != 28 ? 8 : 12,
           "images are " + std::to_string(images.rows) + " x " + std::to_string(images.cols) +
               ", Fashion-MNIST's are 28 x 28");
    }
    if (images.count != labels.count) {
      fail(labels_path, -1,
           "holds " + std::to_string(labels.count) + " labels, but " + images_path + " holds " +
               std::to_string(images.count) + " images");
    }
  };
  check(train_images, d.train_images, train_labels, d.train_labels);
  check(test_images, d.test_images, test_labels, d.test_labels);
  return d;
}

}  // namespace train_fashion
