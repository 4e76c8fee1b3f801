#include <cstdint>
#include "transports/shm/shm_transport.h"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <memory>

#include "seam/errors.h"
#include "layouts/log.h"
#include "transports/shm/pool_allocator.h"
#include "transports/shm/process_memory.h"

namespace seam::shm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMagic = 0x314d485353414553ull;  // "SEASSHM1"
constexpr uint64_t kLine = 64;
/// Record header: {tag, size, arg, kind | id << 8}. arg: the sender's buffer address (cma).
constexpr uint64_t kHeaderBytes = 32;
enum RecordKind : uint64_t { kInline = 0, kCma = 1 };
/// "I have read your cma message `id`" is a word the receiver stores in the sender's ack slot
/// id % kAckSlots (one array per ordered pair, in the segment), not a record in the ring: a
/// record could queue behind a full ring on a rank that has stopped progressing, and the sender
/// would wait for it forever. A sender never has two unacknowledged cma sends on one slot (ids
/// need not be acknowledged in order: the receiver matches by tag), so every acknowledgement
/// names the one send its slot can mean.
constexpr uint64_t kAckSlots = 64;
/// Read by peers through process_vm_readv at start-up, to learn whether CMA works between us.
volatile uint64_t cma_probe = 0x5ea3c3a0c3a0c3a0ull;
/// A producer publishes its tail at least every this many bytes, so a large message streams.
constexpr uint64_t kPublishChunk = 32 * 1024;
/// How often waiting ranks look at their local peers' pids.
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(5);

struct alignas(64) SegmentHeader {
  uint64_t magic;
  uint64_t nlocal;
  uint64_t ring_bytes;
  // Abort notice: the first local rank that aborts claims it, writes why, then publishes its rank.
  std::atomic<int32_t> abort_claim;   // 0 free, 1 claimed
  std::atomic<int32_t> abort_origin;  // world rank + 1 once published, 0 before
  char abort_reason[448];
};

struct alignas(64) RankArea {
  std::atomic<uint32_t> doorbell;  // futex word the rank sleeps on
  char pad0[60];
  std::atomic<uint32_t> sleeping;  // 1 from the driver's last look (mark_asleep) or from
                                   // wait_for_activity, until it returns
  std::atomic<int32_t> cpu;        // the CPU the rank last waited on, plus one (0: not yet)
  char pad1[56];
};

struct alignas(64) RingControl {
  std::atomic<uint64_t> tail;  // bytes published by the producer (monotonic)
  char pad0[56];
  std::atomic<uint64_t> head;  // bytes consumed by the consumer (monotonic)
  char pad1[56];
};

struct AckSlots {
  std::atomic<uint64_t> id[kAckSlots];  // the last cma id read through each slot
};

static_assert(sizeof(RankArea) == 128 && sizeof(RingControl) == 128);
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free);

uint64_t record_bytes(uint64_t size) { return (kHeaderBytes + size + kLine - 1) & ~(kLine - 1); }

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, ts, nullptr, 0);
}

void ring_doorbell(RankArea& a) {
  a.doorbell.fetch_add(1, std::memory_order_seq_cst);
  futex(&a.doorbell, FUTEX_WAKE, 1, nullptr);
}

/// Rings a rank marked asleep; the caller fenced after its stores (see wake_if_sleeping).
void ring_if_asleep(RankArea& a) {
  if (a.sleeping.load(std::memory_order_relaxed)) ring_doorbell(a);
}

struct SendRequest final : transport::Request {
  SendRequest(int peer, uint64_t tag, const void* data, size_t size, RecordKind kind, uint64_t arg, uint64_t id)
      : Request(peer), tag(tag), data(static_cast<const char*>(data)), size(size), kind(kind), arg(arg), id(id) {}
  uint64_t tag;
  const char* data;
  uint64_t size;
  RecordKind kind;
  uint64_t arg, id;
  uint64_t written = 0;  // record bytes already in the ring
  /// Payload bytes that travel through the ring (none for cma and ack records).
  uint64_t wire_bytes() const { return kind == kInline ? size : 0; }
};

struct RecvRequest final : transport::Request {
  RecvRequest(int peer, uint64_t tag, void* data, size_t cap)
      : Request(peer), tag(tag), data(static_cast<char*>(data)), cap(cap) {}
  uint64_t tag;
  char* data;
  uint64_t cap;
};

struct Unexpected {
  uint64_t tag = 0;
  uint64_t size = 0;
  std::unique_ptr<char[]> data;  // the payload of an inline message, `capacity` bytes
  uint64_t capacity = 0;
  bool complete = false;
  bool cma = false;  // the data is still in the sender's buffer at `addr`; ack `id` once read
  uint64_t addr = 0, id = 0;
};

