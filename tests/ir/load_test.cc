// Loading: the design documents' listings and every examples/programs/*.pbtxt load and verify;
// from_file dispatches on the extension; syntax errors name the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace cf = chanflow;
using cf::ir_test::expect_program_error;
using cf::ir_test::read_file;

TEST(ProgramLoad, SeedGoOpListing) {
  cf::Program p = cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_go_op.pbtxt");
  ASSERT_EQ(p.num_blocks(), 2u);
  cf::Block b0 = p.block(0);
  EXPECT_EQ(b0->parent_idx, -1);
  ASSERT_EQ(b0->ops.size(), 4u);
  EXPECT_EQ(b0->ops[1].type(), "go");
  EXPECT_EQ(b0->ops[1].attr("sub_block")->as_block(), 1);
  EXPECT_EQ(b0->ops[0].attr("data_type")->as_int(), 7);
  auto ret = b0.find_var("return_value");
  ASSERT_TRUE(ret.has_value());
  EXPECT_EQ((*ret)->data_type, static_cast<int64_t>(cf::VarType::kInt64));
  cf::Block b1 = p.block(1);
  EXPECT_EQ(b1->parent_idx, 0);
  EXPECT_EQ(b1->ops[0].attr("value")->as_float(), 99.0);
  EXPECT_EQ(b1->ops[0].attr("shape")->as_ints(), std::vector<int64_t>{1});
  EXPECT_EQ(b1->ops[1].input("X"), std::vector<std::string>{"fill_constant_1.tmp_0"});
  cf::Program v = cf::verify(p);
  // Defaults filled: channel_create already had both attributes; the listing predates
  // fill_constant's str_value, which is the one default added.
  EXPECT_FALSE(b1->ops[0].attr("str_value").has_value());
  EXPECT_EQ(v.block(1)->ops[0].attr("str_value")->as_string(), "");
  EXPECT_TRUE(cf::verify(v).equals(v));
}

TEST(ProgramLoad, SeedSelectOpListing) {
  cf::Program p =
      cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_select_op.pbtxt");
  ASSERT_EQ(p.num_blocks(), 5u);
  cf::OpDesc sel;
  for (cf::OpDesc op : p.block(0)->ops) {
    if (op.type() == "select") sel = op;
  }
  ASSERT_TRUE(sel.defined());
  EXPECT_EQ(sel.attr("cases")->as_strings(),
            (std::vector<std::string>{"0,1,channel_101,fill_constant_109.tmp_0",
                                      "1,2,channel_102,fill_constant_108.tmp_0"}));
  EXPECT_EQ(sel.input("case_to_execute"), std::vector<std::string>{"fill_constant_110.tmp_0"});
  // The case's conditional_block keeps the listing's `block_idx: 4`.
  EXPECT_EQ(p.block(1)->ops[2].attr("sub_block")->as_block(), 4);
  EXPECT_NO_THROW(cf::verify(p));
}

TEST(ProgramLoad, EveryExampleProgramLoadsAndVerifies) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(CHANFLOW_PROGRAMS_DIR)) {
    if (entry.path().extension() != ".pbtxt") continue;
    SCOPED_TRACE(entry.path().string());
    cf::Program p = cf::Program::from_file(entry.path().string());
    cf::Program v = cf::verify(p);
    EXPECT_TRUE(cf::Program::from_text(v.to_text()).equals(v));
    ++count;
  }
  EXPECT_GE(count, 9);  // 2 seeds + 7 Paddle cases
}

