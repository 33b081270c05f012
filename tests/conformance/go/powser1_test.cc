// Port of Go's test/chan/powser1.go: Doug McIlroy's power series over channels ("Squinting at
// Power Series"). A power series is a demand-driven stream: a pair of unbuffered channels, `req`
// (ask for the next coefficient) and `dat` (the coefficient, an exact rational). Each operator —
// add, multiply, differentiate, integrate, exponential, substitution, reciprocal — is a green
// thread, and the network grows while it runs (Mul and Subst spawn recursively). The coefficient
// tables checked are Go's: Ones, Add, Diff, Integ, Cmul, Sub, Mul, Exp, ATan; plus Tan (the
// reversion of ATan), whose table Go's file carries commented out for want of Revert.
//
// Go's program exits with hundreds of goroutines parked. Here every channel is registered, and
// shutdown() closes them all: each parked operator then sees its channel closed and returns, and
// the test waits for every one of them.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <vector>

#include "chanflow/runtime.h"
#include "conformance/go/go_test_util.h"

namespace cf = chanflow;
using cf::testing::close_quietly;

namespace {

// --- exact rationals; den == 0 marks the end of a finite series ("finis") ---------------------

struct Rat {
  int64_t num = 0;
  int64_t den = 1;
  friend bool operator==(const Rat& a, const Rat& b) { return a.num == b.num && a.den == b.den; }
  friend std::ostream& operator<<(std::ostream& os, const Rat& r) {
    return r.den == 1 ? os << r.num : os << r.num << "/" << r.den;
  }
};

// The non-negative greatest common divisor (gcd(0, 0) = 0).
int64_t gcd(int64_t u, int64_t v) {
  if (u < 0) u = -u;
  if (v < 0) v = -v;
  while (u != 0) {
    int64_t t = v % u;
    v = u;
    u = t;
  }
  return v;
}

// u/v in lowest terms with a positive denominator (x/0 is the end marker).
Rat rat(int64_t u, int64_t v) {
  int64_t g = gcd(u, v);
  if (g == 0) g = 1;
  Rat r{u / g, v / g};
  if (r.den < 0) {
    r.num = -r.num;
    r.den = -r.den;
  }
  return r;
}
Rat itor(int64_t u) { return rat(u, 1); }
const Rat kZero = itor(0);
const Rat kOne = itor(1);
const Rat kFinis = rat(1, 0);
bool end(const Rat& u) { return u.den == 0; }

Rat add(Rat u, Rat v) {
  int64_t g = gcd(u.den, v.den);
  if (g == 0) g = 1;
  return rat(u.num * (v.den / g) + v.num * (u.den / g), u.den * (v.den / g));
}
Rat mul(Rat u, Rat v) {
  int64_t g1 = gcd(u.num, v.den);
  int64_t g2 = gcd(u.den, v.num);
  if (g1 == 0) g1 = 1;
  if (g2 == 0) g2 = 1;
  return rat((u.num / g1) * (v.num / g2), (u.den / g2) * (v.den / g1));
}
Rat neg(Rat u) { return rat(-u.num, u.den); }
Rat inv(Rat u) {
  if (u.num == 0) throw std::domain_error("powser: zero divide in inv");
  return rat(u.den, u.num);
}

TEST(GoPowserRat, Arithmetic) {
  EXPECT_EQ(add(rat(1, 2), rat(1, 3)), rat(5, 6));
  EXPECT_EQ(mul(rat(2, 3), rat(9, 4)), rat(3, 2));
  EXPECT_EQ(rat(4, -6), Rat({-2, 3}));
  EXPECT_EQ(inv(rat(-2, 3)), rat(-3, 2));
  EXPECT_TRUE(end(kFinis));
  EXPECT_FALSE(end(kZero));
}

// --- the stream machinery ---------------------------------------------------------------------

struct Dch {
  cf::Chan<int> req;
  cf::Chan<Rat> dat;
};
using PS = Dch;
using PS2 = std::shared_ptr<std::array<Dch, 2>>;  // shared: dosplit swaps the pair in place

class PowerSeries {
 public:
  PowerSeries() : ones_(rep(kOne)), twos_(rep(itor(2))) {}
  PowerSeries(const PowerSeries&) = delete;
  PowerSeries& operator=(const PowerSeries&) = delete;

  // Closes every channel ever made (and every one made from now on), then waits for every green
  // thread of the network to return.
  void shutdown() {
    std::vector<std::function<void()>> closers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      shut_ = true;
      closers.swap(closers_);
    }
    for (auto& c : closers) c();
    running_.wait();
  }

  PS ones() const { return ones_; }
  PS twos() const { return twos_; }

  Rat get(PS in) {
    in.req.send(seqno_.fetch_add(1) + 1);
    return recv_or_stop(in.dat);
  }