/// Producer side of the ring this rank -> one local peer.
struct Outgoing {
  RingControl* ctl = nullptr;
  char* ring = nullptr;
  uint64_t tail = 0;        // our copy of the published tail
  uint64_t head_seen = 0;   // the consumer's head as last read
  std::deque<std::shared_ptr<SendRequest>> queue;
  std::vector<std::shared_ptr<SendRequest>> awaiting_ack;  // cma sends the peer has not read yet
  AckSlots* acks = nullptr;  // where the peer acknowledges them
  uint64_t next_cma_id = 0;
  uint64_t busy_ack_slots = 0;  // bit s: a cma send on ack slot s is not acknowledged yet
};

/// Consumer side of the ring one local peer -> this rank.
struct Incoming {
  RingControl* ctl = nullptr;
  char* ring = nullptr;
  uint64_t head = 0;
  // The message being received (its header consumed, payload streaming).
  bool active = false;
  uint64_t tag = 0, size = 0, rec = 0, offset = 0;  // offset: record bytes consumed
  uint64_t wire = 0;                                 // payload bytes in the ring
  std::shared_ptr<RecvRequest> target;              // matched receive, or
  Unexpected* buffer = nullptr;                     // unexpected buffer, or neither: discard
  std::deque<std::shared_ptr<RecvRequest>> posted;
  std::list<Unexpected> unexpected;
  // Consumed entries with their buffers, for the next unexpected messages: a root that sends
  // ahead of its peers makes every message unexpected, and allocating each one's node and
  // buffer would be a large share of a small broadcast's receive.
  std::list<Unexpected> spare;
  uint64_t spare_bytes = 0;  // the spare entries' buffers
  AckSlots* acks = nullptr;  // where this rank acknowledges the peer's cma messages
};

/// The most bytes of buffers an Incoming's spare entries keep: a ring's worth of small messages.
constexpr uint64_t kSpareUnexpectedBytes = 1 << 20;

/// A new unexpected message `tag` of `size` bytes at the end of in.unexpected, a spare entry
/// where there is one; `inline_size` bytes of buffer for its payload.
Unexpected& add_unexpected(Incoming& in, uint64_t tag, uint64_t size, uint64_t inline_size) {
  if (in.spare.empty()) {
    in.unexpected.emplace_back();
  } else {
    in.spare_bytes -= in.spare.front().capacity;
    in.unexpected.splice(in.unexpected.end(), in.spare, in.spare.begin());
  }
  Unexpected& u = in.unexpected.back();
  u.tag = tag;
  u.size = size;
  u.complete = u.cma = false;
  u.addr = u.id = 0;
  if (u.capacity < inline_size) {
    u.data.reset(new char[inline_size]);  // uninitialised: the ring fills it
    u.capacity = inline_size;
  }
  return u;
}

/// Removes a consumed unexpected message, keeping its entry and buffer as a spare.
void drop_unexpected(Incoming& in, std::list<Unexpected>::iterator it) {
  if (in.spare_bytes + it->capacity > kSpareUnexpectedBytes) {
    in.unexpected.erase(it);
    return;
  }
  in.spare_bytes += it->capacity;
  in.spare.splice(in.spare.begin(), in.unexpected, it);
}

struct Peer {
  int world_rank = -1;
  int pid = 0;
  int pidfd = -1;
  bool dead = false;
  std::string death;
  RankArea* area = nullptr;
  Outgoing out;
  Incoming in;
  std::shared_ptr<transport::Request> completed_send;  // shared by every eager send to this peer
};

class ShmTransportImpl final : public ShmTransport {
 public:
  ShmTransportImpl(int rank, int size, std::vector<int> local, std::unique_ptr<SharedSegment> seg,
                   std::vector<int> pids, std::chrono::milliseconds timeout, size_t cma_threshold)
      : rank_(rank), size_(size), local_(std::move(local)), seg_(std::move(seg)),
        cma_threshold_(cma_threshold) {
    const size_t n = local_.size();
    auto* base = static_cast<char*>(seg_->data());
    auto* header = reinterpret_cast<SegmentHeader*>(base);
    header_ = header;
    ring_bytes_ = header->ring_bytes;
    mask_ = ring_bytes_ - 1;
    auto* areas = reinterpret_cast<RankArea*>(base + sizeof(SegmentHeader));
    auto* ctls = reinterpret_cast<RingControl*>(base + sizeof(SegmentHeader) + n * sizeof(RankArea));
    auto* acks = reinterpret_cast<AckSlots*>(reinterpret_cast<char*>(ctls) + n * n * sizeof(RingControl));
    char* rings = base + data_offset(n);
    local_index_.assign(static_cast<size_t>(size_), -1);
    for (size_t i = 0; i < n; ++i) local_index_[static_cast<size_t>(local_[i])] = static_cast<int>(i);
    me_ = static_cast<size_t>(local_index_[static_cast<size_t>(rank_)]);
    my_area_ = &areas[me_];
    peers_ = std::vector<Peer>(n);  // Peer is not copyable (its unexpected buffers)
    for (size_t i = 0; i < n; ++i) {
      Peer& p = peers_[i];
      p.world_rank = local_[i];
      p.pid = pids[i];
      p.area = &areas[i];
      p.out.ctl = &ctls[me_ * n + i];
      p.out.ring = rings + (me_ * n + i) * ring_bytes_;
      p.in.ctl = &ctls[i * n + me_];
      p.in.ring = rings + (i * n + me_) * ring_bytes_;
      p.out.acks = &acks[me_ * n + i];
      p.in.acks = &acks[i * n + me_];
      p.completed_send = std::make_shared<transport::Request>(p.world_rank);
      p.completed_send->complete();
      if (i != me_) {
        p.pidfd = static_cast<int>(syscall(SYS_pidfd_open, p.pid, 0));
        SEAM_LOG_DEBUG("shm: local peer rank {} pid {}", p.world_rank, p.pid);
        // A first pass through a ring would otherwise pay a page fault in each process for
        // every page a message reaches.
        map_in(p.out.ring, ring_bytes_);
        map_in(p.in.ring, ring_bytes_);
      }
    }
  }

