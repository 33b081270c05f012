// trace.cc — the trace: binary events in per-thread buffers, a writer thread that renders them as
// Chrome trace JSON into the file as they come (or spools them for stop() once it falls behind),
// and the runtime's own events (run slices with park reasons, wake flows, creation, channel and
// run-queue counters).
#include "chanflow/runtime/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "chanflow/core/cache_line.h"
#include "chanflow/core/check.h"
#include "chanflow/core/error.h"
#include "chanflow/core/locks.h"
#include "chanflow/core/spinlock.h"
#include "chanflow/runtime/detail/chan_base.h"
#include "chanflow/runtime/mutex.h"
#include "chanflow/runtime/wait_group.h"
#include "fork.h"
#include "scheduler_impl.h"
#include "task.h"
#include "trace_impl.h"

namespace chanflow::detail {

// Read on every scheduling step, written only by start() and stop(); cache-line aligned so that
// it does not share the first line of its neighbours in this file.
alignas(64) std::atomic<bool> g_trace_enabled{false};

namespace {

// The TSC scale for record_ns(), published by the trace clock's calibration (trace::now_ns);
// zero until then, or where the trace clock is not the TSC.
struct TscScale {
  std::atomic<uint64_t> mult{0};  // ns per tick, times 2^32
  std::atomic<uint64_t> base_tick{0};
  std::atomic<int64_t> base_ns{0};
};
alignas(64) TscScale g_tsc;

// A reading of the trace clock (trace::now_ns, which calibrates it first): inline on the
// recording paths, which run only after start() calibrated it. The steady clock until then, or
// where the trace clock is not the TSC.
inline int64_t record_ns() noexcept {
#if defined(__x86_64__)
  // Acquire: a non-zero scale comes with its base (a plain load on x86-64).
  const uint64_t mult = g_tsc.mult.load(std::memory_order_acquire);
  if (mult != 0) {
    __extension__ typedef __int128 Int128;
    // Signed: a reading taken on another CPU just before calibration may precede base_tick.
    const auto d = static_cast<Int128>(
        static_cast<int64_t>(__rdtsc() - g_tsc.base_tick.load(std::memory_order_relaxed)));
    return g_tsc.base_ns.load(std::memory_order_relaxed) + static_cast<int64_t>((d * mult) >> 32);
  }
#endif
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---- records ---------------------------------------------------------------------------------

// What a record renders as. The generic kinds carry their strings (cat, name, args); the
// runtime's kinds carry numbers and the green thread's name, rendered by the writer.
enum class Kind : uint8_t {
  kSlice,      // s: cat, name, args; n0 dur
  kInstant,    // s: cat, name, args; sub scope char
  kCounter,    // s: cat, name, args
  kFlowBegin,  // s: cat, name, args; n0 id
  kFlowEnd,    // s: cat, name; n0 id
  kRun,        // a RunRec, not a Head (below)
  kGo,         // s: gname; n1 g, n2 parent
  kChan,       // n0 len, n1 cap, n2 the channel's trace id
  kRunQueue,   // n0 runnable
  kShortRun,   // a ShortRun, not a Head (below)
};
constexpr Kind kLastKind = Kind::kShortRun;

// What a parked green thread waits on, and what woke one (the file's "kind" and "by" strings).
enum class WaitKind : uint8_t {
  kChanSend,
  kChanRecv,
  kSelect,
  kMutex,
  kWaitGroup,
  kTimer,
  kContext,
  kOther
};
constexpr std::string_view kWaitKindNames[] = {"chan.send", "chan.recv", "select",  "mutex",
                                               "waitgroup", "timer",     "context", "other"};
enum class By : uint8_t {
  kChanSend,
  kChanRecv,
  kChanClose,
  kTimer,
  kUnlock,
  kWaitGroup,
  kCancel,
  kSpawn,
  kOther
};
constexpr std::string_view kByNames[] = {"chan.send", "chan.recv", "chan.close", "timer", "unlock",
                                         "waitgroup", "cancel",    "spawn",      "other"};
constexpr std::string_view kRunEndNames[] = {"park", "yield", "exit", "blocked"};

struct Head {
  uint32_t size;  // of the whole record, a multiple of 8
  Kind kind;
  uint8_t sub;
  uint8_t sub2;
  uint8_t nstr;
  uint32_t pid;
  uint32_t tid;
  int64_t ts;
  int64_t n[3];
};
static_assert(sizeof(Head) % 8 == 0);

// A run slice: a record of its own (not a Head), since a traced context switch writes one. It
// shares a Head's first fields (size, kind), which is all render() reads before it knows which
// it has. Its tracks are the runtime process's (a worker's lane, the waker's track). The green
// thread's name is registered once per recording (gthread_names), not copied into each slice.
// With a wake (has_wake) the wake flow's fields follow as a RunWake; then a select's cases as
// CaseRecs. This wide form is for slices whose numbers do not fit a ShortRun (below): an address
// as what it waits on, a slice over 4 s.
struct RunRec {
  uint32_t size;
  Kind kind;  // kRun
  uint8_t end;
  uint8_t wait;  // WaitKind, when end is kPark
  uint8_t ncases;
  uint32_t tid;       // the worker's lane
  uint32_t wake_tid;  // the waker's track, with a wake
  int64_t ts;
  int64_t dur;
  uint64_t g;
  uint64_t wait_obj;
  ObjKind wait_obj_kind;
  uint8_t wake_by;  // By
  ObjKind wake_obj_kind;
  uint8_t has_wake;  // a RunWake follows
  uint8_t pad[4];
};
static_assert(sizeof(RunRec) % 8 == 0 && offsetof(RunRec, size) == offsetof(Head, size) &&
              offsetof(RunRec, kind) == offsetof(Head, kind));
struct RunWake {
  int64_t ns;
  uint64_t obj;
  uint64_t by_g;
};
static_assert(sizeof(RunWake) % 8 == 0);
// A run slice whose numbers fit in 32 bits (16 for tracks), as nearly all do: the common form,
// 32 bytes and 48 with its wake, against RunRec's 56 and 80 (the writer copies every byte).
// Same meaning as RunRec's fields; its wake is a ShortWake, then its cases as CaseRecs.
struct ShortRun {
  uint32_t size;
  Kind kind;  // kShortRun
  uint8_t end;
  uint8_t wait;
  uint8_t ncases;
  int64_t ts;
  uint32_t dur;
  uint32_t g;
  uint32_t wait_obj;
  uint16_t tid;
  ObjKind wait_obj_kind;
  uint8_t has_wake;
};
static_assert(sizeof(ShortRun) == 32 && offsetof(ShortRun, size) == offsetof(Head, size) &&
              offsetof(ShortRun, kind) == offsetof(Head, kind));
struct ShortWake {
  uint32_t lead;  // the slice's ts minus the wake's
  uint32_t obj;
  uint32_t by_g;
  uint16_t tid;
  uint8_t by;
  ObjKind obj_kind;
};
static_assert(sizeof(ShortWake) == 16);
struct CaseRec {
  uint64_t obj;
  WaitKind kind;
  ObjKind obj_kind;
  uint8_t pad[6];
};
static_assert(sizeof(CaseRec) % 8 == 0);

// At most this many cases of a select are recorded (the rest are left out).
constexpr std::size_t kMaxCases = 64;
// At most this many strings in a record, each at most kMaxStringBytes (longer ones are cut).
constexpr std::size_t kMaxStrings = 3;
constexpr std::size_t kMaxStringBytes = 4096;

// A record's strings: kept by pointer until copied into a buffer.
struct Strings {
  struct Piece {
    const char* data;
    std::size_t size;
  };
  Piece s[kMaxStrings];
  std::size_t n = 0;
  void add(std::string_view v) noexcept {
    if (n < kMaxStrings) s[n++] = {v.data(), std::min(v.size(), kMaxStringBytes)};
  }
};

std::size_t record_size(std::size_t body, const Strings& ss) noexcept {
  std::size_t size = sizeof(Head) + body;
  for (std::size_t i = 0; i < ss.n; ++i) size += sizeof(uint16_t) + ss.s[i].size;
  return (size + 7) & ~std::size_t{7};
}

// ---- buffers and the writer -----------------------------------------------------------------

// A thread's buffer of records; full ones queue for the writer.
constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
struct Chunk {
  std::unique_ptr<unsigned char[]> data{new unsigned char[kChunkBytes]};
  std::size_t used = 0;
  std::size_t events = 0;
};

// A thread's buffer of records. Its owner appends without a lock: it is the only writer of the
// chunk, and a record is complete once `published` covers it. The lock is taken by the owner
// only to replace or reset its chunk (once per 64 KiB) and by stop(), which copies the published
// prefix under it: so the chunk it reads is not swapped away meanwhile, and the bytes it reads
// are complete records (the owner writes only past `published`).
struct ThreadBuffer {
  os::SpinLock lock;
  // Written by the owner only, under `lock`; read by the owner without it, by others under it.
  std::unique_ptr<Chunk> chunk;
  uint64_t generation = 0;
  // The complete part of `chunk`: bytes in the low 32 bits, events in the high 32. Stored by the
  // owner with release after each record; loaded with acquire by stop(), which then reads them.
  std::atomic<uint64_t> published{0};
  // Owner-only: events this thread may still keep, reserved against Options::max_events.
  std::size_t budget = 0;
  bool exhausted = false;
  // Events the owner dropped while the writer was behind (g_writer_behind): stored by the owner
  // alone (no read-modify-write on the recording path), added to the dropped count by stop().
  std::atomic<std::size_t> shed{0};
};

// The recording's shared state. The generation is 0 while off: a recorder checks it before each
// record, so once stop() has set it to 0 and collected every buffer, the file is complete (a
// record racing with stop() is in it or not, whole either way; ThreadBuffer).
std::atomic<uint64_t> g_generation{0};
// Set when a full buffer found the writer's queue full (its events are dropped); cleared when the
// writer takes a buffer off the queue. While it is set, recorders drop new events at once
// (counted) rather than fill buffers that would be dropped: a recording the writer cannot keep up
// with costs the traced program less, and loses the same events. Its own line: every record
// reads it, and it changes only when the writer falls behind or catches up.
alignas(kCacheLine) std::atomic<bool> g_writer_behind{false};
uint64_t g_last_generation = 0;  // guarded by g_session_mu (below)
std::atomic<int64_t> g_start_ns{0};
std::atomic<std::size_t> g_max_events{0};
std::atomic<std::size_t> g_reserved{0};
std::atomic<std::size_t> g_dropped{0};
std::atomic<std::size_t> g_written{0};
std::atomic<uint64_t> g_next_flow{1};
std::atomic<long> g_writer_threads{0};
constexpr std::size_t kReserveChunk = 256;

os::Mutex g_buffers_mu;
std::vector<std::shared_ptr<ThreadBuffer>>& buffers() CHANFLOW_REQUIRES(g_buffers_mu) {
  static auto* const kBuffers = new std::vector<std::shared_ptr<ThreadBuffer>>();
  return *kBuffers;
}

// The writer's queue: chunks handed off, bounded by `limit` bytes. Never destroyed (like the
// buffer registry): a writer thread still running at exit may use it until the process ends.
struct TrackName {
  bool is_process;
  uint32_t pid;
  uint32_t tid;
  std::string name;
};

struct Queue {
  os::Mutex mu;
  os::CondVar cv;
  std::deque<std::unique_ptr<Chunk>> chunks CHANFLOW_GUARDED_BY(mu);
  std::vector<std::unique_ptr<Chunk>> free CHANFLOW_GUARDED_BY(mu);
  std::size_t limit CHANFLOW_GUARDED_BY(mu) = 0;
  bool finishing CHANFLOW_GUARDED_BY(mu) = false;
  // Names of tracks registered during the recording, for the writer to write next (g_naming).
  std::vector<TrackName> names CHANFLOW_GUARDED_BY(mu);
  // Whether the writer waits with no deadline (it found nothing for kWriterLinger): only then,
  // or when the queue is half full, does a hand-off notify it. A busy recording hands off a
  // chunk every few tens of microseconds; waking the writer for each (a futex wake, an
  // inter-processor interrupt on a VM) cost a recorder more than filling the chunk did.
  bool writer_idle CHANFLOW_GUARDED_BY(mu) = false;
  // The recording's spool, once the writer has fallen behind (writer_main); rendered and closed
  // by stop().
  std::FILE* spool CHANFLOW_GUARDED_BY(mu) = nullptr;
  // The writer thread's own: reset by start() before the writer starts, read by stop() after it
  // is joined.
  std::size_t spool_bytes = 0;  // the spool's whole frames (spill_chunk)
  bool spool_failed = false;    // a spool write failed: spool no more
  bool write_failed = false;
  bool any_event = false;  // whether an event was written (a comma is due before the next)
  std::string memory;      // the in-memory recording's text
  // Names met while rendering this recording (filled from the registries below on a miss, so a
  // record costs no lock once its names are known). Cleared by start().
  std::unordered_map<uint64_t, std::string> obj_labels;  // id -> JSON string
  std::unordered_map<uint64_t, std::string> gnames;      // g -> JSON string
  // Labels rendered for ids the registries had no name for ("#<id>"), good while
  // g_names_version is unnamed_version (a name registered since may be one of them).
  std::unordered_map<uint64_t, std::string> unnamed_objs;
  std::unordered_map<uint64_t, std::string> unnamed_gs;
  uint64_t unnamed_version = 0;
  // The last label met per slot (id modulo its size), of green threads [1] and channels [0]: a
  // hash lookup costs more than rendering the rest of a slice. It points into the maps above:
  // cleared with them (start(), and the unnamed ones on a new name).
  struct LabelSlot {
    uint64_t id = 0;
    const std::string* label = nullptr;
  };
  static constexpr std::size_t kLabelSlots = 64;
  std::array<std::array<LabelSlot, kLabelSlots>, 2> recent{};
  uint32_t runtime_pid = 0;  // the run records' process
};
Queue& queue() {
  static auto* const kQueue = new Queue();
  return *kQueue;
}
// Chunks kept for reuse, faulted in. A chunk freed and allocated again costs its 16 first-touch
// page faults (about 5 us each here) on the recorder's path, at its next record. So, while
// recording, a chunk the writer is done with is kept up to the queue's bound (no more can wait
// at once), not freed; and start() faults in kept_chunks(q) of them ahead, which stop() keeps
// for the next recording. Measured: a traced ping-pong has up to about 30 chunks in flight (the
// writer lingers 2 ms, kWriterLinger, between drains), so with 8 kept a recorder paid ~400 page
// faults in each 40 ms run; with 32, none.
constexpr std::size_t kKeptChunks = 32;  // 2 MiB
std::size_t kept_chunks(const Queue& q) CHANFLOW_REQUIRES(q.mu) {
  return std::min(kKeptChunks, std::max<std::size_t>(1, q.limit / kChunkBytes));
}
std::size_t max_free_chunks(const Queue& q) CHANFLOW_REQUIRES(q.mu) {
  return std::max(kept_chunks(q), q.limit / kChunkBytes);
}
// The backlog at which the writer gives up rendering as it goes and spools (writer_main): 4
// chunks (256 KiB) still queued, or half the queue's bound when that is smaller. A writer that
// keeps up finds at most about one queued (it drains every kWriterLinger); a recording that
// outruns it finds a dozen by then. It used to wait for half the bound (32 chunks by default),
// rendering on a whole core meanwhile: measured on a traced ping-pong, spooling from the start
// made it 1.84x its untraced time at 1 worker (1.93x so) and 1.63x at 2 (1.82x), and 1.91x
// against 2.16x at 1 worker beside a CPU hog (docs/benchmarks_history.md).
constexpr std::size_t kSpoolBacklog = 4;
std::size_t spool_backlog(const Queue& q) CHANFLOW_REQUIRES(q.mu) {
  return std::max<std::size_t>(1, std::min(kSpoolBacklog, q.limit / kChunkBytes / 2));
}
// How long the writer waits for a chunk before it asks to be notified of the next one.
constexpr auto kWriterLinger = std::chrono::milliseconds(2);

// start()/stop() and the output they own.
os::Mutex g_session_mu;
std::FILE* g_file CHANFLOW_GUARDED_BY(g_session_mu) = nullptr;
std::string* g_path CHANFLOW_GUARDED_BY(g_session_mu) = new std::string();
std::thread* g_writer CHANFLOW_GUARDED_BY(g_session_mu) = nullptr;
std::string* g_last_doc CHANFLOW_GUARDED_BY(g_session_mu) = new std::string();

// A thread's buffer, registered on its first event; at the thread's exit its events go to the
// writer and the buffer leaves the registry (a process that starts many threads keeps none).
struct LocalBuffer {
  std::shared_ptr<ThreadBuffer> buf;
  ~LocalBuffer();
};
thread_local LocalBuffer t_buffer;
// t_buffer.buf.get(), read on every event: a trivially destructible thread_local is a plain TLS
// load, where one with a destructor (t_buffer) goes through its initialisation wrapper.
thread_local ThreadBuffer* t_buffer_fast = nullptr;

// A chunk for a recorder: a free one or a new one.
std::unique_ptr<Chunk> take_chunk() {
  Queue& q = queue();
  {
    os::LockGuard g(q.mu);
    if (!q.free.empty()) {
      std::unique_ptr<Chunk> c = std::move(q.free.back());
      q.free.pop_back();
      return c;
    }
  }
  return std::make_unique<Chunk>();
}

// Hands a chunk to the writer; when the queue is full (and !force) its events are dropped and
// it is returned for reuse.
std::unique_ptr<Chunk> hand_off(std::unique_ptr<Chunk> c, bool force) {
  Queue& q = queue();
  os::LockGuard g(q.mu);
  if (!force && q.chunks.size() * kChunkBytes + kChunkBytes > q.limit) {
    g_writer_behind.store(true, std::memory_order_relaxed);
    g_dropped.fetch_add(c->events, std::memory_order_relaxed);
    c->used = 0;
    c->events = 0;
    return c;
  }
  q.chunks.push_back(std::move(c));
  if (q.writer_idle || force || 2 * q.chunks.size() * kChunkBytes >= q.limit) q.cv.notify_one();
  if (!q.free.empty()) {
    std::unique_ptr<Chunk> f = std::move(q.free.back());
    q.free.pop_back();
    return f;
  }
  return nullptr;
}

// local_buffer()'s first call on a thread.
__attribute__((noinline)) ThreadBuffer& register_local_buffer() {
  if (!t_buffer.buf) {
    t_buffer.buf = std::make_shared<ThreadBuffer>();
    os::LockGuard g(g_buffers_mu);
    buffers().push_back(t_buffer.buf);
  }
  t_buffer_fast = t_buffer.buf.get();
  return *t_buffer.buf;
}

inline ThreadBuffer& local_buffer() {
  if (ThreadBuffer* b = t_buffer_fast) return *b;
  return register_local_buffer();
}

LocalBuffer::~LocalBuffer() {
  t_buffer_fast = nullptr;
  if (!buf) return;
  {
    os::LockGuard bl(buf->lock);
    const uint64_t gen = g_generation.load(std::memory_order_acquire);
    if (gen != 0 && buf->generation == gen) {
      g_dropped.fetch_add(buf->shed.exchange(0, std::memory_order_relaxed),
                          std::memory_order_relaxed);
      if (buf->chunk && buf->chunk->used > 0) (void)hand_off(std::move(buf->chunk), /*force=*/true);
    }
    buf->chunk.reset();
  }
  os::LockGuard g(g_buffers_mu);
  auto& all = buffers();
  all.erase(std::remove(all.begin(), all.end(), buf), all.end());
}

// Up to kReserveChunk events of the bound for one thread; 0 when it is used up.
std::size_t reserve_events() noexcept {
  const std::size_t max = g_max_events.load(std::memory_order_relaxed);
  if (max == 0) return kReserveChunk;  // unbounded
  const std::size_t before = g_reserved.fetch_add(kReserveChunk, std::memory_order_relaxed);
  return before >= max ? 0 : std::min(kReserveChunk, max - before);
}

// Appends one record of `size` bytes (a multiple of 8, at least a ShortRun's 32) that renders as
// `cost` events to the calling thread's buffer, or counts it as dropped. fill(p) writes it at p, in
// place: a record is built where it is kept, never copied from the stack (its fields are
// written in pieces, and a copy would reload them whole).
template <class Fill>
void emit_record(std::size_t size, std::size_t cost, Fill&& fill) noexcept {
  try {
    ThreadBuffer& b = local_buffer();
    const uint64_t gen = g_generation.load(std::memory_order_acquire);
    if (gen == 0) return;       // stopped
    if (b.generation != gen) {  // a new recording: the last one's leftovers are not its events
      os::LockGuard g(b.lock);
      if (b.chunk) {
        b.chunk->used = 0;
        b.chunk->events = 0;
      }
      b.published.store(0, std::memory_order_relaxed);
      b.shed.store(0, std::memory_order_relaxed);
      b.generation = gen;
      b.budget = 0;
      b.exhausted = false;
    }
    if (g_writer_behind.load(std::memory_order_relaxed)) {
      b.shed.store(b.shed.load(std::memory_order_relaxed) + cost, std::memory_order_relaxed);
      return;
    }
    while (b.budget < cost && !b.exhausted) {
      const std::size_t more = reserve_events();
      b.exhausted = more == 0;
      b.budget += more;
    }
    if (b.budget < cost || size > kChunkBytes) {  // over the bound, or strings too long to keep
      g_dropped.fetch_add(cost, std::memory_order_relaxed);
      return;
    }
    if (!b.chunk || b.chunk->used + size > kChunkBytes) {
      os::LockGuard g(b.lock);
      if (b.chunk) b.chunk = hand_off(std::move(b.chunk), false);
      if (!b.chunk) b.chunk = take_chunk();
      b.published.store(0, std::memory_order_relaxed);
    }
    b.budget -= cost;
    Chunk& c = *b.chunk;
    fill(c.data.get() + c.used);
    c.used += size;
    c.events += cost;
    b.published.store(static_cast<uint64_t>(c.used) | static_cast<uint64_t>(c.events) << 32,
                      std::memory_order_release);
  } catch (...) {
    // Out of memory while tracing: the event is lost rather than the program disturbed.
    g_dropped.fetch_add(cost, std::memory_order_relaxed);
  }
}

// Writes ss at q (each as a 16-bit length and its bytes).
void put_strings(unsigned char* q, const Strings& ss) noexcept {
  for (std::size_t i = 0; i < ss.n; ++i) {
    const auto len = static_cast<uint16_t>(ss.s[i].size);
    std::memcpy(q, &len, sizeof(len));
    if (len != 0) std::memcpy(q + sizeof(len), ss.s[i].data, len);
    q += sizeof(len) + len;
  }
}

// A record of a Head and strings.
void emit(const Head& head, const Strings& ss) noexcept {
  const std::size_t size = record_size(0, ss);
  emit_record(size, 1, [&](unsigned char* p) {
    auto* h = new (p) Head(head);
    h->size = static_cast<uint32_t>(size);
    h->nstr = static_cast<uint8_t>(ss.n);
    put_strings(p + sizeof(Head), ss);
  });
}

// ---- object names ------------------------------------------------------------------------
//
// Records carry a TraceLabel's id (a channel's, a named mutex's or wait group's); the names of
// named ones are registered here on their first use in a recording (TraceLabel::trace_obj) and
// rendered by the writer. Registration happens before the record that uses the id is appended,
// and reaches the writer through the hand-off's lock, so the writer finds every name it needs.
// Cleared by start(): the table holds the named objects of one recording.
os::Mutex g_names_mu;
// Bumped (under g_names_mu) by every registration: the writer's cache of labels it found no name
// for is good while this has not changed.
std::atomic<uint64_t> g_names_version{0};
std::unordered_map<uint64_t, std::string>& label_names() CHANFLOW_REQUIRES(g_names_mu) {
  static auto* const kNames = new std::unordered_map<uint64_t, std::string>();
  return *kNames;
}
// The same for green threads' names: registered by the first run slice of a named green thread
// in a recording (trace_run_end), by g. Unnamed ones render as "#<g>".
std::unordered_map<uint64_t, std::string>& gthread_names() CHANFLOW_REQUIRES(g_names_mu) {
  static auto* const kNames = new std::unordered_map<uint64_t, std::string>();
  return *kNames;
}

// ---- rendering ---------------------------------------------------------------------------------
//
// The writer renders with std::to_chars and a direct escape, not snprintf and a JSON library: it
// must keep up with recorders producing millions of events a second (docs/runtime.md, "Tracing").

// Appends a string literal: its length is known here (std::string's operator+= of a char pointer
// measures it at run time, for every piece of every event).
template <std::size_t N>
void put(std::string& out, const char (&s)[N]) {
  out.append(s, N - 1);
}

void append_string(std::string& out, std::string_view s) {
  bool plain = true;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') {
      plain = false;
      break;
    }
  }
  if (plain) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  // nlohmann's escaping; bytes that are not UTF-8 become U+FFFD instead of an error.
  out += nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <class... A>
void append_format(std::string& out, const char* format, A... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof(buf), format, args...);
  out.append(buf, static_cast<std::size_t>(std::clamp<int>(n, 0, sizeof(buf) - 1)));
}

// a - b and a + b, wrapping: the renderer's arithmetic on recorded times, which a spool read back
// wrong may hold at any value (real readings are far from the ends of the range).
int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

int64_t rel_ns(int64_t ns) { return wrapping_sub(ns, g_start_ns.load(std::memory_order_relaxed)); }

// Text built in a stack buffer and appended to `out` a piece at a time, not a field at a time:
// a std::string append per field (a call, a capacity check, a copy) cost more than formatting
// the field. Every write makes room first (flushing), so no piece can overrun the buffer. end()
// appends the rest: explicitly, since appending may throw (out of memory), which a destructor
// must not.
class Piece {
 public:
  explicit Piece(std::string& out) : out_(out) {}
  Piece(const Piece&) = delete;
  Piece& operator=(const Piece&) = delete;
  ~Piece() { CHANFLOW_DCHECK(p_ == buf_ || std::uncaught_exceptions() > 0); }

