// The IDX reader: small files written here (gzip and plain) round-trip; every kind of bad file is
// an IdxError naming the file and the offset; the Debian package's Fashion-MNIST, when installed,
// loads with its known shape and class balance.
#include "idx.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace tf = train_fashion;
namespace fs = std::filesystem;

namespace {

using Bytes = std::string;

void put_u32(Bytes& b, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b += static_cast<char>((v >> shift) & 0xFF);
}

// An IDX file: magic, dimensions, data.
Bytes idx(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b;
  put_u32(b, magic);
  for (const uint32_t d : dims) put_u32(b, d);
  return b + data;
}

// n bytes of a pattern that is not periodic in any small period: (i * 7 + i / 251) mod 256.
Bytes pattern(std::size_t n) {
  Bytes b(n, '\0');
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<char>((i * 7 + i / 251) & 0xFF);
  return b;
}

Bytes images_file(uint32_t count, uint32_t rows, uint32_t cols) {
  return idx(tf::kIdxImagesMagic, {count, rows, cols}, pattern(std::size_t{count} * rows * cols));
}

Bytes labels_file(const std::vector<int>& labels) {
  Bytes data;
  for (const int l : labels) data += static_cast<char>(l);
  return idx(tf::kIdxLabelsMagic, {static_cast<uint32_t>(labels.size())}, data);
}

Bytes read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_raw(const fs::path& p, const Bytes& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
  ASSERT_TRUE(f.good()) << p;
}

// Writes `bytes` as one gzip member with zlib's gz* writer.
void write_gz(const fs::path& p, const Bytes& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr) << p;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<uint8_t> as_vector(const Bytes& b) { return {b.begin(), b.end()}; }

// Checks that `f` throws an IdxError for `file` at `offset` whose message names the file and
// contains `needle`.
void expect_idx_error(const std::function<void()>& f, const std::string& file, int64_t offset,
                      const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no IdxError (expected '" << needle << "' in " << file << ")";
  } catch (const tf::IdxError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), file) << what;
    EXPECT_EQ(e.offset(), offset) << what;
    EXPECT_NE(what.find(file), std::string::npos) << what;
    if (offset >= 0) {
      EXPECT_NE(what.find("offset " + std::to_string(offset)), std::string::npos) << what;
    }
    EXPECT_NE(what.find(needle), std::string::npos) << "'" << needle << "' not in: " << what;
  }
}

class Idx : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("train_fashion_idx_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes `bytes` as `name` (gzip when `gz`) and returns its path.
  std::string file(const std::string& name, const Bytes& bytes, bool gz) {
    const std::string p = path(name);
    if (gz) {
      write_gz(p, bytes);
    } else {
      write_raw(p, bytes);
    }
    return p;
  }

  void images_error(const std::string& name, const Bytes& bytes, bool gz, int64_t offset,
                    const std::string& needle, const tf::IdxOptions& opt = {}) {
    const std::string p = file(name, bytes, gz);
    expect_idx_error([&] { tf::read_idx_images(p, opt); }, p, offset, needle);
  }
  void labels_error(const std::string& name, const Bytes& bytes, bool gz, int64_t offset,
                    const std::string& needle, const tf::IdxOptions& opt = {}) {
    const std::string p = file(name, bytes, gz);
    expect_idx_error([&] { tf::read_idx_labels(p, opt); }, p, offset, needle);
  }

  fs::path dir_;
};

TEST_F(Idx, ImagesRoundTripGzipAndPlain) {
  for (const bool gz : {true, false}) {
    const std::string p = file(gz ? "a.gz" : "a", images_file(3, 2, 5), gz);
    const tf::IdxImages im = tf::read_idx_images(p);
    EXPECT_EQ(im.count, 3);
    EXPECT_EQ(im.rows, 2);
    EXPECT_EQ(im.cols, 5);
    const Bytes want = pattern(30);
    ASSERT_EQ(im.pixels.size(), 30u);
    EXPECT_EQ(Bytes(im.pixels.begin(), im.pixels.end()), want);
    // image(i) is the i-th block of rows x cols.
    const auto second = im.image(1);
    ASSERT_EQ(second.size(), 10u);
    EXPECT_EQ(second[0], static_cast<uint8_t>(want[10]));
    EXPECT_EQ(second[9], static_cast<uint8_t>(want[19]));
  }
}