  ~ShmTransportImpl() override {
    for (auto& p : peers_)
      if (p.pidfd >= 0) close(p.pidfd);
  }

  static size_t data_offset(size_t n) {
    size_t off = sizeof(SegmentHeader) + n * sizeof(RankArea) + n * n * sizeof(RingControl) +
                 n * n * sizeof(AckSlots);
    return (off + 4095) & ~size_t(4095);
  }

  std::string_view name() const override { return "shm"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool is_local(int r) const override {
    return r >= 0 && r < size_ && local_index_[static_cast<size_t>(r)] >= 0;
  }

  Peer& peer(int world_rank) {
    if (!is_local(world_rank))
      throw UsageError("seam shm: rank " + std::to_string(world_rank) + " is not a local peer of rank " +
                       std::to_string(rank_));
    return peers_[static_cast<size_t>(local_index_[static_cast<size_t>(world_rank)])];
  }

  // ---- sending ------------------------------------------------------------------------------

  transport::RequestPtr isend(int world_peer, uint64_t tag, const void* data, size_t bytes) override {
    Peer& p = peer(world_peer);
    if (p.dead) return failed(world_peer, p.death);
    const uint64_t slot_bit = uint64_t{1} << ((p.out.next_cma_id + 1) % kAckSlots);
    if (cma_threshold_ && bytes >= cma_threshold_ && !(p.out.busy_ack_slots & slot_bit)) {
      // Large: send only the address; the receiver copies straight from our buffer (one copy
      // instead of two through the ring) and acknowledges. (With the next ack slot still in
      // use, the message goes through the ring instead.)
      p.out.busy_ack_slots |= slot_bit;
      auto req = detail::make_pooled<SendRequest>(world_peer, tag, data, bytes, kCma,
                                                  reinterpret_cast<uint64_t>(data), ++p.out.next_cma_id);
      enqueue(p, req);
      return req;
    }
    Outgoing& o = p.out;
    const uint64_t rec = record_bytes(bytes);
    if (o.queue.empty() && rec <= kPublishChunk) {
      // Eager: the whole record fits now, the send completes before we return.
      if (ring_bytes_ - (o.tail - o.head_seen) < rec) o.head_seen = o.ctl->head.load(std::memory_order_acquire);
      if (ring_bytes_ - (o.tail - o.head_seen) >= rec) {
        uint64_t header[4] = {tag, bytes, 0, kInline};
        std::memcpy(o.ring + (o.tail & mask_), header, kHeaderBytes);
        ring_write(o.ring, o.tail + kHeaderBytes, data, bytes);
        o.tail += rec;
        publish_tail(p);
        return p.completed_send;
      }
    }
    auto req = detail::make_pooled<SendRequest>(world_peer, tag, data, bytes, kInline, 0, 0);
    enqueue(p, req);
    return req;
  }

  void enqueue(Peer& p, const std::shared_ptr<SendRequest>& req) {
    p.out.queue.push_back(req);
    if (p.out.queue.size() == 1) pump_out(p);
  }

  /// Tells peer p that its cma message `id` has been read (see kAckSlots).
  void send_ack(Peer& p, uint64_t id) {
    p.in.acks->id[id % kAckSlots].store(id, std::memory_order_release);
    wake_if_sleeping(*p.area);
  }

  /// Whether peer p has read cma send `s`.
  static bool acked(const Peer& p, const SendRequest& s) {
    return p.out.acks->id[s.id % kAckSlots].load(std::memory_order_acquire) == s.id;
  }

  /// Completes the cma sends peer p has acknowledged. True if any did.
  bool collect_acks(Peer& p) {
    auto& waiting = p.out.awaiting_ack;
    const auto first = std::stable_partition(waiting.begin(), waiting.end(),
                                             [&](const auto& s) { return !acked(p, *s); });
    if (first == waiting.end()) return false;
    for (auto it = first; it != waiting.end(); ++it) {
      (*it)->complete();
      p.out.busy_ack_slots &= ~(uint64_t{1} << ((*it)->id % kAckSlots));
    }
    waiting.erase(first, waiting.end());
    return true;
  }

  bool acks_waiting(const Peer& p) const {
    return std::any_of(p.out.awaiting_ack.begin(), p.out.awaiting_ack.end(),
                       [&](const auto& s) { return acked(p, *s); });
  }

  /// Copies a cma message out of the sender's memory, then acknowledges it. Empty on success.
  std::string cma_read(Peer& p, void* dst, uint64_t addr, uint64_t size) {
    const int err = read_process_memory(p.pid, reinterpret_cast<const void*>(addr), dst, size);
    // A sender that aborted meanwhile failed this send and its buffer may be in other use: the
    // bytes read may be torn, so the receive fails with the abort's reason.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (const int32_t origin = header_->abort_origin.load(std::memory_order_acquire) - 1; origin >= 0)
      return abort_reason_of(origin);
    if (err == 0) return {};
    if (err == ESRCH)
      return "seam shm: local peer rank " + std::to_string(p.world_rank) + " (pid " + std::to_string(p.pid) + ") died";
    return "seam shm: reading a message of rank " + std::to_string(p.world_rank) + " (process_vm_readv) failed: " +
           strerror(err);
  }

  void ring_write(char* ring, uint64_t pos, const void* src, size_t n) const {
    if (n == 0) return;
    size_t off = pos & mask_;
    size_t first = std::min<size_t>(n, ring_bytes_ - off);
    std::memcpy(ring + off, src, first);
    if (n > first) std::memcpy(ring, static_cast<const char*>(src) + first, n - first);
  }
  void ring_read(const char* ring, uint64_t pos, void* dst, size_t n) const {
    if (n == 0) return;
    size_t off = pos & mask_;
    size_t first = std::min<size_t>(n, ring_bytes_ - off);
    std::memcpy(dst, ring + off, first);
    if (n > first) std::memcpy(static_cast<char*>(dst) + first, ring, n - first);
  }

  void publish_tail(Peer& p) {
    p.out.ctl->tail.store(p.out.tail, std::memory_order_release);
    wake_if_sleeping(*p.area);
  }
  void publish_head(Peer& p) {
    p.in.ctl->head.store(p.in.head, std::memory_order_release);
    wake_if_sleeping(*p.area);
  }
  static void wake_if_sleeping(RankArea& a) {
    // Pairs with the fence in wait_for_activity: either the sleeper sees our data, or we see it
    // asleep and ring it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    ring_if_asleep(a);
  }

  /// Writes as much of the queued sends as the ring takes. True if anything moved.
  bool pump_out(Peer& p) {
    Outgoing& o = p.out;
    bool moved = false;
    while (!o.queue.empty()) {
      SendRequest& s = *o.queue.front();
      const uint64_t rec = record_bytes(s.wire_bytes());
      uint64_t free = ring_bytes_ - (o.tail - o.head_seen);
      if (free < rec - s.written) {
        o.head_seen = o.ctl->head.load(std::memory_order_acquire);
        free = ring_bytes_ - (o.tail - o.head_seen);
        if (free == 0) break;
      }
      uint64_t n = std::min({free, rec - s.written, kPublishChunk});
      // Record bytes [written, written+n): header [0,16), payload [16,16+size), padding after.
      const uint64_t lo = s.written, hi = s.written + n;
      if (lo < kHeaderBytes) {
        uint64_t header[4] = {s.tag, s.size, s.arg, s.kind | (s.id << 8)};
        uint64_t e = std::min(hi, kHeaderBytes);
        ring_write(o.ring, o.tail, reinterpret_cast<char*>(header) + lo, e - lo);
      }
      uint64_t plo = std::max(lo, kHeaderBytes), phi = std::min(hi, kHeaderBytes + s.wire_bytes());
      if (plo < phi) ring_write(o.ring, o.tail + (plo - lo), s.data + (plo - kHeaderBytes), phi - plo);
      o.tail += n;
      s.written += n;
      publish_tail(p);
      moved = true;
      if (s.written == rec) {
        if (s.kind == kCma)
          o.awaiting_ack.push_back(std::move(o.queue.front()));  // completes when the peer has read it
        else
          s.complete();
        o.queue.pop_front();
      }
    }
    return moved;
  }

  // ---- receiving ----------------------------------------------------------------------------

  transport::RequestPtr irecv(int world_peer, uint64_t tag, void* data, size_t bytes) override {
    Peer& p = peer(world_peer);
    Incoming& in = p.in;
    auto req = detail::make_pooled<RecvRequest>(world_peer, tag, data, bytes);
    for (auto it = in.unexpected.begin(); it != in.unexpected.end(); ++it) {
      if (it->tag != tag) continue;
      bool streaming = in.active && in.buffer == &*it;
      if (it->size > bytes) {
        req->fail(size_mismatch(p, it->size, bytes, tag));
        if (streaming) in.buffer = nullptr;  // drop the rest
        if (it->cma) send_ack(p, it->id);
        drop_unexpected(in, it);
        return req;
      }
      if (it->cma) {
        std::string err = cma_read(p, data, it->addr, it->size);
        send_ack(p, it->id);
        if (err.empty()) req->complete(it->size);
        else req->fail(err);
      } else if (it->complete) {
        if (it->size) std::memcpy(data, it->data.get(), it->size);
        req->complete(it->size);
      } else {
        // Still streaming in: take over the rest into the user's buffer.
        uint64_t got = std::min(it->size, in.offset - kHeaderBytes);
        if (got) std::memcpy(data, it->data.get(), got);
        in.buffer = nullptr;
        in.target = req;
      }
      drop_unexpected(in, it);
      return req;
    }
    if (p.dead) {
      req->fail(p.death);
      return req;
    }
    in.posted.push_back(req);
    return req;
  }

  std::string size_mismatch(const Peer& p, uint64_t size, uint64_t cap, uint64_t tag) const {
    return "seam shm: size mismatch: a " + std::to_string(size) + "-byte message from rank " +
           std::to_string(p.world_rank) + " does not fit the " + std::to_string(cap) +
           "-byte receive posted for it (tag " + std::to_string(tag) + ")";
  }

  /// Reads what peer p published for us. True if anything moved.
  bool pump_in(Peer& p) {
    Incoming& in = p.in;
    uint64_t tail = in.ctl->tail.load(std::memory_order_acquire);
    if (tail == in.head) return false;
    while (in.head != tail) {
      if (!in.active) {
        if (tail - in.head < kHeaderBytes) break;
        uint64_t header[4];
        std::memcpy(header, in.ring + (in.head & mask_), kHeaderBytes);
        start_message(p, header);
        in.head += kHeaderBytes;
        in.offset = kHeaderBytes;
      }
      uint64_t n = std::min(tail - in.head, in.rec - in.offset);
      uint64_t lo = in.offset, hi = in.offset + n;
      uint64_t plo = std::max(lo, kHeaderBytes), phi = std::min(hi, kHeaderBytes + in.wire);
      if (plo < phi) {
        char* dst = in.target ? in.target->data : in.buffer ? in.buffer->data.get() : nullptr;
        if (dst) ring_read(in.ring, in.head + (plo - lo), dst + (plo - kHeaderBytes), phi - plo);
      }
      in.head += n;
      in.offset += n;
      if (in.offset == in.rec) finish_message(p);
    }
    publish_head(p);
    return true;
  }

  void start_message(Peer& p, const uint64_t header[4]) {
    Incoming& in = p.in;
    const uint64_t tag = header[0], size = header[1], arg = header[2];
    const auto kind = static_cast<RecordKind>(header[3] & 0xff);
    const uint64_t id = header[3] >> 8;
    in.active = true;
    in.tag = tag;
    in.size = size;
    in.wire = kind == kInline ? size : 0;
    in.rec = record_bytes(in.wire);
    in.target.reset();
    in.buffer = nullptr;
    for (auto it = in.posted.begin(); it != in.posted.end(); ++it) {
      if ((*it)->tag != tag) continue;
      auto req = std::move(*it);
      in.posted.erase(it);
      if (size > req->cap) {
        req->fail(size_mismatch(p, size, req->cap, tag));  // the payload is discarded
        if (kind == kCma) send_ack(p, id);
      } else if (kind == kCma) {
        std::string err = cma_read(p, req->data, arg, size);
        send_ack(p, id);
        if (err.empty()) req->complete(size);
        else req->fail(err);
      } else {
        in.target = std::move(req);
      }
      return;
    }
    if (kind == kCma) {
      Unexpected& u = add_unexpected(in, tag, size, 0);
      u.cma = true;
      u.addr = arg;
      u.id = id;
      return;
    }
    in.buffer = &add_unexpected(in, tag, size, size);
  }

  void finish_message(Peer& p) {
    Incoming& in = p.in;
    if (in.target) in.target->complete(in.size);
    if (in.buffer) in.buffer->complete = true;

    in.target.reset();
    in.buffer = nullptr;
    in.active = false;
  }

  // ---- progress, waiting, failure ----------------------------------------------------------

  bool progress() override {
    if (header_->abort_origin.load(std::memory_order_relaxed) != 0) [[unlikely]] check_abort();
    bool moved = false;
    for (auto& p : peers_) {
      moved |= pump_in(p);
      if (!p.out.queue.empty()) moved |= pump_out(p);
      if (!p.out.awaiting_ack.empty()) moved |= collect_acks(p);
    }
    seen_doorbell_ = my_area_->doorbell.load(std::memory_order_acquire);
    if (++progress_calls_ % 256 == 0) check_peers();
    return moved;
  }

  bool has_activity() {
    if (header_->abort_origin.load(std::memory_order_acquire) != 0 && !abort_seen_) return true;
    for (auto& p : peers_) {
      if (p.in.ctl->tail.load(std::memory_order_acquire) != p.in.head) return true;
      if (!p.out.queue.empty() && p.out.ctl->head.load(std::memory_order_acquire) != p.out.head_seen)
        return true;
      if (acks_waiting(p)) return true;
    }
    return false;
  }

  void wait_for_activity(std::chrono::microseconds max) override {
    check_peers();
    check_abort();
    // Marked already when the driver took its last look (mark_asleep); cleared below either way.
    my_area_->sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!has_activity()) {
      auto us = std::clamp<int64_t>(max.count(), 1, std::chrono::duration_cast<std::chrono::microseconds>(kPeerCheckInterval).count());
      timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
      // Returns at once if someone rang the doorbell since our last progress() (seen_doorbell_).
      futex(&my_area_->doorbell, FUTEX_WAIT, seen_doorbell_, &ts);
    }
    my_area_->sleeping.store(0, std::memory_order_relaxed);
  }