  void end() { flush(); }

  template <std::size_t N>
  Piece& lit(const char (&s)[N]) {
    return raw(s, N - 1);
  }
  Piece& raw(const char* s, std::size_t n) {
    if (n > kRoom) {
      flush();
      out_.append(s, n);
      return *this;
    }
    room(n);
    std::memcpy(p_, s, n);
    p_ += n;
    return *this;
  }
  Piece& str(std::string_view s) { return raw(s.data(), s.size()); }
  Piece& ch(char c) {
    room(1);
    *p_++ = c;
    return *this;
  }
  Piece& num(int64_t v) {
    room(kIntChars);
    p_ = std::to_chars(p_, p_ + kIntChars, v).ptr;
    return *this;
  }
  // Nanoseconds as microseconds with three decimals ("12.345", "-0.007").
  Piece& us(int64_t ns) {
    room(kIntChars + 5);
    if (ns < 0) *p_++ = '-';
    // The magnitude unsigned: -ns overflows for the least int64_t.
    const uint64_t m = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    p_ = std::to_chars(p_, p_ + kIntChars, m / 1000).ptr;
    const auto frac = static_cast<int>(m % 1000);
    p_[0] = '.';
    p_[1] = static_cast<char>('0' + frac / 100);
    p_[2] = static_cast<char>('0' + frac / 10 % 10);
    p_[3] = static_cast<char>('0' + frac % 10);
    p_ += 4;
    return *this;
  }
  // "ph":..,"ts":..,"pid":..,"tid":.. (ts relative to the recording's start).
  Piece& common(std::string_view ph, int64_t ts, uint32_t pid, uint32_t tid) {
    lit("\"ph\":\"").str(ph).lit("\",\"ts\":").us(rel_ns(ts));
    return lit(",\"pid\":").num(pid).lit(",\"tid\":").num(tid);
  }
  // The same, on a run record's track (the runtime process's).
  Piece& run_common(std::string_view ph, int64_t ts, uint32_t tid) {
    return common(ph, ts, queue().runtime_pid, tid);
  }
  // An object's label, as a JSON string: a channel's registered name or "#<id>", an address
  // "#0x...", or a fixed label.
  Piece& obj(ObjKind kind, uint64_t obj);