TEST_F(Idx, LabelsRoundTripGzipAndPlain) {
  const std::vector<int> labels{0, 9, 3, 3, 7, 1, 0, 5};
  for (const bool gz : {true, false}) {
    const std::string p = file(gz ? "l.gz" : "l", labels_file(labels), gz);
    const tf::IdxLabels l = tf::read_idx_labels(p);
    EXPECT_EQ(l.count, 8);
    EXPECT_EQ(std::vector<int>(l.labels.begin(), l.labels.end()), labels);
  }
}

// More than the reader's 1 MiB chunk, so the data arrives in several reads and inflate calls.
TEST_F(Idx, DataLargerThanOneChunk) {
  const Bytes bytes = images_file(20, 256, 256);  // 1310720 data bytes
  for (const bool gz : {true, false}) {
    const std::string p = file(gz ? "big.gz" : "big", bytes, gz);
    const tf::IdxImages im = tf::read_idx_images(p);
    EXPECT_EQ(im.count, 20);
    EXPECT_EQ(Bytes(im.pixels.begin(), im.pixels.end()), pattern(20 * 256 * 256));
  }
  // Truncated past the first chunk: the offset is where the data stops.
  const Bytes cut = bytes.substr(0, 16 + (1 << 20) + 1000);
  images_error("bigcut", cut, false, 16 + (1 << 20) + 1000, "stream ends after 1049576");
  images_error("bigcut.gz", cut, true, 16 + (1 << 20) + 1000, "truncated");
}

// gzip allows concatenated members (`cat a.gz b.gz`); the decoded stream is their concatenation.
TEST_F(Idx, ConcatenatedGzipMembers) {
  const Bytes bytes = images_file(4, 3, 3);
  write_gz(path("head.gz"), bytes.substr(0, 7));
  write_gz(path("empty.gz"), "");
  write_gz(path("tail.gz"), bytes.substr(7));
  const std::string p = file(
      "cat.gz", read_all(path("head.gz")) + read_all(path("empty.gz")) + read_all(path("tail.gz")),
      false);
  const tf::IdxImages im = tf::read_idx_images(p);
  EXPECT_EQ(im.count, 4);
  EXPECT_EQ(Bytes(im.pixels.begin(), im.pixels.end()), pattern(36));
}

TEST_F(Idx, ParseFromMemoryMatchesTheFileReader) {
  const std::string p = file("m.gz", images_file(2, 4, 4), true);
  const tf::IdxImages from_file = tf::read_idx_images(p);
  const tf::IdxImages from_bytes = tf::parse_idx_images(as_vector(read_all(p)), "in-memory");
  EXPECT_EQ(from_bytes.count, from_file.count);
  EXPECT_EQ(from_bytes.pixels, from_file.pixels);
  // Errors name the given name.
  const std::vector<uint8_t> bad = as_vector(labels_file({1, 2}));
  expect_idx_error([&] { tf::parse_idx_images(bad, "in-memory"); }, "in-memory", 3,
                   "1 dimension(s) (a labels file)");
}

TEST_F(Idx, MissingFile) {
  const std::string p = path("nope.gz");
  expect_idx_error([&] { tf::read_idx_images(p); }, p, -1, "cannot open: No such file");
  expect_idx_error([&] { tf::read_idx_labels(p); }, p, -1, "cannot open: No such file");
}

TEST_F(Idx, UnreadableFile) {
  // A directory opens with fopen but does not read; the error is the read's.
  const std::string p = path("adir");
  fs::create_directories(p);
  expect_idx_error([&] { tf::read_idx_images(p); }, p, -1, "cannot read: Is a directory");
}

TEST_F(Idx, EmptyFile) {
  images_error("empty", "", false, 0, "empty: no IDX header");
  images_error("empty.gz", "", true, 0, "empty: no IDX header");
}

// Neither gzip nor IDX: read as a plain file, whose first bytes are not an IDX magic.
TEST_F(Idx, GarbageThatIsNotGzip) {
  images_error("garbage", "hello, world\n", false, 0,
               "not an IDX file: magic is 0x68656C6C, expected 0x00000803 (images)");
  labels_error("garbage1", Bytes("\0\x01\x08\x01", 4) + "xxxx", false, 1,
               "not an IDX file: magic is 0x00010801");
}