  PS add_ps(PS u, PS v) {
    PS z = mkdch();
    spawn([this, u, v, z]() mutable {
      for (;;) {
        recv_or_stop(z.req);
        auto uv = get2(u, v);
        switch (int(end(uv[0])) + 2 * int(end(uv[1]))) {
          case 0:
            z.dat.send(add(uv[0], uv[1]));
            break;
          case 1:
            z.dat.send(uv[1]);
            copy(v, z);
            break;
          case 2:
            z.dat.send(uv[0]);
            copy(u, z);
            break;
          default:
            z.dat.send(kFinis);
            break;
        }
      }
    });
    return z;
  }

  PS cmul(Rat c, PS u) {
    PS z = mkdch();
    spawn([this, c, u, z]() mutable {
      bool done = false;
      while (!done) {
        recv_or_stop(z.req);
        Rat x = get(u);
        if (end(x)) {
          done = true;
        } else {
          z.dat.send(mul(c, x));
        }
      }
      z.dat.send(kFinis);
    });
    return z;
  }

  PS sub(PS u, PS v) { return add_ps(u, cmul(neg(kOne), v)); }

  PS monmul(PS u, int n) {
    PS z = mkdch();
    spawn([this, u, z, n]() mutable {
      for (; n > 0; --n) put(kZero, z);
      copy(u, z);
    });
    return z;
  }
  PS xmul(PS u) { return monmul(u, 1); }

  PS shift(Rat c, PS u) {
    PS z = mkdch();
    spawn([this, c, u, z]() mutable {
      put(c, z);
      copy(u, z);
    });
    return z;
  }

  PS mul_ps(PS u, PS v) {
    PS z = mkdch();
    spawn([this, u, v, z]() mutable {
      recv_or_stop(z.req);
      auto uv = get2(u, v);
      if (end(uv[0]) || end(uv[1])) {
        z.dat.send(kFinis);
        return;
      }
      z.dat.send(mul(uv[0], uv[1]));
      PS2 uu = split_ps(u);
      PS2 vv = split_ps(v);
      PS w = add_ps(cmul(uv[0], (*vv)[0]), cmul(uv[1], (*uu)[0]));
      recv_or_stop(z.req);
      z.dat.send(get(w));
      copy(add_ps(w, mul_ps((*uu)[1], (*vv)[1])), z);
    });
    return z;
  }

  PS diff(PS u) {
    PS z = mkdch();
    spawn([this, u, z]() mutable {
      recv_or_stop(z.req);
      Rat x = get(u);
      if (!end(x)) {
        bool done = false;
        for (int64_t i = 1; !done; ++i) {
          x = get(u);
          if (end(x)) {
            done = true;
          } else {
            z.dat.send(mul(itor(i), x));
            recv_or_stop(z.req);
          }
        }
      }
      z.dat.send(kFinis);
    });
    return z;
  }

  PS integ(Rat c, PS u) {
    PS z = mkdch();
    spawn([this, c, u, z]() mutable {
      put(c, z);
      bool done = false;
      for (int64_t i = 1; !done; ++i) {
        recv_or_stop(z.req);
        Rat x = get(u);
        if (end(x)) done = true;
        z.dat.send(mul(rat(1, i), x));
      }
      z.dat.send(kFinis);
    });
    return z;
  }

  PS recip(PS u) {
    PS z = mkdch();
    spawn([this, u, z]() mutable {
      PS2 zz = mkdch2();
      recv_or_stop(z.req);
      Rat r = inv(get(u));
      z.dat.send(r);
      split(mul_ps(cmul(neg(r), u), shift(r, (*zz)[0])), zz);
      copy((*zz)[1], z);
    });
    return z;
  }

  PS exp(PS u) {
    PS2 zz = mkdch2();
    split(integ(kOne, mul_ps((*zz)[0], diff(u))), zz);
    return (*zz)[1];
  }

  // u(v(x)); v's constant term must be zero.
  PS subst(PS u, PS v) {
    PS z = mkdch();
    spawn([this, u, v, z]() mutable {
      PS2 vv = split_ps(v);
      recv_or_stop(z.req);
      Rat x = get(u);
      z.dat.send(x);
      if (!end(x)) {
        if (end(get((*vv)[0]))) {
          put(kFinis, z);
        } else {
          copy(mul_ps((*vv)[0], subst(u, (*vv)[1])), z);
        }
      }
    });
    return z;
  }