 private:
  static constexpr std::size_t kRoom = 512;
  static constexpr std::size_t kIntChars = 24;  // an int64_t's digits and sign, with room
  void room(std::size_t n) {
    if (static_cast<std::size_t>(buf_ + kRoom - p_) < n) flush();
  }
  void flush() {
    out_.append(buf_, static_cast<std::size_t>(p_ - buf_));
    p_ = buf_;
  }
  std::string& out_;
  char buf_[kRoom];
  char* p_ = buf_;
};

void append_int(std::string& out, int64_t v) { Piece(out).num(v).end(); }

void append_us(std::string& out, int64_t ns) { Piece(out).us(ns).end(); }

// "ph":"X","ts":..,"pid":..,"tid":..
void append_common(std::string& out, const Head& h, std::string_view ph) {
  Piece(out).common(ph, h.ts, h.pid, h.tid).end();
}

// A track's metadata event: a process's name (pid) or a thread's (pid, tid).
void append_track_name(std::string& out, bool is_process, uint32_t pid, uint32_t tid,
                       std::string_view name) {
  if (is_process) {
    append_format(out, R"({"ph":"M","name":"process_name","pid":%u,"args":{"name":)", pid);
  } else {
    append_format(out, R"({"ph":"M","name":"thread_name","pid":%u,"tid":%u,"args":{"name":)", pid,
                  tid);
  }
  append_string(out, name);
  put(out, "}}");
}

// Forgets the labels the renderer met (for a new recording, or trace_render_bytes).
void reset_labels(Queue& q) {
  q.obj_labels.clear();
  q.gnames.clear();
  q.unnamed_objs.clear();
  q.unnamed_gs.clear();
  q.recent = {};
}

// label_of's lookup past its recent slots (Queue::recent).
const std::string& find_label(Queue& q, uint64_t id, bool is_g) {
  auto& named = is_g ? q.gnames : q.obj_labels;
  if (const auto it = named.find(id); it != named.end()) return it->second;
  auto& unnamed = is_g ? q.unnamed_gs : q.unnamed_objs;
  if (const auto it = unnamed.find(id); it != unnamed.end()) return it->second;
  std::string label;
  {
    os::LockGuard g(g_names_mu);
    const auto& names = is_g ? gthread_names() : label_names();
    if (const auto it = names.find(id); it != names.end()) append_string(label, it->second);
  }
  if (!label.empty()) return named.emplace(id, std::move(label)).first->second;
  label = "\"#" + std::to_string(id) + '"';
  return unnamed.emplace(id, std::move(label)).first->second;
}

// The label of a TraceLabel's id or a green thread's g, as a JSON string: its registered
// name, else "#<id>". Cached per recording: a registered name stays; an unnamed label stays while
// no name was registered since (g_names_version), so a record costs no lock once its labels are
// known.
const std::string& label_of(uint64_t id, bool is_g) {
  Queue& q = queue();
  const uint64_t version = g_names_version.load(std::memory_order_relaxed);
  if (version != q.unnamed_version) {
    q.unnamed_objs.clear();
    q.unnamed_gs.clear();
    q.recent = {};
    q.unnamed_version = version;
  }
  Queue::LabelSlot& slot = q.recent[is_g ? 1 : 0][id % Queue::kLabelSlots];
  if (slot.label != nullptr && slot.id == id) return *slot.label;
  const std::string& label = find_label(q, id, is_g);
  slot = {id, &label};
  return label;
}

Piece& Piece::obj(ObjKind kind, uint64_t obj) {
  switch (kind) {
    case ObjKind::kLabel:
      return str(label_of(obj, /*is_g=*/false));
    case ObjKind::kAddr: {
      char buf[32];
      const int n =
          std::snprintf(buf, sizeof(buf), "\"#0x%llx\"", static_cast<unsigned long long>(obj));
      return raw(buf, static_cast<std::size_t>(std::clamp<int>(n, 0, sizeof(buf) - 1)));
    }
    case ObjKind::kSelect:
      return lit("\"select\"");
    case ObjKind::kSleep:
      return lit("\"sleep\"");
    case ObjKind::kNilChan:
      return lit("\"nil chan\"");
    case ObjKind::kNone:
      break;
  }
  return lit("\"\"");
}

void append_obj(std::string& out, ObjKind kind, uint64_t obj) { Piece(out).obj(kind, obj).end(); }

// A green thread's name as a JSON string: its own, or "#<g>" (recorders leave it empty).
void append_gname(std::string& out, std::string_view name, int64_t g) {
  if (!name.empty()) {
    append_string(out, name);
    return;
  }
  put(out, "\"#");
  append_int(out, g);
  out += '"';
}

// A run record: its slice, and when a wake started it, the wake flow (its start on the waker's
// track at the wake's time, its end at the slice's start). An OS thread's blocking wait (end
// kBlocked) is a "blocked" slice of category "wait" instead, on that thread's track, without a
// green thread; its wake flow ends where the wait does.
void render_run(const RunRec& r, const RunWake* wake, const CaseRec* cases, std::string& out) {
  Piece o(out);
  const bool blocked = static_cast<RunEnd>(r.end) == RunEnd::kBlocked;
  if (blocked) {
    o.lit("{\"cat\":\"wait\",\"name\":\"blocked\",");
  } else {
    o.lit("{\"cat\":\"run\",\"name\":").str(label_of(r.g, /*is_g=*/true)).ch(',');
  }
  o.run_common("X", r.ts, r.tid).lit(",\"dur\":").us(r.dur);
  if (blocked) {
    o.lit(",\"args\":{");
  } else {
    o.lit(",\"args\":{\"g\":").num(static_cast<int64_t>(r.g));
    o.lit(",\"end\":\"").str(kRunEndNames[r.end]).ch('"');
  }
  if (static_cast<RunEnd>(r.end) == RunEnd::kPark || blocked) {
    if (!blocked) o.ch(',');
    o.lit("\"wait\":{\"kind\":\"").str(kWaitKindNames[r.wait]).lit("\",\"obj\":");
    o.obj(r.wait_obj_kind, r.wait_obj);
    if (static_cast<WaitKind>(r.wait) == WaitKind::kSelect) {
      o.lit(",\"cases\":[");
      for (std::size_t i = 0; i < r.ncases; ++i) {
        if (i != 0) o.ch(',');
        o.lit("{\"kind\":\"").str(kWaitKindNames[static_cast<uint8_t>(cases[i].kind)]);
        o.lit("\",\"obj\":").obj(cases[i].obj_kind, cases[i].obj).ch('}');
      }
      o.ch(']');
    }
    o.ch('}');
  }
  o.lit("}}");
  if (wake == nullptr) {
    o.end();
    return;
  }
  const auto id = static_cast<int64_t>(g_next_flow.fetch_add(1, std::memory_order_relaxed));
  o.lit(",\n{\"cat\":\"wake\",\"name\":\"wake\",").run_common("s", wake->ns, r.wake_tid);
  o.lit(",\"id\":").num(id).lit(",\"args\":{");
  if (!blocked) o.lit("\"g\":").num(static_cast<int64_t>(r.g)).ch(',');
  o.lit("\"by\":\"").str(kByNames[r.wake_by]);
  o.lit("\",\"by_g\":").num(static_cast<int64_t>(wake->by_g)).lit(",\"obj\":");
  if (static_cast<By>(r.wake_by) == By::kSpawn) {
    o.str(label_of(r.g, /*is_g=*/true));  // its own name
  } else {
    o.obj(r.wake_obj_kind, wake->obj);
  }
  o.lit("}},\n{\"cat\":\"wake\",\"name\":\"wake\",")
      .run_common("f", blocked ? wrapping_add(r.ts, r.dur) : r.ts, r.tid);
  o.lit(",\"bp\":\"e\",\"id\":").num(id).ch('}').end();
}

// One record as a JSON object (a run record with a wake: three).
void render(const unsigned char* p, std::string& out) {
  Kind kind;
  std::memcpy(&kind, p + offsetof(Head, kind), sizeof(kind));
  if (kind == Kind::kRun) {
    // 8-aligned, as every record and part of one is.
    const auto* r = reinterpret_cast<const RunRec*>(p);
    const unsigned char* q = p + sizeof(RunRec);
    const RunWake* wake = nullptr;
    if (r->has_wake != 0) {
      wake = reinterpret_cast<const RunWake*>(q);
      q += sizeof(RunWake);
    }
    render_run(*r, wake, reinterpret_cast<const CaseRec*>(q), out);
    return;
  }
  if (kind == Kind::kShortRun) {
    const auto* sr = reinterpret_cast<const ShortRun*>(p);
    RunRec r{};
    r.end = sr->end;
    r.wait = sr->wait;
    r.ncases = sr->ncases;
    r.tid = sr->tid;
    r.ts = sr->ts;
    r.dur = sr->dur;
    r.g = sr->g;
    r.wait_obj = sr->wait_obj;
    r.wait_obj_kind = sr->wait_obj_kind;
    const unsigned char* q = p + sizeof(ShortRun);
    RunWake wake{};
    if (sr->has_wake != 0) {
      const auto* sw = reinterpret_cast<const ShortWake*>(q);
      r.has_wake = 1;
      r.wake_tid = sw->tid;
      r.wake_by = sw->by;
      r.wake_obj_kind = sw->obj_kind;
      wake = {wrapping_sub(sr->ts, sw->lead), sw->obj, sw->by_g};
      q += sizeof(ShortWake);
    }
    render_run(r, sr->has_wake != 0 ? &wake : nullptr, reinterpret_cast<const CaseRec*>(q), out);
    return;
  }
  Head h;
  std::memcpy(&h, p, sizeof(Head));
  const unsigned char* q = p + sizeof(Head);
  std::string_view s[kMaxStrings];
  for (std::size_t i = 0; i < h.nstr; ++i) {
    uint16_t len;
    std::memcpy(&len, q, sizeof(len));
    s[i] = std::string_view(reinterpret_cast<const char*>(q + sizeof(len)), len);
    q += sizeof(len) + len;
  }
  auto generic = [&](const char* ph) {
    put(out, "{\"cat\":");
    append_string(out, s[0]);
    put(out, ",\"name\":");
    append_string(out, s[1]);
    out += ',';
    append_common(out, h, ph);
  };
  auto args = [&](std::string_view a) {
    if (!a.empty()) {
      put(out, ",\"args\":");
      out += a;
    }
  };
  switch (h.kind) {
    case Kind::kSlice:
      generic("X");
      put(out, ",\"dur\":");
      append_us(out, h.n[0]);
      args(s[2]);
      break;
    case Kind::kInstant:
      generic("i");
      put(out, ",\"s\":\"");
      out += static_cast<char>(h.sub);
      out += '"';
      args(s[2]);
      break;
    case Kind::kCounter:
      generic("C");
      args(s[2]);
      break;
    case Kind::kFlowBegin:
      generic("s");
      put(out, ",\"id\":");
      append_int(out, h.n[0]);
      args(s[2]);
      break;
    case Kind::kFlowEnd:
      generic("f");
      put(out, ",\"bp\":\"e\",\"id\":");
      append_int(out, h.n[0]);
      break;
    case Kind::kRun:  // above
    case Kind::kShortRun:
      return;
    case Kind::kGo:
      put(out, "{\"cat\":\"gthread\",\"name\":\"go\",\"s\":\"t\",");
      append_common(out, h, "i");
      put(out, ",\"args\":{\"g\":");
      append_int(out, h.n[1]);
      put(out, ",\"gname\":");
      append_gname(out, s[0], h.n[1]);
      put(out, ",\"parent\":");
      append_int(out, h.n[2]);
      put(out, "}}");
      return;
    case Kind::kChan: {
      std::string label;
      append_obj(label, ObjKind::kLabel, static_cast<uint64_t>(h.n[2]));
      // label is a JSON string; the counter's name is "chan <label>".
      put(out, "{\"cat\":\"chan\",\"name\":\"chan ");
      out.append(label, 1, std::string::npos);
      out += ',';
      append_common(out, h, "C");
      put(out, ",\"args\":{\"len\":");
      append_int(out, h.n[0]);
      put(out, ",\"cap\":");
      append_int(out, h.n[1]);
      put(out, "}}");
      return;
    }
    case Kind::kRunQueue:
      put(out, "{\"cat\":\"sched\",\"name\":\"run queue\",");
      append_common(out, h, "C");
      put(out, ",\"args\":{\"runnable\":");
      append_int(out, h.n[0]);
      put(out, "}}");
      return;
  }
  out += '}';
}

// The writer: renders every queued chunk and appends it to the file (or Queue::memory).
void write_text(std::FILE* f, std::string& text) {
  Queue& q = queue();
  if (f != nullptr) {
    if (!text.empty() && std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
      q.write_failed = true;
    }
  } else {
    q.memory += text;
  }
  text.clear();
}

// Whether p holds, within avail bytes, a record that emit_record could have written: a known kind,
// a size that covers its parts, names in range for every table render() indexes. A spool read back
// wrong must not make the renderer read past its chunk or a table. Its size, or 0.
std::size_t record_size_if_valid(const unsigned char* p, std::size_t avail) {
  if (avail < 8) return 0;
  uint32_t size;
  Kind kind;
  std::memcpy(&size, p, sizeof(size));
  std::memcpy(&kind, p + offsetof(Head, kind), sizeof(kind));
  if (kind > kLastKind || size % 8 != 0 || size > avail) return 0;
  auto known = [](uint8_t end, uint8_t wait, ObjKind wait_obj, uint8_t by, ObjKind wake_obj) {
    return end <= static_cast<uint8_t>(RunEnd::kBlocked) &&
           wait <= static_cast<uint8_t>(WaitKind::kOther) && wait_obj <= ObjKind::kNilChan &&
           by <= static_cast<uint8_t>(By::kOther) && wake_obj <= ObjKind::kNilChan;
  };
  auto cases_known = [&](std::size_t at, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      CaseRec c;
      std::memcpy(&c, p + at + i * sizeof(CaseRec), sizeof(c));
      if (c.kind > WaitKind::kOther || c.obj_kind > ObjKind::kNilChan) return false;
    }
    return true;
  };
  if (kind == Kind::kRun || kind == Kind::kShortRun) {
    const bool wide = kind == Kind::kRun;
    const std::size_t base = wide ? sizeof(RunRec) : sizeof(ShortRun);
    if (size < base) return 0;
    std::size_t least = base;
    std::size_t ncases = 0;
    if (wide) {
      RunRec r;
      std::memcpy(&r, p, sizeof(r));
      if (!known(r.end, r.wait, r.wait_obj_kind, r.wake_by, r.wake_obj_kind)) return 0;
      least += (r.has_wake != 0 ? sizeof(RunWake) : 0);
      ncases = r.ncases;
    } else {
      ShortRun r;
      std::memcpy(&r, p, sizeof(r));
      ShortWake w{};
      if (r.has_wake != 0) {
        if (size < base + sizeof(ShortWake)) return 0;
        std::memcpy(&w, p + base, sizeof(w));
        least += sizeof(ShortWake);
      }
      if (!known(r.end, r.wait, r.wait_obj_kind, w.by, w.obj_kind)) return 0;
      ncases = r.ncases;
    }
    if (ncases > kMaxCases || size < least + sizeof(CaseRec) * ncases) return 0;
    return cases_known(least, ncases) ? size : 0;
  }
  if (size < sizeof(Head)) return 0;
  Head h;
  std::memcpy(&h, p, sizeof(h));
  if (h.nstr > kMaxStrings) return 0;
  std::size_t at = sizeof(Head);
  for (std::size_t i = 0; i < h.nstr; ++i) {
    uint16_t len;
    if (size - at < sizeof(len)) return 0;
    std::memcpy(&len, p + at, sizeof(len));
    at += sizeof(len);
    if (size - at < len) return 0;
    at += len;
  }
  return size;
}