  void broadcast_abort(const std::string& reason) override {
    if (abort_seen_) return;  // someone else's abort: it reached every local rank already
    abort_seen_ = true;
    int32_t free = 0;
    if (!header_->abort_claim.compare_exchange_strong(free, 1)) return;
    std::snprintf(header_->abort_reason, sizeof(header_->abort_reason), "%s", reason.c_str());
    header_->abort_origin.store(rank_ + 1, std::memory_order_release);
    for (auto& p : peers_)
      if (p.world_rank != rank_) ring_doorbell(*p.area);
  }

  /// Another local rank aborted: everything pending fails, every peer counts as lost.
  /// What a failure says when rank `origin` aborted the job.
  std::string abort_reason_of(int32_t origin) const {
    return "seam shm: rank " + std::to_string(origin) + " aborted the job: " +
           std::string(header_->abort_reason, strnlen(header_->abort_reason, sizeof(header_->abort_reason)));
  }

  void check_abort() {
    const int32_t origin = header_->abort_origin.load(std::memory_order_acquire) - 1;
    if (origin < 0 || abort_seen_) return;
    abort_seen_ = true;
    const std::string why = abort_reason_of(origin);
    SEAM_LOG_DEBUG("{}", why);
    notice_ = why;
    for (auto& p : peers_) {
      if (p.world_rank == rank_ || p.dead) continue;
      pump_in(p);
      p.dead = true;
      p.death = why;
      for (auto& r : p.in.posted) r->fail(why);
      p.in.posted.clear();
      if (p.in.target) p.in.target->fail(why);
      p.in.target.reset();
      for (auto& q : p.out.queue) q->fail(why);
      p.out.queue.clear();
      for (auto& q : p.out.awaiting_ack) q->fail(why);
      p.out.awaiting_ack.clear();
      p.out.busy_ack_slots = 0;
    }
  }