TEST_F(Idx, CorruptDeflateStream) {
  // A gzip header (deflate, no flags, mtime 0, OS unix) and a final block of the reserved type 3.
  const Bytes invalid_block("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x07\x00\x00\x00\x00", 15);
  images_error("badblock.gz", invalid_block, false, 0, "corrupt gzip stream at compressed byte");
  images_error("badblock2.gz", invalid_block, false, 0, "invalid block type");

  // A bad CRC-32 in the trailer: all data decodes, the check fails when the stream ends.
  const Bytes bytes = images_file(3, 4, 4);
  write_gz(path("good.gz"), bytes);
  Bytes gz = read_all(path("good.gz"));
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x01);
  images_error("badcrc.gz", gz, false, static_cast<int64_t>(bytes.size()), "incorrect data check");

  // A garbled gzip header (compression method 9 is not deflate).
  Bytes method = read_all(path("good.gz"));
  method[2] = 9;
  images_error("method.gz", method, false, 0, "corrupt gzip stream");
}

TEST_F(Idx, TruncatedData) {
  const Bytes bytes = images_file(2, 2, 2);  // 16 header + 8 data bytes
  images_error("short", bytes.substr(0, 21), false, 21,
               "truncated: the header declares 2 x 2 x 2 = 8 bytes of data, the stream ends "
               "after 5");
  images_error("short.gz", bytes.substr(0, 21), true, 21, "the stream ends after 5");
  labels_error("lshort", labels_file({1, 2, 3}).substr(0, 10), false, 10,
               "the stream ends after 2");
  // Inside the header.
  images_error("hdr", bytes.substr(0, 10), false, 10, "truncated header");
  images_error("magic", bytes.substr(0, 3), false, 3, "truncated header");
}

TEST_F(Idx, TruncatedGzipStream) {
  const Bytes bytes = images_file(50, 20, 20);
  write_gz(path("full.gz"), bytes);
  const Bytes gz = read_all(path("full.gz"));
  // Without the 8-byte trailer every data byte decodes, but the stream has no end: an error too.
  images_error("notrailer.gz", gz.substr(0, gz.size() - 8), false,
               static_cast<int64_t>(bytes.size()), "truncated gzip stream: the file ends");
  // Cut in the middle: the data is short. Where zlib stops emitting is its business, so the
  // offset is only bounded.
  const std::string half = file("half.gz", gz.substr(0, gz.size() / 2), false);
  try {
    tf::read_idx_images(half);
    ADD_FAILURE() << "no error";
  } catch (const tf::IdxError& e) {
    EXPECT_EQ(e.file(), half);
    EXPECT_GT(e.offset(), 16);
    EXPECT_LT(e.offset(), static_cast<int64_t>(bytes.size()));
    EXPECT_NE(std::string(e.what()).find("truncated gzip stream"), std::string::npos) << e.what();
  }
}

TEST_F(Idx, TrailingBytes) {
  const Bytes bytes = images_file(2, 2, 2);
  images_error("trail", bytes + "abc", false, 24, "3 trailing byte(s) after the data");
  images_error("trail.gz", bytes + "abc", true, 24, "3 trailing byte(s)");
  labels_error("ltrail", labels_file({1, 2}) + Bytes(100000, 'x'), false, 10,
               "more than 65536 trailing byte(s)");
  // After the gzip stream: bytes that are not another member.
  write_gz(path("ok.gz"), bytes);
  images_error("after.gz", read_all(path("ok.gz")) + "junk", false, 24,
               "followed by data that is not another gzip member");
}

TEST_F(Idx, WrongMagic) {
  // A labels file read as images, and the other way round: the dimension count is named.
  images_error("l-as-i", labels_file({1, 2}), false, 3,
               "magic is 0x00000801: 1 dimension(s) (a labels file), expected 3 for 0x00000803 "
               "(images)");
  labels_error("i-as-l.gz", images_file(1, 2, 2), true, 3,
               "magic is 0x00000803: 3 dimension(s) (an images file), expected 1 for 0x00000801 "
               "(labels)");
  // Another element type.
  Bytes floats = images_file(1, 1, 1);
  floats[2] = 0x0D;
  images_error("float", floats, false, 2, "type code 0x0D (float32), expected 0x08");
  Bytes odd = images_file(1, 1, 1);
  odd[2] = 0x42;
  images_error("odd", odd, false, 2, "type code 0x42 (not an IDX type)");
  // Two dimensions.
  images_error("2d", idx(0x00000802, {2, 2}, "abcd"), false, 3, "2 dimension(s), expected 3");
}