void render_chunk(const Chunk& c, std::string& text) {
  Queue& q = queue();
  for (std::size_t at = 0; at < c.used;) {
    const unsigned char* p = c.data.get() + at;
    const std::size_t size = record_size_if_valid(p, c.used - at);
    if (size == 0) {
      // Not a record emit_record wrote (a spool read back wrong): nothing past it can be trusted.
      q.write_failed = true;
      return;
    }
    if (q.any_event) {
      put(text, ",\n");
    } else {
      put(text, "\n");
    }
    q.any_event = true;
    render(p, text);
    at += size;
  }
  g_written.fetch_add(c.events, std::memory_order_relaxed);
}

// The spool: a file without a name in the output's directory (O_TMPFILE: it vanishes with the
// process, and takes space where the trace will) for the chunks the writer cannot render as they
// come. Null when the directory cannot have one (the writer then falls behind and drops, counted).
std::FILE* open_spool(const std::string& path) {
  std::string dir = path;
  const auto slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dir.substr(0, slash);
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  std::FILE* f = ::fdopen(fd, "w+b");
  if (f == nullptr) ::close(fd);
  return f;
}

// A chunk was taken off the queue: room for a hand-off again (Queue, g_writer_behind). A load
// first: the line stays shared while nothing changes.
void note_queue_room() noexcept {
  if (g_writer_behind.load(std::memory_order_relaxed)) {
    g_writer_behind.store(false, std::memory_order_relaxed);
  }
}