  bool mark_asleep(bool asleep) override {
    my_area_->sleeping.store(asleep ? 1 : 0, std::memory_order_seq_cst);
    // Pairs with the fence of any_asleep / wake_if_sleeping: either the sleeper's look sees the
    // caller's stores, or the caller's look sees the mark. (An asymmetric pair, membarrier on
    // this side and none on the publishers', would save their fence but cost every sleep a round
    // of interrupts on every core, far more where every wait sleeps.)
    if (asleep) std::atomic_thread_fence(std::memory_order_seq_cst);
    return true;
  }

  bool any_asleep(std::span<const int> world_ranks) override {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with mark_asleep's
    for (int r : world_ranks)
      if (r != rank_ && is_local(r) && peer(r).area->sleeping.load(std::memory_order_relaxed))
        return true;
    return false;
  }

  void wake_if_sleeping(std::span<const int> world_ranks) override {
    // Every caller that sees the mark rings: one that cleared it could leave a later caller,
    // whose store the sleeper's look missed, finding no mark and ringing no one.
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with mark_asleep's
    for (int r : world_ranks)
      if (r != rank_ && is_local(r)) ring_if_asleep(*peer(r).area);
  }

  bool peer_on_cpu(int cpu) override {
    if (cpu < 0) return true;
    // Written only when the rank moved: the line stays shared in the peers' caches.
    if (my_area_->cpu.load(std::memory_order_relaxed) != cpu + 1)
      my_area_->cpu.store(cpu + 1, std::memory_order_relaxed);
    for (size_t i = 0; i < peers_.size(); ++i)
      if (i != me_ && peers_[i].area->cpu.load(std::memory_order_relaxed) == cpu + 1) return true;
    return false;
  }

