// Port of TVM's container tests: Array copy-on-write and std::vector parity, Map across every
// internal size change against std::unordered_map, String comparisons and hashing.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "chanflow/core.h"

namespace cf = chanflow;

namespace {
std::vector<int64_t> values(const cf::Array<cf::Int>& a) {
  std::vector<int64_t> out;
  for (cf::Int v : a) out.push_back(v.value());
  return out;
}
}  // namespace

TEST(TvmArray, CopyOnWrite) {
  cf::Array<cf::Int> a{cf::Int(1), cf::Int(2), cf::Int(3)};
  cf::Array<cf::Int> b = a;
  EXPECT_TRUE(a.same_as(b)) << "a copy shares the node";
  b.push_back(cf::Int(4));
  EXPECT_FALSE(a.same_as(b)) << "mutating a shared array copies it first";
  EXPECT_EQ(values(a), (std::vector<int64_t>{1, 2, 3})) << "the original is untouched";
  EXPECT_EQ(values(b), (std::vector<int64_t>{1, 2, 3, 4}));

  const cf::Object* node = a.get();
  ASSERT_TRUE(a.unique());
  a.set(0, cf::Int(10));
  a.push_back(cf::Int(5));
  EXPECT_EQ(a.get(), node) << "a unique reference mutates in place, same node";
  EXPECT_EQ(values(a), (std::vector<int64_t>{10, 2, 3, 5}));
}

TEST(TvmArray, MirrorsStdVectorStepByStep) {
  std::mt19937 rng(17);
  cf::Array<cf::Int> arr;
  std::vector<int64_t> ref;
  cf::Array<cf::Int> snapshot = arr;
  std::vector<int64_t> snapshot_ref = ref;
  for (int step = 0; step < 2000; ++step) {
    const int op = static_cast<int>(rng() % 6);
    const int64_t v = static_cast<int64_t>(rng() % 1000);
    switch (op) {
      case 0:
        arr.push_back(cf::Int(v));
        ref.push_back(v);
        break;
      case 1:
        if (!ref.empty()) {
          arr.pop_back();
          ref.pop_back();
        } else {
          EXPECT_THROW(arr.pop_back(), cf::Error);
        }
        break;
      case 2: {
        const size_t pos = rng() % (ref.size() + 1);
        arr.insert(pos, cf::Int(v));
        ref.insert(ref.begin() + static_cast<std::ptrdiff_t>(pos), v);
        break;
      }
      case 3:
        if (!ref.empty()) {
          const size_t pos = rng() % ref.size();
          arr.erase(pos);
          ref.erase(ref.begin() + static_cast<std::ptrdiff_t>(pos));
        }
        break;
      case 4: {
        const size_t n = rng() % (ref.size() + 3);
        // resize grows with null handles; fill them so values() can read every element
        const size_t old = ref.size();
        arr.resize(n);
        ref.resize(n);
        for (size_t i = old; i < n; ++i) {
          arr.set(i, cf::Int(v));
          ref[i] = v;
        }
        break;
      }
      case 5:
        snapshot = arr;  // share, so the next mutation must copy
        snapshot_ref = ref;
        break;
    }
    ASSERT_EQ(values(arr), ref) << "after step " << step << " (op " << op << ")";
    ASSERT_EQ(values(snapshot), snapshot_ref) << "a shared snapshot changed at step " << step;
  }
  EXPECT_THROW((void)arr.at(ref.size()), cf::Error);
}

TEST(TvmMap, InsertAcrossEverySizeChangeMatchesUnorderedMap) {
  cf::Map<cf::String, cf::Int> m;
  std::unordered_map<std::string, int64_t> ref;
  // 26 keys cross the small form (8) and several rehashes of the index.
  for (int i = 0; i < 26; ++i) {
    const std::string key(1, static_cast<char>('a' + i));
    m.set(cf::String(key), cf::Int(i));
    ref[key] = i;
    ASSERT_EQ(m.size(), ref.size());
    for (const auto& [k, v] : ref) {
      auto got = m.get(cf::String(k));
      ASSERT_TRUE(got.has_value()) << "lost key " << k << " after inserting " << key;
      ASSERT_EQ(got->value(), v);
    }
  }
  // Overwrite keeps the size.
  m.set("c", cf::Int(100));
  ref["c"] = 100;
  EXPECT_EQ(m.size(), 26u);
  EXPECT_EQ(m.at("c").value(), 100);
  // Erase every other key, checking all lookups after each erase.
  for (int i = 0; i < 26; i += 2) {
    const std::string key(1, static_cast<char>('a' + i));
    EXPECT_TRUE(m.erase(cf::String(key)));
    EXPECT_FALSE(m.erase(cf::String(key)));
    ref.erase(key);
    ASSERT_EQ(m.size(), ref.size());
    for (char c = 'a'; c <= 'z'; ++c) {
      const std::string k(1, c);
      ASSERT_EQ(m.contains(cf::String(k)), ref.count(k) == 1) << k;
    }
  }
  // Iteration visits each entry once.
  std::unordered_map<std::string, int64_t> seen;
  for (auto [k, v] : m) seen[k.str()] = v.value();
  EXPECT_EQ(seen, ref);
  EXPECT_THROW((void)m.at("zz"), cf::Error);
}