// Appends c to the spool as its byte and event counts and its records. A failed write (the disk
// full) drops c's events (counted) and ends the spooling: the spool's bytes past spool_bytes are
// not a whole frame, and the writer renders as it comes from then on.
void spill_chunk(Queue& q, std::FILE* spool, const Chunk& c) {
  const uint64_t counts[2] = {c.used, c.events};
  if (!q.spool_failed && std::fwrite(counts, sizeof(counts), 1, spool) == 1 &&
      std::fwrite(c.data.get(), 1, c.used, spool) == c.used) {
    q.spool_bytes += sizeof(counts) + c.used;
    return;
  }
  q.spool_failed = true;
  g_dropped.fetch_add(c.events, std::memory_order_relaxed);
}

// Renders the spool's whole frames (Queue::spool_bytes) into f, after the streamed events
// (stop(), once the writer is done).
void render_spool(Queue& q, std::FILE* spool, std::FILE* f) {
  if (std::fflush(spool) != 0 || std::fseek(spool, 0, SEEK_SET) != 0) {
    q.write_failed = true;
    return;
  }
  Chunk c;
  std::string text;
  uint64_t counts[2];
  for (std::size_t read = 0; read < q.spool_bytes; read += sizeof(counts) + c.used) {
    if (std::fread(counts, sizeof(counts), 1, spool) != 1 || counts[0] > kChunkBytes ||
        std::fread(c.data.get(), 1, counts[0], spool) != counts[0]) {
      q.write_failed = true;  // a read error, or not what spill_chunk wrote
      return;
    }
    c.used = counts[0];
    c.events = counts[1];
    render_chunk(c, text);
    write_text(f, text);
  }
}

// When the writer spools (CHANFLOW_TRACE_SPOOL, read by start()).
enum class SpoolMode : uint8_t {
  kAuto,    // once it falls behind (the default)
  kAlways,  // from the start: the file gets its events at stop()
  kNever,   // never: it falls behind and drops
};

// The writer thread. While it keeps up, it renders each chunk as JSON and appends it to the file
// (or Queue::memory) as it comes: a process killed meanwhile leaves the events up to then. Once
// it finds kSpoolBacklog chunks still queued behind the one it takes (the recorders produce
// events faster than it renders them, which a busy green-thread program does: millions of events
// a second), it spools the rest of the recording's chunks as they are, a copy per chunk, and
// stop() renders them after it. Rendering is what costs (~100 ns an event); a writer that
// rendered through the recording would take a core from the traced program, and still fall
// behind and drop.
void writer_main(std::FILE* f, std::string path, SpoolMode mode) {
  Queue& q = queue();
  std::string text;
  std::FILE* spool = nullptr;  // once spilling (also in Queue::spool, for stop())
  // Not to spool: told so, in memory, or the directory cannot have a spool.
  bool no_spool = mode == SpoolMode::kNever || f == nullptr;
  bool fell_behind = mode == SpoolMode::kAlways && !no_spool;
  for (;;) {
    std::unique_ptr<Chunk> c;
    std::vector<TrackName> names;
    {
      os::LockGuard g(q.mu);
      // Lingers for more chunks before it asks to be notified of the next (Queue::writer_idle).
      const auto linger = std::chrono::steady_clock::now() + kWriterLinger;
      while (q.chunks.empty() && !q.finishing && std::chrono::steady_clock::now() < linger) {
        q.cv.wait_until(q.mu, linger);
      }
      q.writer_idle = true;
      while (q.chunks.empty() && !q.finishing) q.cv.wait(q.mu);
      q.writer_idle = false;
      if (q.chunks.empty()) return;  // stop() writes the names still queued
      c = std::move(q.chunks.front());
      q.chunks.pop_front();
      names.swap(q.names);  // registered before c was handed over: c's events may use them
      fell_behind =
          fell_behind || (spool == nullptr && !no_spool && q.chunks.size() >= spool_backlog(q));
    }
    if (fell_behind) {  // opened outside the lock: recorders hand off under it
      fell_behind = false;
      spool = open_spool(path);
      no_spool = spool == nullptr;
      os::LockGuard g(q.mu);
      q.spool = spool;
    }
    const bool spooling = spool != nullptr && !q.spool_failed;
    for (const TrackName& n : names) {
      text += q.any_event ? ",\n" : "\n";
      q.any_event = true;
      append_track_name(text, n.is_process, n.pid, n.tid, n.name);
    }
    note_queue_room();
    if (spooling) {
      spill_chunk(q, spool, *c);
    } else {
      render_chunk(*c, text);
    }
    if (!text.empty()) {
      write_text(f, text);
      if (f != nullptr) std::fflush(f);  // streamed: a killed process leaves what was written
    }
    c->used = 0;
    c->events = 0;
    os::LockGuard g(q.mu);
    if (q.free.size() < max_free_chunks(q)) q.free.push_back(std::move(c));
  }
}

// ---- tracks ----------------------------------------------------------------------------------

struct ThreadTrack {
  uint32_t pid;
  std::string name;
};
os::Mutex g_tracks_mu;
std::vector<std::string> g_processes CHANFLOW_GUARDED_BY(g_tracks_mu);  // pid = index + 1
std::vector<ThreadTrack> g_threads CHANFLOW_GUARDED_BY(g_tracks_mu);    // tid = index + 1
// Whether a recording names its tracks: set by start() (which writes the names of the tracks known
// then), cleared by stop(). A track registered while it is set has its name queued for the writer
// (Queue::names), which writes it before any buffer handed over later, so before every event
// that uses the track: a file cut short still names every track its events are on.
bool g_naming CHANFLOW_GUARDED_BY(g_tracks_mu) = false;

// Appends the names of every registered track, each event preceded by next().
template <class Next>
void append_track_names(std::string& text, Next next) CHANFLOW_REQUIRES(g_tracks_mu) {
  for (std::size_t i = 0; i < g_processes.size(); ++i) {
    next();
    append_track_name(text, true, static_cast<uint32_t>(i + 1), 0, g_processes[i]);
  }
  for (std::size_t i = 0; i < g_threads.size(); ++i) {
    next();
    append_track_name(text, false, g_threads[i].pid, static_cast<uint32_t>(i + 1),
                      g_threads[i].name);
  }
}

// The runtime's process, and the track of an OS thread that is not a worker.
uint32_t runtime_pid() {
  static const uint32_t kPid = trace::process("runtime");
  return kPid;
}
thread_local trace::Track t_os_track;
thread_local bool t_is_timer = false;

trace::Track os_thread_track() {
  if (t_os_track.tid == 0) {
    static std::atomic<int> next{0};
    t_os_track = trace::thread(
        runtime_pid(), t_is_timer ? std::string("timer") : "thread " + std::to_string(next++));
  }
  return t_os_track;
}

// The track of the calling thread: its worker's lane, or its own.
trace::Track here_track() {
  if (Worker* w = current_worker()) {
    if (w->trace_track.tid == 0) {
      w->trace_track = trace::thread(runtime_pid(), "worker " + std::to_string(w->index));
    }
    return w->trace_track;
  }
  return os_thread_track();
}

WaitKind chan_wait_kind(const ChanBase* c, bool is_send) {
  if (c != nullptr && c->is_context_done()) return WaitKind::kContext;
  return is_send ? WaitKind::kChanSend : WaitKind::kChanRecv;
}

// A mutex or wait group as a recorded object, when it is named: its label's id (name
// registered); kNone when unnamed (recorded by address).
ObjKind sync_obj(const TraceLabel* label, uint64_t* obj) noexcept {
  if (label == nullptr) return ObjKind::kNone;
  *obj = label->trace_obj(g_generation.load(std::memory_order_relaxed));
  return ObjKind::kLabel;
}

// A channel as a recorded object: its trace id (name registered), or the nil channel.
ObjKind chan_obj(const ChanBase* c, uint64_t* obj) noexcept {
  if (c == nullptr) return ObjKind::kNilChan;
  *obj = c->trace_label().trace_obj(g_generation.load(std::memory_order_relaxed));
  return ObjKind::kLabel;
}

// What a parker waits on: the file's wait kind and object, and a select's first cases (up to
// kMaxCases).
struct WaitDesc {
  WaitKind wait = WaitKind::kOther;
  ObjKind obj_kind = ObjKind::kNone;
  uint64_t obj = 0;
  std::size_t ncases = 0;
};

// p's armed wait, read while the locks of what it waits on are held (the objects are alive). For a
// mutex or wait group, also leaves its label in *label for the waker, which must not read the
// object (fill_wake).
WaitDesc recorded_wait(const Parker& p, TraceWaitLabel* label) {
  WaitDesc d;
  switch (p.reason) {
    case WaitReason::kChanSend:
    case WaitReason::kChanRecv: {
      const auto* c = static_cast<const ChanBase*>(p.wait_obj);
      d.wait = chan_wait_kind(c, p.reason == WaitReason::kChanSend);
      d.obj_kind = chan_obj(c, &d.obj);
      break;
    }
    case WaitReason::kSelect:
      d.wait = WaitKind::kSelect;
      d.obj_kind = ObjKind::kSelect;
      d.ncases = std::min<std::size_t>(p.nwaiters, kMaxCases);
      break;
    case WaitReason::kNilChan:
      d.obj_kind = ObjKind::kNilChan;
      break;
    case WaitReason::kSleep:
      d.wait = WaitKind::kTimer;
      d.obj_kind = ObjKind::kSleep;
      break;
    case WaitReason::kMutex:
    case WaitReason::kWaitGroup: {
      const bool mutex = p.reason == WaitReason::kMutex;
      d.wait = mutex ? WaitKind::kMutex : WaitKind::kWaitGroup;
      d.obj_kind = sync_obj(mutex ? static_cast<const Mutex*>(p.wait_obj)->trace_label()
                                  : static_cast<const WaitGroup*>(p.wait_obj)->trace_label(),
                            &d.obj);
      *label = {d.obj_kind == ObjKind::kLabel ? d.obj : 0,
                g_generation.load(std::memory_order_relaxed)};
      break;
    }
    default:
      break;
  }
  if (d.obj_kind == ObjKind::kNone) {
    d.obj_kind = ObjKind::kAddr;
    d.obj = reinterpret_cast<std::uintptr_t>(p.wait_obj);
  }
  return d;
}

