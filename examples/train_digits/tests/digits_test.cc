// The dataset loader: the shipped file loads and splits; every kind of bad file is a DatasetError
// naming the file and the line.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "digits.h"

namespace td = train_digits;
namespace fs = std::filesystem;

namespace {

const std::string kData = TRAIN_DIGITS_DATA;

fs::path temp_path(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("train_digits_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

// Writes `text` gzip-compressed.
void write_gz(const fs::path& p, const std::string& text) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

std::string good_row(int label = 3, int pixel = 7) {
  std::string s;
  for (int i = 0; i < 64; ++i) s += std::to_string(pixel) + ",";
  return s + std::to_string(label) + "\n";
}

// Expects load_digits(path) to throw a DatasetError whose message contains `needle`, at `line`.
void expect_error(const fs::path& path, int64_t line, const std::string& needle,
                  td::LoadOptions opt = {}) {
  try {
    td::load_digits(path.string(), opt);
    ADD_FAILURE() << "no error for " << path;
  } catch (const td::DatasetError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), path.string());
    EXPECT_EQ(e.line(), line) << what;
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

}  // namespace

TEST(Dataset, ShippedFileLoadsAndSplitsStratified) {
  td::Digits d = td::load_digits(kData, {.expected_rows = 1797});
  ASSERT_EQ(d.rows, 1797);
  ASSERT_EQ(d.values.size(), 1797u * 64u);
  for (uint8_t v : d.values) ASSERT_LE(v, 16);
  EXPECT_EQ(d.scale, 1.0f / 16.0f);
  EXPECT_EQ(d.sample_shape, (chanflow::Shape{64}));
  td::Split s = td::stratified_split(d, 0.2, 1);
  EXPECT_EQ(s.train.size() + s.test.size(), 1797u);
  std::set<int64_t> all(s.train.begin(), s.train.end());
  for (int64_t r : s.test) EXPECT_TRUE(all.insert(r).second) << "row " << r << " in both splits";
  // Every class is ~20% test.
  for (int c = 0; c < 10; ++c) {
    int n = 0, t = 0;
    for (int64_t r = 0; r < d.rows; ++r) n += d.labels[static_cast<size_t>(r)] == c;
    for (int64_t r : s.test) t += d.labels[static_cast<size_t>(r)] == c;
    EXPECT_NEAR(static_cast<double>(t) / n, 0.2, 0.01) << "class " << c;
  }
  // Deterministic for a seed, different for another.
  EXPECT_EQ(td::stratified_split(d, 0.2, 1).test, s.test);
  EXPECT_NE(td::stratified_split(d, 0.2, 2).test, s.test);
}

TEST(Dataset, MissingFile) { expect_error(temp_path("does_not_exist.csv.gz"), 0, "cannot open"); }

TEST(Dataset, TruncatedGzipStream) {
  const std::string gz = read_all(kData);
  ASSERT_GT(gz.size(), 1000u);
  const fs::path p = temp_path("truncated.csv.gz");
  write_bytes(p, gz.substr(0, gz.size() / 2));
  try {
    td::load_digits(p.string());
    FAIL() << "a truncated file loaded";
  } catch (const td::DatasetError& e) {
    EXPECT_GT(e.line(), 100) << e.what();  // the lines before the cut were read
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(Dataset, CorruptGzipStream) {
  std::string gz = read_all(kData);
  for (size_t i = gz.size() / 3; i < gz.size() / 3 + 64; ++i)
    gz[i] = static_cast<char>(gz[i] ^ 0x5A);
  const fs::path p = temp_path("corrupt.csv.gz");
  write_bytes(p, gz);
  EXPECT_THROW(td::load_digits(p.string()), td::DatasetError);
}

TEST(Dataset, WrongFieldCountNamesTheLine) {
  const fs::path p = temp_path("short_row.csv.gz");
  write_gz(p, good_row() + good_row() + "1,2,3\n" + good_row());
  expect_error(p, 3, "found 3");
  const fs::path q = temp_path("long_row.csv");  // plain text is read too
  write_bytes(q, good_row() + "0," + good_row());
  expect_error(q, 2, "found more");
}

TEST(Dataset, ValuesOutOfRange) {
  const fs::path p = temp_path("pixel.csv.gz");
  write_gz(p, good_row() + good_row(3, 17));
  expect_error(p, 2, "outside 0..16");
  const fs::path q = temp_path("label.csv.gz");
  write_gz(q, good_row(10));
  expect_error(q, 1, "label");
  const fs::path r = temp_path("text.csv.gz");
  write_gz(r, good_row() + "x" + good_row());
  expect_error(r, 2, "not an integer");
  const fs::path e = temp_path("empty_line.csv.gz");
  write_gz(e, good_row() + "\n" + good_row());
  expect_error(e, 2, "empty line");
}

TEST(Dataset, RowCountIsChecked) {
  const fs::path p = temp_path("three.csv.gz");
  write_gz(p, good_row() + good_row() + good_row());
  EXPECT_EQ(td::load_digits(p.string()).rows, 3);
  expect_error(p, 0, "expected 1797 images, found 3", {.expected_rows = 1797});
  const fs::path z = temp_path("empty.csv.gz");
  write_gz(z, "");
  expect_error(z, 0, "no images");
}
