// Executor semantics: closures (scopes outlive their block; go binds X when it starts), handle vs
// value semantics, select details, structured concurrency, positioned errors, deadlocks, feeds and
// fetches.
#include <gtest/gtest.h>

#include <filesystem>

#include "chanflow/core/error.h"
#include "chanflow/exec.h"
#include "chanflow/ir/builder.h"
#include "chanflow/runtime/wait_group.h"
#include "support/text.h"

namespace cf = chanflow;
using cf::Attr;
using cf::DType;
using cf::OpDesc;
using cf::VarDesc;
using cf::VarType;
using chanflow::testing_support::occurrences;

namespace {

cf::Block block(int64_t idx, int64_t parent, std::vector<VarDesc> vars, std::vector<OpDesc> ops) {
  cf::Array<VarDesc> v;
  for (auto& x : vars) v.push_back(x);
  cf::Array<OpDesc> o;
  for (auto& x : ops) o.push_back(x);
  return cf::Block::make(idx, parent, v, o);
}
cf::Program program(std::vector<cf::Block> blocks) {
  cf::Array<cf::Block> b;
  for (auto& x : blocks) b.push_back(x);
  return cf::Program::make(b);
}
OpDesc fill(const std::string& out, double v, VarType t = VarType::kFP64) {
  return OpDesc::make("fill_constant", {}, {{"Out", {out}}},
                      {{"shape", Attr::ints({1})},
                       {"dtype", Attr::i(static_cast<int64_t>(t))},
                       {"value", Attr::f(v)}});
}
OpDesc make_chan(const std::string& out, int64_t cap, VarType elem = VarType::kFP64) {
  return OpDesc::make(
      "channel_create", {}, {{"Out", {out}}},
      {{"data_type", Attr::i(static_cast<int64_t>(elem))}, {"capacity", Attr::i(cap)}});
}
OpDesc send(const std::string& ch, const std::string& x) {
  return OpDesc::make("channel_send", {{"Channel", {ch}}, {"X", {x}}}, {});
}
OpDesc recv(const std::string& ch, const std::string& out, const std::string& status) {
  return OpDesc::make("channel_recv", {{"Channel", {ch}}}, {{"Out", {out}}, {"Status", {status}}});
}
VarDesc f64(const std::string& n) { return VarDesc::tensor(n, VarType::kFP64, {1}); }
VarDesc boolean(const std::string& n) { return VarDesc::tensor(n, VarType::kBool, {1}); }
VarDesc chan(const std::string& n, int64_t cap) { return VarDesc::channel(n, VarType::kFP64, cap); }

// Paddle issue 8502: a go block started inside a conditional_block reads a variable of that
// block (by reference: it is not in the go op's X) after the block has returned.
TEST(Executor, GoBlockUsesEnclosingBlockVariablesAfterItReturns) {
  cf::Program p = program({
      block(0, -1,
            {chan("ch", 0), chan("start", 0), f64("result"), boolean("cond"), boolean("st"),
             f64("one")},
            {make_chan("ch", 0), make_chan("start", 0), fill("one", 1),
             fill("cond", 1, VarType::kBool),
             OpDesc::make("conditional_block", {{"X", {"cond"}}}, {},
                          {{"sub_block", Attr::block(1)}, {"is_scalar_condition", Attr::b(true)}}),
             send("start", "one"), recv("ch", "result", "st")}),
      block(1, 0, {f64("v")},
            {fill("v", 7), OpDesc::make("go", {}, {}, {{"sub_block", Attr::block(2)}})}),
      block(2, 1, {f64("tmp"), boolean("s2")}, {recv("start", "tmp", "s2"), send("ch", "v")}),
  });
  for (int workers : {1, 4}) {
    cf::Executor ex({.workers = workers});
    EXPECT_EQ(ex.run(p, {}, {"result"})["result"].item<double>(), 7);
  }
}

// A go op binds X when it starts: later writes by the enclosing block are not seen. Without X,
// the go block reads the variable itself (by reference) and sees the later write.
TEST(Executor, GoBindsItsArgumentsWhenItStarts) {
  auto build = [](bool bind) {
    std::vector<std::string> x = {"v"};
    OpDesc go = OpDesc::make("go", bind ? OpDesc::Args{{"X", x}} : OpDesc::Args{}, {},
                             {{"sub_block", Attr::block(1)}});
    return program({
        block(0, -1, {chan("ch", 0), chan("start", 0), f64("v"), f64("result"), boolean("st")},
              {make_chan("ch", 0), make_chan("start", 0), fill("v", 1), go, fill("v", 2),
               send("start", "v"), recv("ch", "result", "st")}),
        block(1, 0, {f64("tmp"), boolean("s2")}, {recv("start", "tmp", "s2"), send("ch", "v")}),
    });
  };
  cf::Executor ex({.workers = 2});
  EXPECT_EQ(ex.run(build(true), {}, {"result"})["result"].item<double>(), 1);
  EXPECT_EQ(ex.run(build(false), {}, {"result"})["result"].item<double>(), 2);
}

// assign of a channel copies the handle: both variables name one channel. Tensors are values.
TEST(Executor, AssignCopiesChannelHandlesAndTensorValues) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 1);
  cf::Var alias = b.declare_channel("alias", VarType::kFP64, 1);
  b.assign(ch, alias);
  cf::Var x = b.fill_constant({1}, DType::kFloat64, 3, b.var("x", DType::kFloat64, {1}));
  cf::Var y = b.assign(x, b.var("y", DType::kFloat64, {1}));
  b.increment(x, 1.0, x);  // y keeps 3
  b.channel_send(alias, x);
  b.channel_recv(ch, b.var("result", DType::kFloat64, {1}));
  cf::Executor ex;
  auto out = ex.run(b.build(), {}, {"result", "y", "x"});
  EXPECT_EQ(out["result"].item<double>(), 4);
  EXPECT_EQ(out["y"].item<double>(), 3);
  EXPECT_EQ(out["x"].item<double>(), 4);
}