// A select's first n cases as records (p's locks held, as for recorded_wait).
void put_cases(const Parker& p, std::size_t n, CaseRec* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const Waiter& wt = p.waiters[i];
    auto* c = new (out + i) CaseRec{};
    c->kind = chan_wait_kind(wt.chan, wt.is_send);
    c->obj_kind = chan_obj(wt.chan, &c->obj);
  }
}

// A wide run record's wake: its fields in r, and the RunWake written at q; returns past it.
unsigned char* put_wide_wake(RunRec* r, const TraceWake& wk, unsigned char* q) noexcept {
  r->has_wake = 1;
  r->wake_tid = wk.tid;
  r->wake_by = wk.by;
  r->wake_obj_kind = wk.obj_kind;
  new (q) RunWake{wk.ns, wk.obj, wk.by_g};
  return q + sizeof(RunWake);
}

// The calling OS thread's blocking wait in progress (trace_os_block_begin .. _end).
struct OsBlock {
  int64_t start = 0;  // 0: none recorded
  uint64_t generation = 0;
  WaitDesc desc;
  CaseRec cases[kMaxCases];
};
thread_local OsBlock t_os_block;

}  // namespace

// A worker samples the run-queue length at most this often (ns).
constexpr int64_t kRunQueueSampleNs = 1000;

// fork.h. Held across fork(): the session (a start or stop in progress finishes first) and the
// registries the child keeps (thread buffers, track and label names). The child does not continue
// a recording in progress: it has no writer thread, and the parent's file is the parent's to
// finish (closing the child's copy of it would write the parent's buffered text again). The
// writer's queue, and the buffers of the threads that do not exist in the child (whose locks and
// chunks they may have been in the middle of changing), are left behind.
void trace_prepare_fork() noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  g_session_mu.lock();
  g_buffers_mu.lock();
  g_tracks_mu.lock();
  g_names_mu.lock();
}

void trace_after_fork(bool child) noexcept CHANFLOW_NO_THREAD_SAFETY_ANALYSIS {
  if (child) {
    g_trace_enabled.store(false, std::memory_order_relaxed);
    g_generation.store(0, std::memory_order_release);
    g_writer_behind.store(false, std::memory_order_relaxed);
    g_writer = nullptr;  // the thread's object is leaked: it cannot be joined here
    g_writer_threads.store(0, std::memory_order_seq_cst);
    g_file = nullptr;  // leaked, not closed (see above)
    g_naming = false;
    new (&queue()) Queue();
    auto& all = buffers();
    new (&all) std::vector<std::shared_ptr<ThreadBuffer>>();
    if (t_buffer.buf) all.push_back(t_buffer.buf);
  }
  g_names_mu.unlock();
  g_tracks_mu.unlock();
  g_buffers_mu.unlock();
  g_session_mu.unlock();
}

long trace_threads() noexcept { return g_writer_threads.load(std::memory_order_seq_cst); }

void trace_set_timer_thread() noexcept { t_is_timer = true; }

bool trace_render_bytes(const unsigned char* data, std::size_t n, std::string* out) {
  os::LockGuard g(g_session_mu);
  // A writer still running (a stop() that failed before joining it) renders with the same state.
  if (g_generation.load(std::memory_order_relaxed) != 0 || g_writer != nullptr) {
    CHANFLOW_THROW(Error) << "trace_render_bytes: a recording is on";
  }
  // The renderer's state is the recording's: reset as start() does, and left so for the next.
  Queue& q = queue();
  Chunk c;
  c.used = std::min(n, kChunkBytes);
  if (c.used != 0) std::memcpy(c.data.get(), data, c.used);
  q.write_failed = false;
  q.any_event = false;
  reset_labels(q);
  q.runtime_pid = runtime_pid();
  g_start_ns.store(0, std::memory_order_relaxed);
  render_chunk(c, *out);
  const bool whole = !q.write_failed;
  q.write_failed = false;
  q.any_event = false;
  return whole;
}

void trace_go(Task* t, const Task* parent) noexcept {
  try {
    const trace::Track tr = here_track();
    const int64_t now = trace::now_ns();
    Strings ss;
    ss.add(t->name);  // empty: the writer renders "#<g>"
    Head h{};
    h.kind = Kind::kGo;
    h.pid = tr.pid;
    h.tid = tr.tid;
    h.ts = now;
    h.n[1] = static_cast<int64_t>(t->id);
    h.n[2] = parent != nullptr ? static_cast<int64_t>(parent->id) : 0;
    emit(h, ss);
    TraceWake& wk = t->trace_wake;
    wk.ns = now;
    wk.by = static_cast<uint8_t>(By::kSpawn);
    wk.by_g = parent != nullptr ? parent->id : 0;
    wk.tid = tr.tid;
    wk.obj_kind = ObjKind::kNone;
    wk.obj = 0;
  } catch (...) {
  }
}

namespace {

// What woke p's thread (from p's armed reason and fired waiter), who, and when, into wk. `label`:
// what the park of a mutex or wait group left for its waker (the object itself may be gone).
void fill_wake(Parker* p, const TraceWaitLabel& label, TraceWake& wk) {
  By by = By::kOther;
  ObjKind ok = ObjKind::kNone;
  uint64_t obj = 0;
  const Waiter* fired = p->fired;
  switch (p->reason) {
    case WaitReason::kChanSend:
    case WaitReason::kChanRecv:
    case WaitReason::kSelect:
      if (fired != nullptr) {
        const ChanBase* c = fired->chan;
        if (!fired->success) {
          by = c != nullptr && c->is_context_done() ? By::kCancel : By::kChanClose;
        } else {
          by = fired->is_send ? By::kChanRecv : By::kChanSend;
        }
        ok = chan_obj(c, &obj);
      }
      break;
    case WaitReason::kSleep:
      by = By::kTimer;
      ok = ObjKind::kSleep;
      break;
    // Not read from the object: a wait group released with several waiters may already be
    // destroyed by one that ran (add() unparks them after its lock). Its name, as the park
    // recorded it (trace_run_end, under the object's lock, which add() and unlock() took
    // since), when this recording recorded that park; else its address.
    case WaitReason::kMutex:
    case WaitReason::kWaitGroup:
      by = p->reason == WaitReason::kMutex ? By::kUnlock : By::kWaitGroup;
      if (label.obj != 0 && label.generation == g_generation.load(std::memory_order_relaxed)) {
        ok = ObjKind::kLabel;
        obj = label.obj;
      }
      break;
    default:
      break;
  }
  if (t_is_timer && by != By::kCancel) by = By::kTimer;
  if (ok == ObjKind::kNone && p->wait_obj != nullptr) {
    ok = ObjKind::kAddr;
    obj = reinterpret_cast<std::uintptr_t>(p->wait_obj);
  }
  Worker* here = current_worker();
  const trace::Track tr =
      here != nullptr && here->trace_track.tid != 0 ? here->trace_track : here_track();
  const Task* waker = here != nullptr ? here->current : nullptr;
  wk.ns = record_ns();
  wk.obj = obj;
  wk.by_g = waker != nullptr ? waker->id : 0;
  wk.tid = tr.tid;
  wk.by = static_cast<uint8_t>(by);
  wk.obj_kind = ok;
}

}  // namespace

void trace_wake(Parker* p) noexcept {
  Task* t = p->task;
  if (t == nullptr) return;
  try {
    fill_wake(p, t->trace_wait_label, t->trace_wake);
  } catch (...) {
  }
}

void trace_os_wake(Parker* p, const TraceWaitLabel& label, TraceWake* wake) noexcept {
  try {
    fill_wake(p, label, *wake);
  } catch (...) {
  }
}

void trace_os_block_begin(const Parker* p, TraceWaitLabel* label, TraceWake* wake) noexcept {
  wake->ns = 0;
  OsBlock& b = t_os_block;
  b.start = 0;
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (gen == 0) return;
  try {
    b.desc = recorded_wait(*p, label);
    put_cases(*p, b.desc.ncases, b.cases);
    b.generation = gen;
    b.start = record_ns();
  } catch (...) {
    // Out of memory registering a name: this wait is not recorded.
  }
}

void trace_os_block_end(const TraceWake& wake) noexcept {
  OsBlock& b = t_os_block;
  const int64_t start = b.start;
  if (start == 0) return;
  b.start = 0;
  if (b.generation != g_generation.load(std::memory_order_relaxed)) return;  // stopped since
  try {
    const int64_t now = record_ns();
    const trace::Track tr = here_track();
    const bool woken = wake.ns >= start;  // not after a cancel or a deadlock check's timeout
    const std::size_t size =
        sizeof(RunRec) + (woken ? sizeof(RunWake) : 0) + sizeof(CaseRec) * b.desc.ncases;
    emit_record(size, woken ? 3 : 1, [&](unsigned char* rec) {
      auto* r = new (rec) RunRec{};
      r->size = static_cast<uint32_t>(size);
      r->kind = Kind::kRun;
      r->end = static_cast<uint8_t>(RunEnd::kBlocked);
      r->wait = static_cast<uint8_t>(b.desc.wait);
      r->ncases = static_cast<uint8_t>(b.desc.ncases);
      r->tid = tr.tid;
      r->ts = start;
      r->dur = now - start;
      r->wait_obj = b.desc.obj;
      r->wait_obj_kind = b.desc.obj_kind;
      unsigned char* q = rec + sizeof(RunRec);
      if (woken) q = put_wide_wake(r, wake, q);
      std::memcpy(q, b.cases, sizeof(CaseRec) * b.desc.ncases);
    });
  } catch (...) {
  }
}

void trace_run_begin(Worker* w, Task* t) noexcept {
  try {
    const int64_t now = w->trace_switch_ns != 0 ? w->trace_switch_ns : record_ns();
    t->trace_run_ns = now;
    if (w->trace_track.tid == 0) {
      w->trace_track = trace::thread(runtime_pid(), "worker " + std::to_string(w->index));
    }
    // The wake that readied t is recorded with this run's slice (trace_run_end).
    t->trace_run_wake = t->trace_wake;
    t->trace_wake.ns = 0;
    // The run-queue length, sampled at a dispatch at most every kRunQueueSampleNs (a sample reads
    // a line of every worker) and recorded when it changed since this worker's last sample: the
    // global queue plus every worker's local queue and runnext.
    if (now - w->trace_runnable_ns < kRunQueueSampleNs) return;
    w->trace_runnable_ns = now;
    SchedulerImpl* s = w->sched;
    int64_t runnable = static_cast<int64_t>(s->gq.size());
    for (const auto& o : s->workers) {
      runnable += static_cast<int64_t>(o->rq.size_approx());
      if (o->runnext.load(std::memory_order_relaxed) != nullptr) ++runnable;
    }
    if (runnable != w->trace_last_runnable) {
      w->trace_last_runnable = runnable;
      Head h{};
      h.kind = Kind::kRunQueue;
      h.pid = w->trace_track.pid;
      h.tid = w->trace_track.tid;
      h.ts = now;
      h.n[0] = runnable;
      Strings none;
      emit(h, none);
    }
  } catch (...) {
  }
}