  void notify(int world_rank) override {
    Peer& p = peer(world_rank);
    p.area->doorbell.fetch_add(1, std::memory_order_seq_cst);
    if (p.area->sleeping.load(std::memory_order_seq_cst)) futex(&p.area->doorbell, FUTEX_WAKE, 1, nullptr);
  }

  std::optional<uint64_t> unmatched_tag(int world_rank, uint64_t tag, uint64_t mask) override {
    if (!is_local(world_rank)) return std::nullopt;
    for (const Unexpected& u : peer(world_rank).in.unexpected)
      if ((u.tag & mask) == (tag & mask)) return u.tag;
    return std::nullopt;
  }

  std::optional<std::pair<int, uint64_t>> unmatched_from_any(uint64_t tag, uint64_t mask, UnmatchedFilter accept,
                                                             void* context) override {
    // Only each peer's oldest match: a root that sends ahead leaves many messages of later calls
    // here, and a walk over all of them before every call would cost more than a small call.
    // A stranded message behind a later one is found once that one is taken.
    for (const Peer& p : peers_) {
      if (p.world_rank == rank_) continue;
      for (const Unexpected& u : p.in.unexpected)
        if ((u.tag & mask) == (tag & mask)) {
          if (accept(context, p.world_rank, u.tag)) return std::make_pair(p.world_rank, u.tag);
          break;
        }
    }
    return std::nullopt;
  }