// A receive on a closed, drained channel gives a zero value and Status false; a select's receive
// case on a closed channel is ready (default is not chosen).
TEST(Executor, ClosedChannelReceivesZeroAndIsReadyInSelect) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 0);
  b.channel_close(ch);
  auto [v, ok] = b.channel_recv(ch, b.var("v", DType::kFloat64, {1}));
  cf::Var which = b.fill_constant({1}, DType::kInt32, -1, b.var("which", DType::kInt32, {1}));
  {
    auto s = b.select();
    {
      auto c = s.case_recv(ch);
      b.fill_constant({1}, DType::kInt32, 1, which);
    }
    {
      auto c = s.case_default();
      b.fill_constant({1}, DType::kInt32, 2, which);
    }
  }
  cf::Executor ex;
  auto out = ex.run(b.build(), {}, {"v", ok.name(), "which"});
  EXPECT_EQ(out["v"].item<double>(), 0);
  EXPECT_FALSE(out[ok.name()].item<bool>());
  EXPECT_EQ(out["which"].item<int32_t>(), 1);
}

// select picks uniformly at random among ready cases. Each of kRounds rounds runs one select with
// both cases ready (the chosen case's body refills its channel) and logs the chosen case to a
// channel the test reads afterwards. For a uniform choice the kRounds choices are independent fair
// bits, so:
//   - the number of rounds that chose case 0 is Binomial(400, 1/2):
//     P(<= 137) + P(>= 263) = 2.95e-10;
//   - the number of adjacent rounds with the same choice (399 pairs; each pair agrees with
//     probability 1/2 independently of the others) is Binomial(399, 1/2):
//     P(<= 137) + P(>= 262) = 3.89e-10;
// so a correct select fails this test with probability < 6.9e-10 (union bound; exact binomial
// tails). A fixed order (always the first ready case) has 400 choices of one case and 399
// repeats; round-robin alternates, 0 repeats; both fail.
TEST(Executor, SelectChoosesAmongReadyCasesAtRandom) {
  constexpr int kRounds = 400;
  cf::ProgramBuilder b;
  cf::Var log = b.declare_channel("log", VarType::kFP64, kRounds);
  cf::Var a = b.make_channel(DType::kFloat64, 1);
  cf::Var c = b.make_channel(DType::kFloat64, 1);
  cf::Var zero = b.fill_constant({1}, DType::kFloat64, 0);
  cf::Var one = b.fill_constant({1}, DType::kFloat64, 1);
  b.channel_send(a, one);
  b.channel_send(c, one);
  cf::Var i = b.fill_constant({1}, DType::kInt64, 0);
  cf::Var n = b.fill_constant({1}, DType::kInt64, kRounds);
  cf::Var cond = b.less_than(i, n);
  {
    auto w = b.while_loop(cond);
    {
      auto s = b.select();
      {
        auto g = s.case_recv(a);
        b.channel_send(log, zero);
        b.channel_send(a, one);  // both cases are ready again in the next round
      }
      {
        auto g = s.case_recv(c);
        b.channel_send(log, one);
        b.channel_send(c, one);
      }
    }
    b.increment(i, 1, i);
    b.less_than(i, n, cond);
  }
  cf::Channel chosen = cf::Channel::make<cf::TensorObj>(kRounds);
  cf::Executor ex;
  ex.run(b.build(), {}, {}, {{"log", chosen}});
  std::vector<int> seq;
  while (std::optional<cf::ObjectRef> v = chosen.try_recv()) {
    seq.push_back(static_cast<int>(cf::downcast<cf::Tensor>(*v).item<double>()));
  }
  ASSERT_EQ(seq.size(), static_cast<size_t>(kRounds));
  int zeros = 0;
  int repeats = 0;
  for (size_t k = 0; k < seq.size(); ++k) {
    zeros += seq[k] == 0 ? 1 : 0;
    if (k > 0 && seq[k] == seq[k - 1]) ++repeats;
  }
  std::string head;
  for (size_t k = 0; k < 40; ++k) head += std::to_string(seq[k]);
  EXPECT_GE(zeros, 138) << "case 0 chosen " << zeros << " of " << kRounds << "; first: " << head;
  EXPECT_LE(zeros, 262) << "case 0 chosen " << zeros << " of " << kRounds << "; first: " << head;
  EXPECT_GE(repeats, 138) << repeats << " of 399 adjacent choices equal; first: " << head;
  EXPECT_LE(repeats, 261) << repeats << " of 399 adjacent choices equal; first: " << head;
}