TEST_F(Idx, ZeroDimension) {
  images_error("c0", idx(tf::kIdxImagesMagic, {0, 28, 28}, ""), false, 4,
               "dimension 0 (count) is 0");
  images_error("r0", idx(tf::kIdxImagesMagic, {5, 0, 28}, ""), false, 8, "dimension 1 (rows) is 0");
  images_error("k0.gz", idx(tf::kIdxImagesMagic, {5, 28, 0}, ""), true, 12,
               "dimension 2 (cols) is 0");
  labels_error("l0", idx(tf::kIdxLabelsMagic, {0}, ""), false, 4, "dimension 0 (count) is 0");
}

TEST_F(Idx, HeaderDeclaresMoreThanMaxBytes) {
  // 2^96 - ish bytes declared by a 16-byte file: rejected from the header alone (no allocation,
  // no overflow of the product).
  images_error("huge", idx(tf::kIdxImagesMagic, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, ""), false, 4,
               "the header declares 4294967295 x 4294967295 x 4294967295 bytes of data, more than "
               "max_bytes (268435456)");
  labels_error("lhuge.gz", idx(tf::kIdxLabelsMagic, {0xFFFFFFFF}, ""), true, 4, "max_bytes");
  // The bound is inclusive.
  const std::string p = file("eight", images_file(2, 2, 2), false);
  EXPECT_EQ(tf::read_idx_images(p, {.max_bytes = 8}).pixels.size(), 8u);
  expect_idx_error([&] { tf::read_idx_images(p, {.max_bytes = 7}); }, p, 4,
                   "more than max_bytes (7)");
}

TEST_F(Idx, LabelOutOfRange) {
  labels_error("l10", labels_file({1, 2, 3, 10, 4}), false, 11,
               "label 10 at index 3 is outside 0..9");
  labels_error("l255.gz", labels_file({255}), true, 8, "label 255 at index 0 is outside 0..9");
  // IdxOptions::classes moves the bound.
  const std::string p = file("five", labels_file({0, 4, 2, 5}), false);
  expect_idx_error([&] { tf::read_idx_labels(p, {.classes = 5}); }, p, 11,
                   "label 5 at index 3 is outside 0..4");
  EXPECT_EQ(tf::read_idx_labels(p, {.classes = 6}).labels.back(), 5);
}

TEST_F(Idx, BadOptions) {
  const std::string p = file("opt", labels_file({1}), false);
  expect_idx_error([&] { tf::read_idx_labels(p, {.max_bytes = 0}); }, p, -1,
                   "IdxOptions::max_bytes must be positive");
  expect_idx_error([&] { tf::read_idx_labels(p, {.classes = 0}); }, p, -1,
                   "IdxOptions::classes must be in 1..256");
}

// A directory shaped like the Debian package's, with small files.
class FashionDir : public Idx {
 protected:
  void write(const Bytes& train_images, const Bytes& train_labels, const Bytes& test_images,
             const Bytes& test_labels) {
    file("train-images-idx3-ubyte.gz", train_images, true);
    file("train-labels-idx1-ubyte.gz", train_labels, true);
    file("t10k-images-idx3-ubyte.gz", test_images, true);
    file("t10k-labels-idx1-ubyte.gz", test_labels, true);
  }
};

TEST_F(FashionDir, LoadsTheFourFiles) {
  write(images_file(3, 28, 28), labels_file({0, 1, 2}), images_file(2, 28, 28),
        labels_file({9, 8}));
  const tf::FashionMnist d = tf::load_fashion_mnist(dir_.string());
  EXPECT_EQ(d.train_images.count, 3);
  EXPECT_EQ(d.train_labels.labels, (std::vector<uint8_t>{0, 1, 2}));
  EXPECT_EQ(d.test_images.count, 2);
  EXPECT_EQ(d.test_labels.labels, (std::vector<uint8_t>{9, 8}));
  EXPECT_EQ(Bytes(d.test_images.pixels.begin(), d.test_images.pixels.end()), pattern(2 * 784));
}