TEST(TvmMap, RandomOperationsMatchUnorderedMap) {
  std::mt19937 rng(5);
  cf::Map<cf::Int, cf::Int> m;
  std::unordered_map<int64_t, int64_t> ref;
  for (int step = 0; step < 20000; ++step) {
    const int64_t k = static_cast<int64_t>(rng() % 300);
    if (rng() % 3 == 0) {
      ASSERT_EQ(m.erase(cf::Int(k)), ref.erase(k) == 1);
    } else {
      m.set(cf::Int(k), cf::Int(step));
      ref[k] = step;
    }
    ASSERT_EQ(m.size(), ref.size());
    const int64_t probe = static_cast<int64_t>(rng() % 300);
    auto got = m.get(probe);  // heterogeneous lookup: no key object allocated
    auto it = ref.find(probe);
    ASSERT_EQ(got.has_value(), it != ref.end()) << "step " << step;
    const cf::IntObj* found = m.find(probe);  // zero-copy lookup agrees with get
    ASSERT_EQ(found != nullptr, got.has_value());
    if (found != nullptr) {
      ASSERT_EQ(found, got->get());
      ASSERT_EQ(m.find(cf::Int(probe)), found);
    }
    if (got) {
      ASSERT_EQ(got->value(), it->second);
    }
  }
}

TEST(TvmMap, CopyOnWrite) {
  cf::Map<cf::String, cf::Int> a{{"x", cf::Int(1)}, {"y", cf::Int(2)}};
  cf::Map<cf::String, cf::Int> b = a;
  b.set("z", cf::Int(3));
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_FALSE(a.contains("z"));
  const cf::Object* node = a.get();
  a.set("x", cf::Int(9));
  EXPECT_EQ(a.get(), node) << "unique: mutated in place";
  EXPECT_EQ(b.at("x").value(), 1) << "the copy keeps its own value";
}

TEST(TvmMap, KeysByContentOrIdentity) {
  cf::Map<cf::ObjectRef, cf::Int> m;
  cf::String s1("key");
  cf::String s2(std::string("key"));
  ASSERT_FALSE(s1.same_as(s2));
  m.set(s1, cf::Int(1));
  EXPECT_TRUE(m.contains(s2)) << "strings are found by content";
  cf::Array<cf::Int> arr1;
  cf::Array<cf::Int> arr2;
  m.set(arr1, cf::Int(2));
  EXPECT_TRUE(m.contains(arr1));
  EXPECT_FALSE(m.contains(arr2)) << "other objects are keys by identity";
  m.set(cf::Int(7), cf::Int(3));
  EXPECT_TRUE(m.contains(cf::Int(7))) << "boxed ints by value";
  m.set(cf::Float(-0.0), cf::Int(4));
  EXPECT_EQ(m.at(cf::Float(0.0)).value(), 4) << "-0.0 and 0.0 are one key";
}

TEST(TvmString, ComparisonsAndEmbeddedNul) {
  cf::String a("abc");
  cf::String b(std::string("abd"));
  EXPECT_TRUE(a == "abc");
  EXPECT_TRUE(a == std::string("abc"));
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(a < std::string_view("abd"));
  const std::string with_nul("a\0b", 3);
  cf::String n(with_nul);
  EXPECT_EQ(n.size(), 3u);
  EXPECT_FALSE(n == cf::String(std::string("a\0c", 3)));
  EXPECT_TRUE(n == cf::String(with_nul));
  EXPECT_FALSE(n == "a") << "a C string stops at NUL; the String does not";
  EXPECT_EQ(std::hash<cf::String>()(n), std::hash<cf::String>()(cf::String(with_nul)));

  cf::Map<cf::String, cf::Int> m;
  m.set(n, cf::Int(1));
  m.set(cf::String("a"), cf::Int(2));
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(cf::String(with_nul)).value(), 1);
  EXPECT_EQ(m.find(std::string_view(with_nul))->value, 1);
  EXPECT_EQ(m.find("a")->value, 2);
  EXPECT_EQ(m.find("b"), nullptr);
  std::unordered_map<cf::String, int> std_map;
  std_map[n] = 5;
  EXPECT_EQ(std_map[cf::String(with_nul)], 5);
}