  std::string_view job_aborted() override { return notice_; }

  std::string why_lost(int world_rank) override {
    return is_local(world_rank) ? peer(world_rank).death : std::string();
  }

  bool peer_alive(int world_rank) override {
    if (!is_local(world_rank)) return false;
    check_peers();
    return !peer(world_rank).dead;
  }

  void check_peers(bool force = false) {
    auto now = Clock::now();
    if (!force && now - last_check_ < kPeerCheckInterval) return;
    last_check_ = now;
    for (auto& p : peers_) {
      if (p.dead || p.world_rank == rank_) continue;
      bool gone;
      if (p.pidfd >= 0) {
        pollfd pfd{p.pidfd, POLLIN, 0};
        gone = poll(&pfd, 1, 0) > 0;
      } else {
        gone = kill(p.pid, 0) != 0 && errno == ESRCH;
      }
      if (gone) on_peer_dead(p);
    }
  }

  void on_peer_dead(Peer& p) {
    // Whatever it published before dying is still good: take it first.
    pump_in(p);
    collect_acks(p);
    p.dead = true;
    p.death = "seam shm: local peer rank " + std::to_string(p.world_rank) + " (pid " +
              std::to_string(p.pid) + ") died";
    // Its shared-memory names would outlive it in /dev/shm: nobody else removes them.
    remove_segments_of(p.pid);
    Incoming& in = p.in;
    // A peer that finished and exited is no failure unless something still waits on it.
    const bool matters = in.active || !in.posted.empty() || !p.out.queue.empty() || !p.out.awaiting_ack.empty();
    if (matters)
      log().warn("{}", p.death);
    else
      SEAM_LOG_DEBUG("{}", p.death);
    if (in.active) {
      if (in.target) in.target->fail(p.death + " in the middle of a message to rank " + std::to_string(rank_));
      if (in.buffer) in.unexpected.remove_if([&](const Unexpected& u) { return &u == in.buffer; });
      in.target.reset();
      in.buffer = nullptr;
      in.active = false;
    }
    for (auto& r : in.posted) r->fail(p.death);
    in.posted.clear();
    for (auto& s : p.out.queue) s->fail(p.death);
    p.out.queue.clear();
    for (auto& s : p.out.awaiting_ack) s->fail(p.death);
    p.out.awaiting_ack.clear();
    p.out.busy_ack_slots = 0;
    // Its cma messages died with its memory.
    in.unexpected.remove_if([](const Unexpected& u) { return u.cma; });
  }

  static transport::RequestPtr failed(int peer, const std::string& why) {
    auto r = std::make_shared<transport::Request>(peer);
    r->fail(why);
    return r;
  }

 private:
  int rank_, size_;
  std::vector<int> local_;
  std::vector<int> local_index_;
  std::unique_ptr<SharedSegment> seg_;
  size_t cma_threshold_;
  size_t ring_bytes_ = 0, mask_ = 0;
  size_t me_ = 0;
  RankArea* my_area_ = nullptr;
  SegmentHeader* header_ = nullptr;
  bool abort_seen_ = false;
  std::string notice_;  // another rank's abort, once seen
  std::vector<Peer> peers_;
  uint32_t seen_doorbell_ = 0;
  uint64_t progress_calls_ = 0;
  Clock::time_point last_check_{};
};

}  // namespace

namespace {
/// The inode of this process's PID namespace (0 where /proc does not say).
uint64_t pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}
}  // namespace