void trace_run_end(Worker* w, Task* t, RunEnd end) noexcept {
  const int64_t now = record_ns();
  w->trace_switch_ns = now;
  const int64_t start = g_start_ns.load(std::memory_order_relaxed);
  const int64_t began = t->trace_run_ns;
  t->trace_run_ns = 0;
  // Its run began before the recording (not traced, or traced by an earlier one).
  if (began < start) {
    t->trace_run_wake.ns = 0;
    return;
  }
  // A wake made before the recording started has no place in it.
  const bool woken = t->trace_run_wake.ns >= start;
  // What it parks on, read while the lock of that is still held (the objects are alive).
  const Parker& p = t->parker;
  const bool parked = end == RunEnd::kPark;
  const WaitDesc d = parked ? recorded_wait(p, &t->trace_wait_label) : WaitDesc{};
  const std::size_t ncases = d.ncases;
  const WaitKind wait = d.wait;
  const ObjKind wait_obj_kind = d.obj_kind;
  const uint64_t wait_obj = d.obj;
  const TraceWake& wk = t->trace_run_wake;
  const int64_t dur = now - began;
  const int64_t lead = woken ? began - wk.ns : 0;
  const uint32_t tid = w->trace_track.tid;
  // The short form when every number fits it (ShortRun), as nearly all do.
  const bool fits = t->id <= UINT32_MAX && dur >= 0 && dur <= UINT32_MAX &&
                    wait_obj <= UINT32_MAX && tid <= UINT16_MAX &&
                    (!woken || (lead >= 0 && lead <= UINT32_MAX && wk.obj <= UINT32_MAX &&
                                wk.by_g <= UINT32_MAX && wk.tid <= UINT16_MAX));
  const std::size_t size =
      fits ? sizeof(ShortRun) + (woken ? sizeof(ShortWake) : 0) + sizeof(CaseRec) * ncases
           : sizeof(RunRec) + (woken ? sizeof(RunWake) : 0) + sizeof(CaseRec) * ncases;
  // The slice, and the wake flow's start and end when a wake started it.
  emit_record(size, woken ? 3 : 1, [&](unsigned char* rec) {
    // Its name, once per recording, with a record that is kept (unnamed ones render as
    // "#<g>"): registered before the record is published, so before the writer sees it.
    if (!t->name.empty()) {
      const uint64_t gen = g_generation.load(std::memory_order_relaxed);
      if (gen != 0 && t->trace_named_in != gen) {
        try {
          os::LockGuard g(g_names_mu);
          if (gthread_names().try_emplace(t->id, t->name).second) {
            g_names_version.fetch_add(1, std::memory_order_relaxed);
          }
          t->trace_named_in = gen;
        } catch (...) {
          // Out of memory: the green thread shows as "#<g>".
        }
      }
    }
    unsigned char* q;
    if (fits) {
      auto* r = new (rec) ShortRun{};
      r->size = static_cast<uint32_t>(size);
      r->kind = Kind::kShortRun;
      r->end = static_cast<uint8_t>(end);
      r->wait = static_cast<uint8_t>(wait);
      r->ncases = static_cast<uint8_t>(ncases);
      r->ts = began;
      r->dur = static_cast<uint32_t>(dur);
      r->g = static_cast<uint32_t>(t->id);
      r->wait_obj = static_cast<uint32_t>(wait_obj);
      r->tid = static_cast<uint16_t>(tid);
      r->wait_obj_kind = wait_obj_kind;
      r->has_wake = woken ? 1 : 0;
      q = rec + sizeof(ShortRun);
      if (woken) {
        new (q) ShortWake{static_cast<uint32_t>(lead),
                          static_cast<uint32_t>(wk.obj),
                          static_cast<uint32_t>(wk.by_g),
                          static_cast<uint16_t>(wk.tid),
                          wk.by,
                          wk.obj_kind};
        q += sizeof(ShortWake);
      }
    } else {
      auto* r = new (rec) RunRec{};
      r->size = static_cast<uint32_t>(size);
      r->kind = Kind::kRun;
      r->end = static_cast<uint8_t>(end);
      r->wait = static_cast<uint8_t>(wait);
      r->ncases = static_cast<uint8_t>(ncases);
      r->tid = tid;
      r->ts = began;
      r->dur = dur;
      r->g = t->id;
      r->wait_obj = wait_obj;
      r->wait_obj_kind = wait_obj_kind;
      q = rec + sizeof(RunRec);
      if (woken) q = put_wide_wake(r, wk, q);
    }
    put_cases(p, ncases, reinterpret_cast<CaseRec*>(q));
  });
  t->trace_run_wake.ns = 0;
}

void trace_chan_counter(const ChanBase* c) noexcept {
  try {
    const trace::Track tr = here_track();
    Head h{};
    h.kind = Kind::kChan;
    h.pid = tr.pid;
    h.tid = tr.tid;
    h.ts = trace::now_ns();
    h.n[0] = static_cast<int64_t>(c->size());
    h.n[1] = static_cast<int64_t>(c->capacity());
    h.n[2] = static_cast<int64_t>(
        c->trace_label().trace_obj(g_generation.load(std::memory_order_relaxed)));
    Strings none;
    emit(h, none);
  } catch (...) {
  }
}

uint64_t TraceLabel::register_name(uint64_t generation) const noexcept {
  const uint64_t id = this->id();
  if (generation == 0) return id;
  try {
    os::LockGuard g(g_names_mu);
    if (label_names().try_emplace(id, name_).second) {
      g_names_version.fetch_add(1, std::memory_order_relaxed);
    }
    named_in_.store(generation, std::memory_order_relaxed);
  } catch (...) {
    // Out of memory: the object shows as "#<id>".
  }
  return id;
}

uint64_t TraceLabel::assign_id() const noexcept {
  static std::atomic<uint64_t> next{1};
  const uint64_t mine = next.fetch_add(1, std::memory_order_relaxed);
  // The first caller's id wins; relaxed: the id carries no data.
  uint64_t id = 0;
  if (id_.compare_exchange_strong(id, mine, std::memory_order_relaxed)) return mine;
  return id;
}

}  // namespace chanflow::detail