// The first error anywhere cancels the rest (main blocks in a receive nobody will satisfy) and
// comes back positioned at its op.
TEST(Executor, ErrorInGoBlockCancelsTheRunAndNamesItsOp) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 0);
  {
    auto g = b.go();
    cf::Var t = b.fill_constant({2}, DType::kFloat64, 1);
    b.reshape(t, {5});  // 2 elements cannot become 5
  }
  b.channel_recv(ch);
  cf::Program p = b.build();
  for (int workers : {1, 2}) {
    cf::Executor ex({.workers = workers});
    try {
      ex.run(p);
      FAIL() << "expected ProgramError";
    } catch (const cf::ProgramError& e) {
      EXPECT_EQ(e.block_index(), 1);
      EXPECT_EQ(e.op_index(), 1);
      EXPECT_EQ(e.op_type(), "reshape");
      EXPECT_NE(std::string(e.what()).find("block 1, op 1 ('reshape')"), std::string::npos)
          << e.what();
    }
  }
}

TEST(Executor, SendOnClosedChannelIsAPositionedError) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 1);
  b.channel_close(ch);
  b.channel_send(ch, b.fill_constant({1}, DType::kFloat64, 1));
  cf::Executor ex;
  try {
    ex.run(b.build());
    FAIL();
  } catch (const cf::ProgramError& e) {
    EXPECT_EQ(e.block_index(), 0);
    EXPECT_EQ(e.op_type(), "channel_send");
  }
}