  // u(c0 x^n).
  PS mon_subst(PS u, Rat c0, int n) {
    PS z = mkdch();
    spawn([this, u, c0, n, z]() mutable {
      Rat c = kOne;
      for (;;) {
        recv_or_stop(z.req);
        Rat x = get(u);
        z.dat.send(mul(x, c));
        c = mul(c, c0);
        if (end(x)) {
          z.dat.send(kFinis);
          break;
        }
        for (int i = 1; i < n; ++i) {
          recv_or_stop(z.req);
          z.dat.send(kZero);
        }
      }
    });
    return z;
  }

  // The series without its constant term, divided by x.
  PS tail(PS u) {
    PS z = mkdch();
    spawn([this, u, z]() mutable {
      (void)get(u);
      copy(u, z);
    });
    return z;
  }

  // Reversion: the z with u(z(x)) = x, for u = x v(x) with v(0) != 0. z = x / v(z) is defined in
  // terms of itself: the stream z is split, one copy feeds back into the substitution.
  PS revert(PS u) {
    PS2 zz = mkdch2();
    split(xmul(recip(subst(tail(u), (*zz)[0]))), zz);
    return (*zz)[1];
  }

 private:
  // Starts an operator; a closed channel (shutdown) ends it.
  template <class F>
  void spawn(F fn) {
    running_.add(1);
    cf::go("powser", [this, fn]() mutable {
      try {
        fn();
      } catch (const cf::ChannelClosedError&) {
      }
      running_.done();
    });
  }

  template <class T>
  cf::Chan<T> make() {
    auto c = cf::make_chan<T>();
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) {
      close_quietly(c);
    } else {
      closers_.push_back([c] { close_quietly(c); });
    }
    return c;
  }

  template <class T>
  static T recv_or_stop(cf::Chan<T>& ch) {
    auto v = ch.recv();
    if (!v) throw cf::ChannelClosedError("powser: shut down");
    return *v;
  }

  PS mkdch() { return Dch{make<int>(), make<Rat>()}; }
  PS2 mkdch2() {
    return std::make_shared<std::array<Dch, 2>>(std::array<Dch, 2>{mkdch(), mkdch()});
  }

  void put(Rat dat, PS out) {
    recv_or_stop(out.req);
    out.dat.send(dat);
  }

  // Requests one coefficient of each of two series at once, taking them in whichever order they
  // become ready.
  std::array<Rat, 2> get2(PS in0, PS in1) {
    std::array<cf::Chan<int>, 2> req = {in0.req, in1.req};
    std::array<cf::Chan<Rat>, 2> dat{};
    std::array<PS, 2> in = {in0, in1};
    std::array<Rat, 2> out{};
    for (int n = 4; n > 0; --n) {
      int seq = seqno_.fetch_add(1) + 1;
      auto got = [&](int k) {
        return [&, k](std::optional<Rat> v) {
          if (!v) throw cf::ChannelClosedError("powser: shut down");
          out[k] = *v;
          dat[k] = cf::Chan<Rat>{};
        };
      };
      auto asked = [&](int k) {
        return [&, k] {
          dat[k] = in[k].dat;
          req[k] = cf::Chan<int>{};
        };
      };
      cf::select(cf::on_send(req[0], seq, asked(0)), cf::on_send(req[1], seq, asked(1)),
                 cf::on_recv(dat[0], got(0)), cf::on_recv(dat[1], got(1)));
    }
    return out;
  }

  void copy(PS in, PS out) {
    for (;;) {
      recv_or_stop(out.req);
      out.dat.send(get(in));
    }
  }

  PS rep(Rat c) {
    PS z = mkdch();
    spawn([this, c, z]() mutable {
      for (;;) put(c, z);
    });
    return z;
  }

  PS2 split_ps(PS u) {
    PS2 uu = mkdch2();
    spawn([this, u, uu] { split(u, uu); });
    return uu;
  }

  // Serves both outputs of `out` from the one input `in`: each coefficient is requested once and
  // handed to both; a helper is spawned per coefficient so the two readers may run apart.
  void split(PS in, PS2 out) {
    auto release = make<int>();
    spawn([this, in, out, release] { dosplit(in, out, release); });
    release.send(0);
  }

  void dosplit(PS in, PS2 out, cf::Chan<int> wait) {
    bool both = false;  // do not service both channels
    auto a = (*out)[0].req;
    auto b = (*out)[1].req;
    cf::select(cf::on_recv(a,
                           [](std::optional<int> v) {
                             if (!v) throw cf::ChannelClosedError("powser: shut down");
                           }),
               cf::on_recv(wait, [&](std::optional<int> v) {
                 if (!v) throw cf::ChannelClosedError("powser: shut down");
                 both = true;
                 cf::select(cf::on_recv(a,
                                        [](std::optional<int> x) {
                                          if (!x) throw cf::ChannelClosedError("powser: shut down");
                                        }),
                            cf::on_recv(b, [&](std::optional<int> x) {
                              if (!x) throw cf::ChannelClosedError("powser: shut down");
                              std::swap((*out)[0], (*out)[1]);
                            }));
               }));
    in.req.send(seqno_.fetch_add(1) + 1);
    // Read the pair before the next helper exists: it swaps it only after our release below.
    Dch first = (*out)[0];
    Dch second = (*out)[1];
    auto release = make<int>();
    spawn([this, in, out, release] { dosplit(in, out, release); });
    Rat dat = recv_or_stop(in.dat);
    first.dat.send(dat);
    if (!both) recv_or_stop(wait);
    recv_or_stop(second.req);
    second.dat.send(dat);
    release.send(0);
  }

  std::mutex mu_;
  bool shut_ = false;
  std::vector<std::function<void()>> closers_;
  std::atomic<int> seqno_{0};
  cf::WaitGroup running_;
  PS ones_;
  PS twos_;
};