namespace chanflow::trace {

using detail::g_trace_enabled;

namespace {

int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The trace clock. Where the kernel itself keeps time with the TSC (x86-64, clocksource "tsc":
// the kernel checked that it is invariant and synchronised across CPUs), a reading is one rdtsc
// scaled to nanoseconds, about half the cost of clock_gettime, and a traced context switch
// reads the clock twice. The scale is measured once against the steady clock over
// kCalibrationTime (its error, a few ppm, scales durations, never orders them); the offset
// makes a reading agree with the steady clock at calibration. Elsewhere, or with
// CHANFLOW_TRACE_CLOCK=steady, it is the steady clock. The calibration is published in
// detail::g_tsc, which detail::record_ns() reads.
struct TraceClock {
  bool tsc = false;
  uint64_t base_tick = 0;
  int64_t base_ns = 0;
  uint64_t mult = 0;  // ns per tick, times 2^32
};
constexpr auto kCalibrationTime = std::chrono::milliseconds(20);
// GCC's and Clang's 128-bit integers (the scaling's product needs more than 64 bits).
__extension__ typedef unsigned __int128 UInt128;

#if defined(__x86_64__)
bool kernel_uses_tsc() {
  std::FILE* f =
      std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char buf[32] = {};
  const bool ok = std::fgets(buf, sizeof(buf), f) != nullptr;
  std::fclose(f);
  return ok && std::string_view(buf).substr(0, 4) == "tsc\n";
}

// A (tick, ns) pair read close together: the tightest of a few brackets of the steady reading.
std::pair<uint64_t, int64_t> tsc_pair() {
  uint64_t best_ticks = UINT64_MAX;
  std::pair<uint64_t, int64_t> best{};
  for (int i = 0; i < 8; ++i) {
    const uint64_t a = __rdtsc();
    const int64_t ns = steady_ns();
    const uint64_t b = __rdtsc();
    if (b - a < best_ticks) {
      best_ticks = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}
#endif

TraceClock calibrate() {
  TraceClock c;
#if defined(__x86_64__)
  const char* env = std::getenv("CHANFLOW_TRACE_CLOCK");
  if ((env != nullptr && std::string_view(env) == "steady") || !kernel_uses_tsc()) return c;
  const auto [t0, n0] = tsc_pair();
  std::this_thread::sleep_for(kCalibrationTime);
  const auto [t1, n1] = tsc_pair();
  if (t1 <= t0 || n1 <= n0) return c;
  c.mult = static_cast<uint64_t>((static_cast<UInt128>(n1 - n0) << 32) / (t1 - t0));
  c.base_tick = t1;
  c.base_ns = n1;
  c.tsc = c.mult != 0;
#endif
  return c;
}

const TraceClock& trace_clock() {
  static const TraceClock kClock = [] {
    const TraceClock c = calibrate();
    if (c.tsc) {
      detail::g_tsc.base_tick.store(c.base_tick, std::memory_order_relaxed);
      detail::g_tsc.base_ns.store(c.base_ns, std::memory_order_relaxed);
      detail::g_tsc.mult.store(c.mult, std::memory_order_release);  // publishes the base
    }
    return c;
  }();
  return kClock;
}

}  // namespace

int64_t now_ns() noexcept {
  (void)trace_clock();  // calibrated once
  return detail::record_ns();
}

uint32_t process(std::string_view name) {
  using namespace detail;
  os::LockGuard g(g_tracks_mu);
  auto& ps = g_processes;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (ps[i] == name) return static_cast<uint32_t>(i + 1);
  }
  ps.emplace_back(name);
  const auto pid = static_cast<uint32_t>(ps.size());
  if (g_naming) {
    Queue& q = queue();
    os::LockGuard gq(q.mu);
    q.names.push_back({true, pid, 0, std::string(name)});
  }
  return pid;
}

Track thread(uint32_t pid, std::string_view name) {
  using namespace detail;
  os::LockGuard g(g_tracks_mu);
  g_threads.push_back({pid, std::string(name)});
  const Track t{pid, static_cast<uint32_t>(g_threads.size())};
  if (g_naming) {
    Queue& q = queue();
    os::LockGuard gq(q.mu);
    q.names.push_back({false, t.pid, t.tid, std::string(name)});
  }
  return t;
}

namespace {

// Ends the current recording; g_session_mu held. `mark`, when not empty, names a global mark at
// the end (outside the event bound, as "stop"). Returns whether writing failed.
bool stop_locked(std::string_view mark = {}) CHANFLOW_REQUIRES(detail::g_session_mu) {
  using namespace detail;
  if (g_generation.load(std::memory_order_relaxed) == 0) return false;
  g_trace_enabled.store(false, std::memory_order_relaxed);
  g_generation.store(0, std::memory_order_release);
  const int64_t end_ns = now_ns();
  // Every buffer's published records go to the writer (copied: the owner may be appending past
  // them). A record being appended meanwhile, by a recorder that read the generation before it
  // became 0, is not in the file; later ones see 0.
  {
    os::LockGuard g(g_buffers_mu);
    for (auto& b : buffers()) {
      os::LockGuard bl(b->lock);
      if (b->generation != g_last_generation) continue;
      g_dropped.fetch_add(b->shed.load(std::memory_order_relaxed), std::memory_order_relaxed);
      if (!b->chunk) continue;
      const uint64_t published = b->published.load(std::memory_order_acquire);
      const std::size_t bytes = published & 0xffffffffU;
      if (bytes == 0) continue;
      std::unique_ptr<Chunk> copy = take_chunk();
      std::memcpy(copy->data.get(), b->chunk->data.get(), bytes);
      copy->used = bytes;
      copy->events = published >> 32;
      (void)hand_off(std::move(copy), /*force=*/true);
    }
  }
  Queue& q = queue();
  {
    os::LockGuard g(q.mu);
    q.finishing = true;
    q.cv.notify_all();
  }
  g_writer->join();
  delete g_writer;
  g_writer = nullptr;
  g_writer_threads.fetch_sub(1, std::memory_order_seq_cst);
  {
    os::LockGuard g(q.mu);
    if (q.free.size() > kept_chunks(q)) q.free.resize(kept_chunks(q));  // kKeptChunks
  }
  std::FILE* spool = nullptr;
  {
    os::LockGuard g(q.mu);
    std::swap(spool, q.spool);
  }
  if (spool != nullptr) {
    render_spool(q, spool, g_file);
    std::fclose(spool);
  }
  // The tail: track names, the marks and otherData.
  std::string text;
  auto next = [&] {
    text += q.any_event ? ",\n" : "\n";
    q.any_event = true;
  };
  {
    // Names queued after the writer's last buffer (their tracks may have no events).
    os::LockGuard g(g_tracks_mu);
    g_naming = false;
    std::vector<TrackName> names;
    {
      os::LockGuard gq(q.mu);
      names.swap(q.names);
    }
    for (const TrackName& n : names) {
      next();
      append_track_name(text, n.is_process, n.pid, n.tid, n.name);
    }
  }
  const uint32_t rt = runtime_pid();
  const std::size_t dropped = g_dropped.load(std::memory_order_relaxed);
  const std::size_t max_events = g_max_events.load(std::memory_order_relaxed);
  if (dropped > 0) {
    next();
    text += R"({"ph":"i","s":"g","cat":"mark","name":"dropped","ts":)";
    append_us(text, rel_ns(end_ns));
    append_format(text, R"(,"pid":%u,"tid":0,"args":{"dropped_events":%zu,"max_events":%zu}})", rt,
                  dropped, max_events);
  }
  // The marks of how the recording ended: the caller's (e.g. "cancelled"), then "stop".
  for (const std::string_view name : {mark, std::string_view("stop")}) {
    if (name.empty()) continue;
    next();
    text += R"({"ph":"i","s":"g","cat":"mark","name":)";
    append_string(text, name);
    text += R"(,"ts":)";
    append_us(text, rel_ns(end_ns));
    append_format(text, R"(,"pid":%u,"tid":0})", rt);
  }
  append_format(text,
                "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"chanflow_trace\":1,"
                "\"dropped_events\":%zu,\"max_events\":%zu,\"events\":%zu,\"complete\":true}}\n",
                dropped, max_events, g_written.load(std::memory_order_relaxed));
  write_text(g_file, text);
  bool failed = q.write_failed;
  if (g_file != nullptr) {
    if (std::fclose(g_file) != 0) failed = true;
    g_file = nullptr;
  } else {
    *g_last_doc = std::move(q.memory);
    q.memory.clear();
  }
  return failed;
}

}  // namespace

void start(const Options& options) {
  using namespace detail;
  os::LockGuard g(g_session_mu);
  (void)stop_locked();
  SpoolMode mode = SpoolMode::kAuto;
  if (const char* env = std::getenv("CHANFLOW_TRACE_SPOOL"); env != nullptr && *env != '\0') {
    const std::string_view v(env);
    if (v == "always") {
      mode = SpoolMode::kAlways;
    } else if (v == "never") {
      mode = SpoolMode::kNever;
    } else if (v != "auto") {
      CHANFLOW_THROW(Error) << "trace::start: CHANFLOW_TRACE_SPOOL is '" << v
                            << "'; expected auto, always or never";
    }
  }
  std::FILE* f = nullptr;
  if (!options.path.empty()) {
    f = std::fopen(options.path.c_str(), "w");
    if (f == nullptr) {
      CHANFLOW_THROW(Error) << "trace::start: cannot open '" << options.path << "' for writing";
    }
  }
  g_file = f;
  *g_path = options.path;
  g_last_doc->clear();
  Queue& q = queue();
  q.memory.clear();
  q.spool_bytes = 0;
  q.spool_failed = false;
  q.write_failed = false;
  q.any_event = false;
  {
    std::size_t missing = 0;
    {
      os::LockGuard g2(q.mu);
      q.finishing = false;
      q.limit = std::max(options.buffer_bytes, kChunkBytes);
      missing = kept_chunks(q) - std::min(kept_chunks(q), q.free.size());
    }
    // Chunks faulted in here, not at a recorder's first records (kKeptChunks).
    std::vector<std::unique_ptr<Chunk>> fresh(missing);
    for (auto& c : fresh) {
      c = std::make_unique<Chunk>();
      std::memset(c->data.get(), 0, kChunkBytes);
    }
    os::LockGuard g2(q.mu);
    for (auto& c : fresh) q.free.push_back(std::move(c));
  }
  // A recording still on at exit is completed then (its file closed with otherData).
  static const bool kAtExit = [] {
    return std::atexit([] {
             try {
               trace::stop();
             } catch (...) {
             }
           }) == 0;
  }();
  (void)kAtExit;
  (void)trace_clock();  // calibrated once per process, here rather than on a recorder's path
  {
    os::LockGuard gn(g_names_mu);
    label_names().clear();
    gthread_names().clear();
  }
  reset_labels(q);
  q.runtime_pid = runtime_pid();
  g_max_events.store(options.max_events, std::memory_order_relaxed);
  g_reserved.store(0, std::memory_order_relaxed);
  g_dropped.store(0, std::memory_order_relaxed);
  g_written.store(0, std::memory_order_relaxed);
  g_writer_behind.store(false, std::memory_order_relaxed);
  (void)runtime_pid();  // the runtime's process is pid 1 in every file that has it first
  // The head, and the names of the tracks known now (a file cut short still has them).
  std::string text = "{\"traceEvents\":[";
  {
    os::LockGuard gt(g_tracks_mu);
    append_track_names(text, [&] {
      text += q.any_event ? ",\n" : "\n";
      q.any_event = true;
    });
    {
      os::LockGuard gq(q.mu);
      q.names.clear();
    }
    g_naming = true;
  }
  write_text(f, text);
  if (f != nullptr) std::fflush(f);
  g_writer_threads.fetch_add(1, std::memory_order_seq_cst);
  g_writer = new std::thread([f, path = options.path, mode] { writer_main(f, path, mode); });
  g_start_ns.store(now_ns(), std::memory_order_relaxed);
  g_last_generation += 1;
  g_generation.store(g_last_generation, std::memory_order_release);
  g_trace_enabled.store(true, std::memory_order_release);
}

void stop(std::string_view mark) {
  os::LockGuard g(detail::g_session_mu);
  if (stop_locked(mark)) {
    CHANFLOW_THROW(Error) << "trace::stop: writing '" << *detail::g_path << "' failed";
  }
}

bool enabled() noexcept { return g_trace_enabled.load(std::memory_order_relaxed); }

std::size_t event_count() noexcept { return detail::g_written.load(std::memory_order_relaxed); }

std::size_t dropped_count() noexcept { return detail::g_dropped.load(std::memory_order_relaxed); }

std::string to_json() {
  os::LockGuard g(detail::g_session_mu);
  return *detail::g_last_doc;
}

namespace {
// `args` must be empty or bracketed as a JSON object (its inside is copied as it is).
void check_args(std::string_view args, const char* fn) {
  if (args.empty()) return;
  const auto first = args.find_first_not_of(" \t\r\n");
  const auto last = args.find_last_not_of(" \t\r\n");
  if (first == std::string_view::npos || args[first] != '{' || args[last] != '}') {
    CHANFLOW_THROW(Error) << "trace::" << fn << ": args is not a JSON object: '"
                          << args.substr(0, 80) << "'";
  }
}

void emit_generic(detail::Kind kind, Track t, std::string_view cat, std::string_view name,
                  int64_t ts, int64_t n0, std::string_view args, char scope = 0) {
  detail::Strings ss;
  ss.add(cat);
  ss.add(name);
  ss.add(args);
  detail::Head h{};
  h.kind = kind;
  h.sub = static_cast<uint8_t>(scope);
  h.pid = t.pid;
  h.tid = t.tid;
  h.ts = ts;
  h.n[0] = n0;
  detail::emit(h, ss);
}
}  // namespace

void slice(Track t, std::string_view cat, std::string_view name, int64_t begin_ns, int64_t end_ns,
           std::string_view args) {
  if (!enabled()) return;
  check_args(args, "slice");
  emit_generic(detail::Kind::kSlice, t, cat, name, begin_ns, end_ns - begin_ns, args);
}

void instant(Track t, std::string_view cat, std::string_view name, int64_t ts_ns,
             std::string_view args, char scope) {
  if (!enabled()) return;
  check_args(args, "instant");
  if (scope != 't' && scope != 'p' && scope != 'g') {
    CHANFLOW_THROW(Error) << "trace::instant: scope must be 't', 'p' or 'g', got '" << scope << "'";
  }
  emit_generic(detail::Kind::kInstant, t, cat, name, ts_ns, 0, args, scope);
}

void counter(Track t, std::string_view cat, std::string_view name, int64_t ts_ns,
             std::string_view args) {
  if (!enabled()) return;
  if (args.empty()) CHANFLOW_THROW(Error) << "trace::counter: args must hold the series";
  check_args(args, "counter");
  emit_generic(detail::Kind::kCounter, t, cat, name, ts_ns, 0, args);
}

uint64_t flow_id() noexcept { return detail::g_next_flow.fetch_add(1, std::memory_order_relaxed); }

void flow_begin(Track t, std::string_view cat, std::string_view name, uint64_t id, int64_t ts_ns,
                std::string_view args) {
  if (!enabled()) return;
  check_args(args, "flow_begin");
  emit_generic(detail::Kind::kFlowBegin, t, cat, name, ts_ns, static_cast<int64_t>(id), args);
}

void flow_end(Track t, std::string_view cat, std::string_view name, uint64_t id, int64_t ts_ns) {
  if (!enabled()) return;
  emit_generic(detail::Kind::kFlowEnd, t, cat, name, ts_ns, static_cast<int64_t>(id), {});
}

}  // namespace chanflow::trace