// The error names the op that failed, once: a plain channel_send is not a "select" (the kernel
// waits in a runtime select on the send and the run's cancellation, whose own message said
// "select: send on closed channel"), and a select op is named by the executor's position only.
TEST(Executor, SendOnClosedChannelNamesTheFailingOpOnce) {
  {
    cf::ProgramBuilder b;
    cf::Var ch = b.make_channel(DType::kFloat64, 1, "ch");
    cf::Var x = b.fill_constant({1}, DType::kFloat64, 1);
    b.channel_close(ch);
    b.channel_send(ch, x);
    cf::Executor ex;
    try {
      ex.run(b.build());
      FAIL() << "no error";
    } catch (const cf::ProgramError& e) {
      const std::string m = e.what();
      EXPECT_EQ(
          m.rfind("block 0, op 3 ('channel_send'): send on closed channel 'ch' (an error, as in Go",
                  0),
          0u)
          << m;
      EXPECT_EQ(occurrences(m, "channel_send"), 1u) << m;
      EXPECT_EQ(occurrences(m, "select"), 0u) << m;
    }
  }
  {
    cf::ProgramBuilder b;
    cf::Var open = b.make_channel(DType::kFloat64, 0, "open");
    cf::Var ch = b.make_channel(DType::kFloat64, 1, "ch");
    cf::Var x = b.fill_constant({1}, DType::kFloat64, 1);
    b.channel_close(ch);
    {
      auto s = b.select();
      { auto c = s.case_recv(open); }
      { auto c = s.case_send(ch, x); }
    }
    cf::Executor ex;
    try {
      ex.run(b.build());
      FAIL() << "no error";
    } catch (const cf::ProgramError& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.op_type(), "select");
      EXPECT_EQ(m.rfind("block 0, op 5 ('select'): case 1 sends on closed channel 'ch'", 0), 0u)
          << m;
      EXPECT_EQ(occurrences(m, "select"), 1u) << m;
    }
  }
}

// The nested ChannelClosedError names the variable whose channel was closed (channel()), for
// callers that react to one channel of a program (fluid's py_reader end of pass).
std::string closed_channel_of(const cf::Program& p) {
  cf::Executor ex;
  try {
    ex.run(p);
  } catch (const cf::ProgramError& e) {
    try {
      std::rethrow_if_nested(e);
    } catch (const cf::ChannelClosedError& closed) {
      return closed.channel();
    }
    ADD_FAILURE() << "no nested ChannelClosedError: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(Executor, ChannelClosedErrorNamesTheChannelVariable) {
  {
    cf::ProgramBuilder b;
    cf::Var ch = b.make_channel(DType::kFloat64, 1, "jobs");
    cf::Var x = b.fill_constant({1}, DType::kFloat64, 1);
    b.channel_close(ch);
    b.channel_send(ch, x);
    EXPECT_EQ(closed_channel_of(b.build()), "jobs");
  }
  {
    cf::ProgramBuilder b;
    cf::Var ch = b.make_channel(DType::kFloat64, 1, "done");
    b.channel_close(ch);
    b.channel_close(ch);
    EXPECT_EQ(closed_channel_of(b.build()), "done");
  }
  {
    cf::ProgramBuilder b;
    cf::Var open = b.make_channel(DType::kFloat64, 0, "open");
    cf::Var ch = b.make_channel(DType::kFloat64, 1, "results");
    cf::Var x = b.fill_constant({1}, DType::kFloat64, 1);
    b.channel_close(ch);
    {
      auto s = b.select();
      { auto c = s.case_recv(open); }
      { auto c = s.case_send(ch, x); }
    }
    EXPECT_EQ(closed_channel_of(b.build()), "results");
  }
  // Outside a program the runtime knows a channel by address only.
  cf::Channel ch = cf::Channel::make<cf::TensorObj>(1);
  ch.close();
  try {
    ch.close();
    FAIL() << "no error";
  } catch (const cf::ChannelClosedError& e) {
    EXPECT_EQ(e.channel(), "");
  }
}

// Everything blocked: DeadlockError naming each waiting op, never a hang.
TEST(Executor, DeadlockNamesTheWaitingOps) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 0);
  cf::Var other = b.make_channel(DType::kFloat64, 0);
  {
    auto g = b.go();
    b.channel_recv(other);
  }
  b.channel_recv(ch);
  cf::Program p = b.build();
  for (int workers : {1, 2}) {
    cf::Executor ex({.workers = workers});
    try {
      ex.run(p);
      FAIL() << "expected DeadlockError";
    } catch (const cf::DeadlockError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("block 0, op 3 ('channel_recv') on the calling thread"), std::string::npos)
          << m;
      EXPECT_NE(m.find("block 1, op 0 ('channel_recv') in green thread go@block1"),
                std::string::npos)
          << m;
    }
  }
}