TEST_F(FashionDir, CountMismatchNamesBothFiles) {
  write(images_file(3, 28, 28), labels_file({0, 1, 2}), images_file(2, 28, 28),
        labels_file({9, 8, 7}));
  const std::string labels = path("t10k-labels-idx1-ubyte.gz");
  const std::string images = path("t10k-images-idx3-ubyte.gz");
  expect_idx_error([&] { tf::load_fashion_mnist(dir_.string()); }, labels, -1,
                   "holds 3 labels, but " + images + " holds 2 images");
}

TEST_F(FashionDir, ImagesMustBe28By28) {
  write(images_file(3, 28, 28), labels_file({0, 1, 2}), images_file(2, 28, 27),
        labels_file({9, 8}));
  expect_idx_error([&] { tf::load_fashion_mnist(dir_.string()); },
                   path("t10k-images-idx3-ubyte.gz"), 12,
                   "images are 28 x 27, Fashion-MNIST's are 28 x 28");
}

TEST_F(FashionDir, AFileErrorNamesThatFile) {
  write(images_file(3, 28, 28), labels_file({0, 1, 12}), images_file(2, 28, 28),
        labels_file({9, 8}));
  expect_idx_error([&] { tf::load_fashion_mnist(dir_.string()); },
                   path("train-labels-idx1-ubyte.gz"), 10, "label 12 at index 2");
}

TEST_F(FashionDir, MissingDirectoryOrFileNamesThePackage) {
  const std::string missing = path("no-such-dir");
  expect_idx_error([&] { tf::load_fashion_mnist(missing); }, missing, -1,
                   "no such directory; the Debian package dataset-fashion-mnist provides it "
                   "(apt-get install dataset-fashion-mnist)");
  // The directory exists but lacks a file.
  file("train-images-idx3-ubyte.gz", images_file(1, 28, 28), true);
  const std::string labels = path("train-labels-idx1-ubyte.gz");
  expect_idx_error([&] { tf::load_fashion_mnist(dir_.string()); }, labels, -1,
                   "no such file; the Debian package dataset-fashion-mnist provides it");
}

// The real files (Debian package dataset-fashion-mnist). Fashion-MNIST is balanced: 6000 images
// per class in train, 1000 in test; its mean pixel is about 73 (of 255).
TEST(FashionMnistData, DebianPackageFiles) {
  if (!fs::is_directory(tf::kFashionMnistDir)) {
    GTEST_SKIP() << tf::kFashionMnistDir << " missing (apt-get install dataset-fashion-mnist)";
  }
  const tf::FashionMnist d = tf::load_fashion_mnist();
  EXPECT_EQ(d.train_images.count, 60000);
  EXPECT_EQ(d.test_images.count, 10000);
  for (const tf::IdxImages* im : {&d.train_images, &d.test_images}) {
    EXPECT_EQ(im->rows, 28);
    EXPECT_EQ(im->cols, 28);
    ASSERT_EQ(im->pixels.size(), static_cast<std::size_t>(im->count * 28 * 28));
    const double sum = std::accumulate(im->pixels.begin(), im->pixels.end(), 0.0);
    const double mean = sum / static_cast<double>(im->pixels.size());
    EXPECT_GT(mean, 60.0);
    EXPECT_LT(mean, 90.0);
    // Images are not blank: every pixel value range is used.
    EXPECT_EQ(*std::max_element(im->pixels.begin(), im->pixels.end()), 255);
    EXPECT_EQ(*std::min_element(im->pixels.begin(), im->pixels.end()), 0);
  }
  const auto histogram = [](const tf::IdxLabels& l) {
    std::array<int64_t, 10> h{};
    for (const uint8_t v : l.labels) ++h[v];
    return h;
  };
  std::array<int64_t, 10> train{}, test{};
  train.fill(6000);
  test.fill(1000);
  EXPECT_EQ(histogram(d.train_labels), train);
  EXPECT_EQ(histogram(d.test_labels), test);
}

}  // namespace