TEST(ProgramLoad, FromFileChoosesFormatByExtension) {
  const std::string dir = ::testing::TempDir();
  cf::Program p = cf::Program::from_file(std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_go_op.pbtxt");
  p.save(dir + "/prog.pb");
  p.save(dir + "/prog.pbtxt");
  EXPECT_TRUE(cf::Program::from_file(dir + "/prog.pb").equals(p));
  EXPECT_TRUE(cf::Program::from_file(dir + "/prog.pbtxt").equals(p));
  EXPECT_NE(read_file(dir + "/prog.pb"), read_file(dir + "/prog.pbtxt"));
  try {
    cf::Program::from_file(dir + "/prog.json");
    ADD_FAILURE() << "unknown extension accepted";
  } catch (const cf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown extension"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cf::Program::from_file(dir + "/does_not_exist.pbtxt"), cf::Error);
  // A binary file read as text (wrong extension) is a ProgramError, not a crash.
  std::filesystem::copy_file(dir + "/prog.pb", dir + "/renamed.pbtxt",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THROW(cf::Program::from_file(dir + "/renamed.pbtxt"), cf::ProgramError);
}

TEST(ProgramLoad, SyntaxErrorNamesLineAndColumn) {
  const std::string text = "blocks {\n  idx: 0\n  parent_idx: -1\n  opz { type: \"go\" }\n}\n";
  cf::ProgramError e = expect_program_error([&] { cf::Program::from_text(text, "bad.pbtxt"); });
  EXPECT_NE(std::string(e.what()).find("bad.pbtxt:4:"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("opz"), std::string::npos) << e.what();
}

TEST(ProgramLoad, StructuralErrorNamesLineAndPath) {
  const std::string text =
      "blocks {\n  idx: 0\n  parent_idx: -1\n  ops {\n    type: \"assign\"\n  }\n"
      "  ops {\n    attrs { name: \"x\" type: INT f: 1.5 }\n    type: \"scale\"\n  }\n}\n";
  cf::ProgramError e = expect_program_error([&] { cf::Program::from_text(text, "p.pbtxt"); });
  const std::string msg = e.what();
  EXPECT_NE(msg.find("p.pbtxt:8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("blocks[0].ops[1].attrs[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared INT but has a 'f' value"), std::string::npos) << msg;
  EXPECT_EQ(e.block_index(), 0);
  EXPECT_EQ(e.op_index(), 1);
  EXPECT_EQ(e.op_type(), "scale");
}

TEST(ProgramLoad, EmptyInputs) {
  EXPECT_THROW(cf::Program::from_text(""), cf::ProgramError);
  EXPECT_THROW(cf::Program::from_binary(""), cf::ProgramError);
  EXPECT_THROW(cf::Program::from_text("blocks { }"), cf::ProgramError);  // no idx
}

// A program file is untrusted: its size is bounded and the bound is enforced while reading, so a
// source without an end costs at most the bound (plus one read chunk) of memory.
TEST(ProgramLoad, ReadBytesStopsAtTheBound) {
  std::istringstream exact(std::string(1000, 'x'));
  EXPECT_EQ(cf::Program::read_bytes(exact, "exact", 1000).size(), 1000u);
  std::istringstream over(std::string(1001, 'x'));
  try {
    cf::Program::read_bytes(over, "over.pbtxt", 1000);
    FAIL() << "a 1001-byte input passed a 1000-byte bound";
  } catch (const cf::LimitError& e) {
    EXPECT_EQ(e.limit(), "max_bytes");
    EXPECT_NE(std::string(e.what()).find("over.pbtxt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1000 bytes"), std::string::npos) << e.what();
  }
  std::ifstream zero("/dev/zero", std::ios::binary);
  ASSERT_TRUE(zero);
  EXPECT_THROW(cf::Program::read_bytes(zero, "/dev/zero", 1 << 20), cf::LimitError);
}

TEST(ProgramLoad, FromFileHonoursItsBound) {
  const std::string path = std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_go_op.pbtxt";
  EXPECT_THROW(cf::Program::from_file(path, 16), cf::LimitError);
  EXPECT_NO_THROW(cf::Program::from_file(path, 1 << 20));
}

// from_text_stream (what from_file and the command use for text): the same program and the same
// errors as from_text, with the line of a structural error when the stream can seek back, without
// it when it cannot, and the size bound.
namespace {
// An input that can be read once, like a pipe: no seeking back.
class OnceBuf : public std::streambuf {
 public:
  explicit OnceBuf(std::string text) : text_(std::move(text)) {
    setg(text_.data(), text_.data(), text_.data() + text_.size());
  }

 private:
  std::string text_;
};
}  // namespace

TEST(ProgramLoad, FromTextStreamMatchesFromText) {
  const std::string path = std::string(CHANFLOW_PROGRAMS_DIR) + "/seed_select_op.pbtxt";
  const std::string text = read_file(path);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(cf::Program::from_text_stream(in, path).equals(cf::Program::from_text(text, path)));
  for (const char* name : {"duplicate_attr.pbtxt", "missing_idx.pbtxt", "truncated.pbtxt",
                           "unbalanced_braces.pbtxt", "attr_value_field_mismatch.pbtxt"}) {
    const std::string bad = std::string(CHANFLOW_MALFORMED_DIR) + "/" + name;
    std::string want;
    try {
      cf::Program::from_text(read_file(bad), bad);
    } catch (const cf::ProgramError& e) {
      want = e.what();
    }
    ASSERT_FALSE(want.empty()) << name;
    std::ifstream f(bad, std::ios::binary);
    try {
      cf::Program::from_text_stream(f, bad);
      ADD_FAILURE() << name << " loaded";
    } catch (const cf::ProgramError& e) {
      EXPECT_EQ(std::string(e.what()), want) << name;
    }
  }
}

TEST(ProgramLoad, FromTextStreamWithoutSeekHasNoLine) {
  const std::string bad = std::string(CHANFLOW_MALFORMED_DIR) + "/duplicate_attr.pbtxt";
  OnceBuf buf(read_file(bad));
  std::istream once(&buf);
  try {
    cf::Program::from_text_stream(once, "<pipe>");
    FAIL() << "loaded";
  } catch (const cf::ProgramError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("<pipe>: blocks[", 0), 0u) << msg;  // the path, no line
    EXPECT_NE(msg.find("appears twice"), std::string::npos) << msg;
  }
}

TEST(ProgramLoad, FromTextStreamHonoursItsBound) {
  const std::string path = std::string(CHANFLOW_PROGRAMS_DIR) + "/go_op.pbtxt";
  const std::string text = read_file(path);
  std::istringstream exact(text);
  EXPECT_NO_THROW(cf::Program::from_text_stream(exact, "exact", text.size()));
  std::istringstream over(text);
  try {
    cf::Program::from_text_stream(over, "over.pbtxt", text.size() - 1);
    FAIL() << "loaded";
  } catch (const cf::LimitError& e) {
    EXPECT_EQ(e.limit(), "max_bytes");
    EXPECT_NE(std::string(e.what()).find("over.pbtxt"), std::string::npos) << e.what();
  }
}

// The text loader parses one var or op at a time when it can, and the whole message otherwise;
// every spelling the text format allows must give the same program either way.
TEST(ProgramLoad, EveryTextSpellingGivesTheSameProgram) {
  // Comments and strings holding braces, quotes and '#', `:` before messages, <...> delimiters,
  // `;`/`,` separators, a block's scalars after its ops.
  const std::string odd = R"txt(# a program { with } braces in comments
blocks: {
  ops <
    type: 'print'   # } not the end
    inputs { parameter: "In" arguments: "x" }
    attrs { name: "message" type: STRING s: "a}b>c{d<#e\"f'g" };
  >
  vars: { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 } } } },
  idx: 0
  parent_idx: -1;
  forward_block_idx: 3
}
blocks < idx: 1 parent_idx: 0 >
)txt";
  // The same in the list syntax, which the loader parses whole.
  const std::string listed = R"txt(blocks: [
  { idx: 0 parent_idx: -1 forward_block_idx: 3
    vars { name: "x" type { type: LOD_TENSOR lod_tensor { tensor { data_type: FP32 dims: 2 } } } }
    ops: [ { type: "print" inputs { parameter: "In" arguments: "x" }
             attrs { name: "message" type: STRING s: "a}b>c{d<#e\"f'g" } } ] },
  { idx: 1 parent_idx: 0 } ]
)txt";
  const cf::Program a = cf::Program::from_text(odd, "odd");
  ASSERT_EQ(a.num_blocks(), 2u);
  const cf::Block b0 = a.block(0);
  EXPECT_EQ(b0->forward_block_idx, 3);
  ASSERT_EQ(b0->vars.size(), 1u);
  EXPECT_EQ(b0->vars[0]->name, "x");
  ASSERT_EQ(b0->ops.size(), 1u);
  EXPECT_EQ(b0->ops[0].type(), "print");
  EXPECT_EQ(b0->ops[0].attr("message")->as_string(), "a}b>c{d<#e\"f'g");
  EXPECT_EQ(a.block(1)->parent_idx, 0);
  EXPECT_TRUE(cf::Program::from_text(listed, "listed").equals(a));
  EXPECT_TRUE(cf::Program::from_text(a.to_text(), "printed").equals(a));
  std::istringstream stream(odd);
  EXPECT_TRUE(cf::Program::from_text_stream(stream, "odd").equals(a));
}

// An error found part way through a streamed load is reported as the whole parse reports it:
// with its line, and the first error of the file.
TEST(ProgramLoad, ErrorsAfterStreamedOpsKeepTheirPositions) {
  std::string text = "blocks {\n  idx: 0\n  parent_idx: -1\n";
  for (int i = 0; i < 50; ++i) text += "  ops { type: \"print\" }\n";
  EXPECT_EQ(cf::Program::from_text(text + "}\n", "good").block(0)->ops.size(), 50u);
  auto message = [](const std::string& t) {
    return std::string(expect_program_error([&] { cf::Program::from_text(t, "f"); }).what());
  };
  // A syntax error on line 54 (an unknown field), with its column.
  EXPECT_EQ(message(text + "  ops { type: \"print\" bogus: 1 }\n}\n").rfind("f:54:", 0), 0u);
  // A structural error (an op without a type) on line 54, with its path.
  const std::string structural =
      message(text + "  ops { attrs { name: \"a\" type: INT i: 1 } }\n}\n");
  EXPECT_EQ(structural.rfind("f:54: blocks[0].ops[50]", 0), 0u) << structural;
  // The input ends inside the block.
  EXPECT_EQ(message(text).rfind("f:", 0), 0u);
}