// Block 0 finishes but a go block waits forever: run still reports the deadlock.
TEST(Executor, DeadlockAfterBlockZeroFinished) {
  cf::ProgramBuilder b;
  cf::Var ch = b.make_channel(DType::kFloat64, 0);
  {
    auto g = b.go();
    b.channel_send(ch, b.fill_constant({1}, DType::kFloat64, 1));
  }
  cf::Executor ex({.workers = 2});
  try {
    ex.run(b.build());
    FAIL();
  } catch (const cf::DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("'channel_send') in green thread go@block1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Executor, FeedsAndFetches) {
  cf::ProgramBuilder b;
  cf::Var x = b.var("x", DType::kFloat32, {2});
  b.scale(x, 2.0, 1.0, b.var("y", DType::kFloat32, {2}));
  cf::Program p = b.build();
  cf::Executor ex;
  auto out = ex.run(p, {{"x", cf::Tensor::from_vector<float>({1, 2})}}, {"y"});
  EXPECT_EQ(out["y"].at<float>({1}), 5.0f);
  EXPECT_THROW(ex.run(p, {{"x", cf::Tensor::from_vector<double>({1, 2})}}, {"y"}), cf::TypeError);
  EXPECT_THROW(ex.run(p, {{"nope", cf::Tensor::from_vector<float>({1})}}, {}), cf::Error);
  EXPECT_THROW(ex.run(p, {{"x", cf::Tensor::from_vector<float>({1})}}, {"zzz"}), cf::Error);
  EXPECT_THROW(ex.run(p, {}, {"y"}), cf::ProgramError);  // x read before written
}

TEST(Executor, BadProgramsFailVerificationWithAPosition) {
  cf::Program p =
      program({block(0, -1, {f64("x")}, {OpDesc::make("no_such_op", {}, {{"Out", {"x"}}})})});
  cf::Executor ex;
  try {
    ex.run(p);
    FAIL();
  } catch (const cf::ProgramError& e) {
    EXPECT_EQ(e.block_index(), 0);
    EXPECT_EQ(e.op_index(), 0);
  }
}

// The ir layer's malformed corpus: each gives a chanflow::Error (load or verify), no crash.
TEST(Executor, MalformedCorpusGivesErrors) {
  const std::filesystem::path dir =
      std::filesystem::path(CHANFLOW_PROGRAMS_DIR) / "../../tests/ir/malformed";
  int n = 0;
  cf::Executor ex;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".pbtxt" && ext != ".pb") continue;
    ++n;
    EXPECT_THROW(ex.run(cf::Program::from_file(entry.path().string())), cf::Error) << entry.path();
  }
  EXPECT_GE(n, 30);
}

// A go block spins in a while loop with no channel op; an error elsewhere still stops it
// (cancellation is checked between ops).
TEST(Executor, CancellationStopsBusyGoBlocks) {
  cf::ProgramBuilder b;
  cf::Var t = b.fill_constant({1}, DType::kBool, 1);
  {
    auto g = b.go();
    auto w = b.while_loop(t);
    b.logical_not(b.logical_not(t));
  }
  b.reshape(b.fill_constant({2}, DType::kFloat64, 1), {3});
  cf::Executor ex({.workers = 2});
  EXPECT_THROW(ex.run(b.build()), cf::ProgramError);
}

}  // namespace