std::unique_ptr<ShmTransport> ShmTransport::create(transport::AddressExchange& exchange,
                                                   std::vector<int> local, size_t ring_bytes,
                                                   std::chrono::milliseconds timeout, size_t cma_threshold) {
  const int rank = exchange.rank();
  std::sort(local.begin(), local.end());
  local.erase(std::unique(local.begin(), local.end()), local.end());
  if (!std::binary_search(local.begin(), local.end(), rank)) {
    local.push_back(rank);
    std::sort(local.begin(), local.end());
  }
  const size_t n = local.size();
  // Keep the segment bounded for many local ranks: halve the rings down to 64 KiB.
  while (ring_bytes > (64u << 10) && ring_bytes * n * n > (size_t(512) << 20)) ring_bytes /= 2;
  const size_t bytes = ShmTransportImpl::data_offset(n) + n * n * ring_bytes;
  const int leader = local[0];

  std::unique_ptr<SharedSegment> seg;
  std::string error;
  if (rank == leader) {
    try {
      seg = SharedSegment::create(unique_segment_name("rings"), bytes);
      auto* h = static_cast<SegmentHeader*>(seg->data());
      h->magic = kMagic;
      h->nlocal = n;
      h->ring_bytes = ring_bytes;
      h->abort_claim.store(0);
      h->abort_origin.store(0);
    } catch (const CommError& e) {
      error = e.what();
    }
  }
  // Round 1: pids and their PID namespace, where our CMA probe lives, and each leader's segment
  // name (or why it has none).
  const uint64_t namespace_id = pid_namespace();
  std::string mine = std::to_string(getpid()) + ":" + std::to_string(namespace_id) + "|" +
                     std::to_string(reinterpret_cast<uintptr_t>(&cma_probe)) + "|";
  if (rank == leader) mine += error.empty() ? "S" + seg->name() : "E" + error;
  auto first = exchange.all_gather(mine);
  std::vector<int> pids;
  bool cma_ok = cma_threshold > 0;
  for (int r : local) {
    const std::string& f = first[static_cast<size_t>(r)];
    // Pids (liveness, single-copy reads) mean the same process to local ranks only within one
    // PID namespace: containers of one pod share the host name and /dev/shm, not their pids.
    if (std::strtoull(f.c_str() + f.find(':') + 1, nullptr, 10) != namespace_id)
      throw CommError("seam shm: local rank " + std::to_string(r) + " runs in another PID namespace than rank " +
                      std::to_string(rank) + " (containers?): shared memory needs the ranks of a host in one; "
                      "share it, or give each container its own SEAM_HOSTNAME so they talk over UCX");
    pids.push_back(std::atoi(f.c_str()));
    // Can we read this peer's memory (same user, ptrace policy permitting)?
    uint64_t value = 0;
    const auto* there = reinterpret_cast<const void*>(std::strtoull(f.c_str() + f.find('|') + 1, nullptr, 10));
    if (cma_ok && (read_process_memory(pids.back(), there, &value, sizeof value) != 0 || value != cma_probe))
      cma_ok = false;
  }
  const std::string& lead = first[static_cast<size_t>(leader)];
  std::string lead_payload = lead.substr(lead.find('|', lead.find('|') + 1) + 1);
  if (rank != leader) {
    if (!lead_payload.empty() && lead_payload[0] == 'S') {
      try {
        seg = SharedSegment::open(lead_payload.substr(1), bytes);
        const auto* h = static_cast<SegmentHeader*>(seg->data());
        if (h->magic != kMagic)
          throw CommError("seam shm: segment " + seg->name() + " is not a Seam segment");
        // The layout follows the leader's numbers; this rank mapped by its own.
        if (h->nlocal != n || h->ring_bytes != ring_bytes)
          throw CommError("seam shm: local rank " + std::to_string(rank) + " lays out " +
                          std::to_string(n) + " ranks with " + std::to_string(ring_bytes) +
                          "-byte rings, local rank " + std::to_string(leader) + " " +
                          std::to_string(h->nlocal) + " with " + std::to_string(h->ring_bytes) +
                          "-byte rings: give every rank the same SEAM_SHM_RING_BYTES");
      } catch (const CommError& e) {
        error = e.what();
      }
    } else {
      error = "rank " + std::to_string(leader) + " could not create the segment: " + lead_payload.substr(1);
    }
  }
  // Round 2: everyone has mapped it (or says why not), and whether it can read its peers through
  // CMA (used only when every local rank can); then the name can go.
  auto second = exchange.all_gather(error.empty() ? (cma_ok ? "ok1" : "ok0") : error);
  if (seg && rank == leader) seg->unlink();
  for (int r : local) {
    const std::string& v = second[static_cast<size_t>(r)];
    if (v != "ok1" && v != "ok0")
      throw CommError("seam shm: rank " + std::to_string(r) + " could not map the shared segment: " + v, r);
    if (v == "ok0") cma_ok = false;
  }
  SEAM_LOG_DEBUG("shm: {} local ranks, {}-byte rings, single-copy (CMA) from {} bytes", n, ring_bytes,
                 cma_ok ? std::to_string(cma_threshold) : std::string("never"));
  return std::make_unique<ShmTransportImpl>(rank, exchange.size(), std::move(local), std::move(seg),
                                            std::move(pids), timeout, cma_ok ? cma_threshold : 0);
}

}  // namespace seam::shm