class GoPowser : public cf::testing::WorkersTest {};

constexpr int kN = 10;

// Checks the next `count` coefficients of `u` all equal `c`.
void check(PowerSeries& ps, PS u, Rat c, int count, const char* what) {
  for (int i = 0; i < count; ++i) {
    Rat r = ps.get(u);
    EXPECT_EQ(r, c) << what << ": coefficient " << i;
  }
}

// Checks the next kN coefficients of `u` against `a`.
void checka(PowerSeries& ps, PS u, const std::vector<Rat>& a, const char* what) {
  for (int i = 0; i < kN; ++i) {
    Rat r = ps.get(u);
    EXPECT_EQ(r, a[i]) << what << ": coefficient " << i;
  }
}

void check_tables(PowerSeries& ps);

TEST_P(GoPowser, CoefficientTables) {
  cf::testing::run_go_main([] {
    PowerSeries ps;
    try {
      check_tables(ps);
    } catch (...) {
      ps.shutdown();
      throw;
    }
    ps.shutdown();
  });
}

void check_tables(PowerSeries& ps) {
  check(ps, ps.ones(), kOne, 5, "Ones");
  // Go checks 0 coefficients of these two (it only builds them); all 10 are checked here.
  check(ps, ps.add_ps(ps.ones(), ps.ones()), itor(2), kN, "Add Ones Ones");
  check(ps, ps.add_ps(ps.ones(), ps.twos()), itor(3), kN, "Add Ones Twos");

  std::vector<Rat> a(kN);
  PS d = ps.diff(ps.ones());
  for (int i = 0; i < kN; ++i) a[i] = itor(i + 1);
  checka(ps, d, a, "Diff");  // 1 2 3 4 5 ...

  PS in = ps.integ(kZero, ps.ones());
  a[0] = kZero;  // integration constant
  for (int i = 1; i < kN; ++i) a[i] = rat(1, i);
  checka(ps, in, a, "Integ");  // 0 1 1/2 1/3 1/4 ...

  check(ps, ps.cmul(neg(kOne), ps.twos()), itor(-2), 10, "CMul");  // -2 -2 -2 ...
  // Go checks 0 coefficients here too; all 10 are checked.
  check(ps, ps.sub(ps.ones(), ps.twos()), itor(-1), kN, "Sub Ones Twos");  // -1 -1 -1 ...

  PS m = ps.mul_ps(ps.ones(), ps.ones());
  for (int i = 0; i < kN; ++i) a[i] = itor(i + 1);
  checka(ps, m, a, "Mul");  // 1 2 3 4 5 ...

  PS e = ps.exp(ps.ones());
  a = {itor(1),      itor(1),        rat(3, 2),        rat(13, 6),       rat(73, 24),
       rat(167, 40), rat(4051, 720), rat(37633, 5040), rat(43817, 4480), rat(4596553, 362880)};
  checka(ps, e, a, "Exp");  // 1 1 3/2 13/6 73/24 ...

  PS at = ps.integ(kZero, ps.mon_subst(ps.ones(), neg(kOne), 2));
  for (int c = 1, i = 0; i < kN; ++i) {
    if (i % 2 == 0) {
      a[i] = kZero;
    } else {
      a[i] = rat(c, i);
      c *= -1;
    }
  }
  checka(ps, at, a, "ATan");  // 0 1 0 -1/3 0 1/5 ...

  // Go's commented-out Tan: the reversion of ATan.
  PS t = ps.revert(ps.integ(kZero, ps.mon_subst(ps.ones(), neg(kOne), 2)));
  a = {kZero,      itor(1), kZero,        rat(1, 3), kZero,
       rat(2, 15), kZero,   rat(17, 315), kZero,     rat(62, 2835)};
  checka(ps, t, a, "Tan");  // 0 1 0 1/3 0 2/15 ...
}

CHANFLOW_INSTANTIATE_WORKERS(GoPowser);

}  // namespace