// Channels shared with a run: C++ green threads send on a channel the program receives from, and
// the program sends its answer on a channel a C++ green thread receives from, while it runs.
TEST(Executor, RunExchangesValuesOnChannelsBoundByTheCaller) {
  cf::ProgramBuilder b;
  cf::Var in = b.declare_channel("in", VarType::kFP64, 0);
  cf::Var out = b.declare_channel("out", VarType::kLoDTensor, 0);
  cf::Var sum = b.fill_constant({1}, DType::kFloat64, 0.0);
  cf::Var v = b.var("v", DType::kFloat64, {1});
  cf::Var ok = b.var("ok", DType::kBool, {1});
  b.assign(b.channel_recv(in, v).second, ok);
  {
    auto loop = b.while_loop(ok);
    b.elementwise_add(sum, v, sum);
    b.assign(b.channel_recv(in, v).second, ok);
  }
  b.channel_send(out, sum);
  cf::Program p = b.build();

  cf::Scheduler s({.workers = 2});
  cf::Executor ex({.scheduler = &s});
  cf::Channel chin = cf::Channel::make<cf::TensorObj>(0);
  cf::Channel chout = cf::Channel::make<cf::TensorObj>(1);
  cf::WaitGroup wg;
  wg.add(1);
  double got = 0;
  s.go("feeder", [&] {
    for (double x : {1.0, 2.0, 3.0, 4.0}) chin.send(cf::Tensor::full({1}, x, DType::kFloat64));
    chin.close();
    got = cf::downcast<cf::Tensor>(*chout.recv()).item<double>();
    wg.done();
  });
  ex.run(p, {}, {}, {{"in", chin}, {"out", chout}});
  wg.wait();
  EXPECT_EQ(got, 10.0);
}

TEST(Executor, ChannelFeedsAreCheckedAgainstTheDeclarations) {
  cf::ProgramBuilder b;
  b.declare_channel("ch", VarType::kFP64, 0);
  b.declare_channel("chans", VarType::kChannel, 0);
  b.fill_constant({1}, DType::kFloat64, 1.0, b.var("x", DType::kFloat64, {1}));
  cf::Program p = b.build();
  cf::Executor ex;
  // A channel for a tensor variable, a channel of channels for a tensor channel, and back.
  EXPECT_THROW(ex.run(p, {}, {}, {{"x", cf::Channel::make<cf::TensorObj>(0)}}), cf::TypeError);
  EXPECT_THROW(ex.run(p, {}, {}, {{"ch", cf::Channel::make<cf::ChannelObj>(0)}}), cf::TypeError);
  EXPECT_THROW(ex.run(p, {}, {}, {{"chans", cf::Channel::make<cf::TensorObj>(0)}}), cf::TypeError);
  EXPECT_THROW(ex.run(p, {}, {}, {{"nope", cf::Channel::make<cf::TensorObj>(0)}}), cf::Error);
  EXPECT_THROW(ex.run(p, {}, {}, {{"ch", cf::Channel()}}), cf::Error);
  try {
    ex.run(p, {}, {}, {{"ch", cf::Channel::make<cf::ChannelObj>(0)}});
  } catch (const cf::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("'ch'"), std::string::npos) << e.what();
  }
  // Well-typed feeds run (nothing uses them).
  EXPECT_NO_THROW(ex.run(p, {}, {},
                         {{"ch", cf::Channel::make<cf::TensorObj>(0)},
                          {"chans", cf::Channel::make<cf::ChannelObj>(0)}}));
}

// A variable the program's own channel_create makes cannot be bound: the op would replace the
// caller's channel, and a caller waiting on it would wait for ever (the run used to hang so).
TEST(Executor, ChannelFeedOfAVariableTheProgramCreatesIsRefused) {
  cf::ProgramBuilder b;
  cf::Var made = b.make_channel(VarType::kLoDTensor, 1, "made");  // block 0, op 0
  cf::Var later = b.declare_channel("later", VarType::kLoDTensor, 1);
  cf::Var v = b.fill_constant({1}, DType::kFloat64, 1.0);
  b.channel_send(made, v);
  {
    auto go = b.go();  // a channel_create in a go block writing block 0's `later`
    b.append_op("channel_create", {}, {{"Out", {later.name()}}},
                {{"data_type", cf::Attr::i(static_cast<int64_t>(VarType::kLoDTensor))},
                 {"capacity", cf::Attr::i(1)}});
  }
  cf::Program p = b.build();
  cf::Executor ex;
  struct Case {
    std::string var;
    int block, op;
  };
  for (const Case& c : {Case{"made", 0, 0}, Case{"later", 1, 0}}) {
    cf::Channel mine = cf::Channel::make<cf::TensorObj>(1);
    try {
      ex.run(p, {}, {}, {{c.var, mine}});
      FAIL() << "no ProgramError for " << c.var;
    } catch (const cf::ProgramError& e) {
      EXPECT_EQ(std::string(e.what()),
                "channel feed '" + c.var + "': block " + std::to_string(c.block) + ", op " +
                    std::to_string(c.op) +
                    " ('channel_create') makes this variable, so a bound channel would be "
                    "replaced; bind a channel variable the program only declares");
      EXPECT_EQ(e.block_index(), c.block);
      EXPECT_EQ(e.op_index(), c.op);
      EXPECT_EQ(e.op_type(), "channel_create");
    }
    EXPECT_FALSE(mine.try_recv().has_value());  // nothing ran
  }
  // Unbound, the program runs (its own channels).
  EXPECT_NO_THROW(ex.run(p));
}

namespace {
class ExecutorWorkers : public testing::TestWithParam<int> {};
}  // namespace

// Structured concurrency frees the run before run returns: every go thread lets go of the run's
// state before the done() that lets run() return, and run() checks (CHANFLOW_CHECK) that it holds
// the last reference, so the state is freed on the calling thread, never by a go thread after run
// returned. The go threads do all their work after block 0 ended (they wait for block 0's last op
// to close `start`), so run() waits for them in the WaitGroup each time. run() used to spin
// (yield) until the last go thread dropped its reference; with the spin removed and the old order
// (done(), then release), this test aborted in that check on 1 worker under ASan in 10 of 10 tries.
// The live-object count (debug/asan/tsan builds) checks that the go threads' scopes and tensors
// are gone when run returns too (the run state itself holds no counted object).
TEST_P(ExecutorWorkers, GoThreadsReleaseTheRunBeforeRunReturns) {
  constexpr int kGoThreads = 8;
  cf::ProgramBuilder b;
  cf::Var start = b.make_channel(DType::kFloat64, 0, "start");
  for (int g = 0; g < kGoThreads; ++g) {
    auto go = b.go();
    b.channel_recv(start);  // closed by block 0's last op
    cf::Var i = b.fill_constant({1}, DType::kInt64, 0);
    cf::Var n = b.fill_constant({1}, DType::kInt64, 50);
    cf::Var cond = b.less_than(i, n);
    cf::Var acc = b.fill_constant({16}, DType::kFloat64, 0);
    {
      auto w = b.while_loop(cond);
      b.elementwise_add(acc, b.fill_constant({16}, DType::kFloat64, 1), acc);
      b.increment(i, 1, i);
      b.less_than(i, n, cond);
    }
  }
  b.channel_close(start);
  cf::Program p = b.build();
  cf::Executor ex({.workers = GetParam()});
  ex.run(p);  // warm-up: the prepared program is cached, first-use singletons exist
  const int64_t before = cf::live_object_count();
  for (int r = 0; r < 50; ++r) {
    ex.run(p);
    EXPECT_EQ(cf::live_object_count(), before) << "run " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, ExecutorWorkers, testing::Values(1, 2, 4, 8));
