#include <cstdint>
#include "transports/ucx/ucx_transport.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "seam/errors.h"
#include "layouts/log.h"
#include "transports/shm/pool_allocator.h"

namespace seam::ucx {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kTagMask48 = (uint64_t(1) << kTagBits) - 1;
/// Reserved tag of abort notices (the communicator's tags never reach it: kind 3 is unused).
constexpr uint64_t kAbortTag = kTagMask48;
constexpr auto kPeerCheckInterval = std::chrono::milliseconds(5);

std::string status_text(ucs_status_t s) { return ucs_status_string(s); }

/// Where TCP is the only network, messages below this size go eager instead of by UCX's
/// rendezvous. With peer error handling (which Seam needs to notice a dead host), UCX 1.13 gives
/// TCP endpoints no RMA lane, so its rendezvous is a handshake and then active messages anyway
/// (Open MPI, without peer error handling, keeps the lane): eager moves the same bytes without
/// the handshake. Ring chunks (256 KiB) stay under it; larger point-to-point messages keep the
/// rendezvous (no unexpected copy of a whole large message at the receiver).
constexpr const char* kTcpEagerBelow = "1M";

/// UCX's transports, and names of sets of them in UCX_TLS, that do not reach other hosts.
bool local_transport(std::string_view tl) {
  for (std::string_view name : {"self", "posix", "sysv", "cma", "knem", "xpmem", "mm", "sm", "shm",
                                "cuda_copy", "cuda_ipc", "gdr_copy", "cuda", "rocm_copy", "rocm_ipc", "rocm",
                                "ze_copy", "ze_ipc", "ze_gpu"})
    if (tl == name) return true;
  return false;
}

/// Whether TCP is the only way UCX reaches other hosts here: UCX_TLS, where it lists what to
/// use, names no other network transport; otherwise the machine has no other (no RDMA device).
bool tcp_only_network() {
  std::vector<std::string> tls;
  const std::string_view chosen = std::getenv("UCX_TLS") ? std::getenv("UCX_TLS") : "";
  if (!chosen.empty() && chosen.front() != '^' && chosen != "all") {
    for (size_t at = 0; at <= chosen.size();) {
      const size_t comma = std::min(chosen.find(',', at), chosen.size());
      std::string_view tl = chosen.substr(at, comma - at);
      if (!tl.empty() && tl.front() == '\\') tl.remove_prefix(1);  // "\\name": exactly that one
      if (!tl.empty()) tls.emplace_back(tl);
      at = comma + 1;
    }
  } else {
    for (const std::string& t : available_transports()) tls.push_back(t.substr(0, t.find('/')));
  }
  for (const std::string& tl : tls)
    if (tl != "tcp" && !local_transport(tl)) return false;
  return true;
}

struct Peer;

/// A pending operation; linked into its peer's list so a dead peer can fail it.
struct UcxRequest final : transport::Request {
  UcxRequest(int peer, bool is_recv, size_t cap) : Request(peer), is_recv(is_recv), cap(cap) {}
  bool is_recv;
  size_t cap;
  void* ucx = nullptr;                       // UCX's request handle while pending
  std::shared_ptr<UcxRequest> self;          // keeps us alive until UCX calls back
  bool released = false;                     // freed on UCX's side at shutdown
  UcxRequest* prev = nullptr;
  UcxRequest* next = nullptr;
  Peer* owner = nullptr;
};

struct Peer {
  int rank = -1;
  std::string host;
  int pid = 0;
  int pidfd = -1;
  bool local = false;
  ucp_ep_h ep = nullptr;
  bool dead = false;
  std::string death;
  UcxRequest* pending = nullptr;  // intrusive list of pending requests
  std::shared_ptr<transport::Request> completed_send;
  class UcxTransportImpl* transport = nullptr;

  void link(UcxRequest* r) {
    r->owner = this;
    r->next = pending;
    if (pending) pending->prev = r;
    pending = r;
  }
  void unlink(UcxRequest* r) {
    if (r->prev) r->prev->next = r->next;
    else if (pending == r) pending = r->next;
    if (r->next) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    r->owner = nullptr;
  }
};

class UcxTransportImpl final : public UcxTransport {
 public:
  UcxTransportImpl(int rank, int size, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), peers_(static_cast<size_t>(size)) {}

  ~UcxTransportImpl() override { shutdown(); }

  void init(transport::AddressExchange& ex, const std::vector<std::string>& hosts, const std::vector<int>& pids,
            bool same_host_traffic) {
    ucp_config_t* config = nullptr;
    ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
    if (s != UCS_OK) throw CommError("seam ucx: ucp_config_read: " + status_text(s));
    // Only for traffic between hosts: UCX's shared-memory rendezvous is a single copy.
    if (!same_host_traffic && std::getenv("UCX_RNDV_THRESH") == nullptr && tcp_only_network()) {
      s = ucp_config_modify(config, "RNDV_THRESH", kTcpEagerBelow);
      if (s == UCS_OK)
        SEAM_LOG_DEBUG("ucx: TCP is the only network: messages under {} bytes go eager", kTcpEagerBelow);
      else
        log().warn("ucx: cannot set RNDV_THRESH={}: {}", kTcpEagerBelow, status_text(s));
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.estimated_num_eps = static_cast<size_t>(size_);
    s = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (s != UCS_OK) throw CommError("seam ucx: ucp_init: " + status_text(s));

    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // driven by one thread at a time (see comm_internal.h)
    s = ucp_worker_create(context_, &wp, &worker_);
    if (s != UCS_OK) throw CommError("seam ucx: ucp_worker_create: " + status_text(s));
    s = ucp_worker_get_efd(worker_, &efd_);
    if (s != UCS_OK) throw CommError("seam ucx: ucp_worker_get_efd: " + status_text(s));

    ucp_address_t* address = nullptr;
    size_t address_len = 0;
    s = ucp_worker_get_address(worker_, &address, &address_len);
    if (s != UCS_OK) throw CommError("seam ucx: ucp_worker_get_address: " + status_text(s));
    std::string mine(reinterpret_cast<const char*>(address), address_len);
    ucp_worker_release_address(worker_, address);
    auto all = ex.all_gather(mine);

    for (int r = 0; r < size_; ++r) {
      Peer& p = peers_[static_cast<size_t>(r)];
      p.rank = r;
      p.transport = this;
      p.host = hosts[static_cast<size_t>(r)];
      p.pid = pids[static_cast<size_t>(r)];
      p.local = p.host == hosts[static_cast<size_t>(rank_)];
      p.completed_send = std::make_shared<transport::Request>(r);
      p.completed_send->complete();
      if (p.local && r != rank_) p.pidfd = static_cast<int>(syscall(SYS_pidfd_open, p.pid, 0));
      ucp_ep_params_t ep{};
      ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.address = reinterpret_cast<const ucp_address_t*>(all[static_cast<size_t>(r)].data());
      // Peer error handling makes UCX 1.13 drop its shared-memory transports (posix, sysv, cma)
      // and talk to a same-host peer over TCP loopback, at far higher latency. Same-host peers are
      // watched through their pids instead (check_peers), so they need no UCX error handling.
      ep.err_mode = p.local ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
      ep.err_handler.cb = &UcxTransportImpl::on_ep_error;
      ep.err_handler.arg = &p;
      s = ucp_ep_create(worker_, &ep, &p.ep);
      if (s != UCS_OK)
        throw CommError("seam ucx: cannot create an endpoint to rank " + std::to_string(r) + " (host " + p.host +
                            "): " + status_text(s),
                        r);
    }
    post_abort_receive();
    SEAM_LOG_DEBUG("ucx: rank {} of {}: worker address {} bytes, {} endpoints", rank_, size_, mine.size(), size_);
  }

  void shutdown() {
    if (!worker_) {
      if (context_) ucp_cleanup(context_);
      context_ = nullptr;
      return;
    }
    if (abort_request_) ucp_request_cancel(worker_, abort_request_);  // on_abort_notice frees it
    // Anything still pending means the job is being torn down after a failure: cancel receives,
    // force-close every endpoint (a flush could wait forever on a cut link), and give UCX a
    // moment to call back. Otherwise close gracefully (flush), bounded.
    bool aborting = false;
    for (auto& p : peers_) {
      std::vector<std::shared_ptr<UcxRequest>> pending;
      for (UcxRequest* r = p.pending; r; r = r->next) pending.push_back(r->self);
      aborting |= !pending.empty();
      for (auto& r : pending)
        if (r->is_recv && r->ucx && r->ucx != reinterpret_cast<void*>(1)) ucp_request_cancel(worker_, r->ucx);
    }
    std::vector<void*> closing;
    for (auto& p : peers_) {
      if (!p.ep) continue;
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = p.dead || aborting ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      void* r = ucp_ep_close_nbx(p.ep, &prm);
      if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
      p.ep = nullptr;
    }
    auto busy = [&] {
      for (void* r : closing)
        if (ucp_request_check_status(r) == UCS_INPROGRESS) return true;
      for (auto& p : peers_)
        if (p.pending) return true;
      return false;
    };
    const auto deadline = Clock::now() + std::chrono::milliseconds(aborting ? 200 : 1000);
    while (busy() && Clock::now() < deadline) ucp_worker_progress(worker_);
    for (void* r : closing) ucp_request_free(r);
    // Requests UCX never finished: release them (UCX frees them once done) and keep our side
    // alive, since UCX may still call back into it.
    for (auto& p : peers_)
      for (UcxRequest* r = p.pending; r; r = r->next) {
        r->released = true;
        if (r->ucx && r->ucx != reinterpret_cast<void*>(1)) ucp_request_free(r->ucx);
        if (!r->finished()) r->fail("seam ucx: transport shut down");
        [[maybe_unused]] auto* leaked = new std::shared_ptr<UcxRequest>(r->self);
      }
    for (auto& p : peers_)
      if (p.pidfd >= 0) close(p.pidfd);
    ucp_worker_destroy(worker_);
    worker_ = nullptr;
    ucp_cleanup(context_);
    context_ = nullptr;
  }

  std::string_view name() const override { return "ucx"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::string describe() const override { return "ucx " + version(); }

  Peer& peer(int r) {
    if (r < 0 || r >= size_) throw UsageError("seam ucx: no rank " + std::to_string(r));
    return peers_[static_cast<size_t>(r)];
  }

  static uint64_t wire_tag(int source, uint64_t tag) {
    if (tag & ~kTagMask48)
      throw UsageError("seam ucx: tag " + std::to_string(tag) + " uses more than the transport's 48 bits");
    return (static_cast<uint64_t>(source) << kTagBits) | tag;
  }

  static transport::RequestPtr failed(int peer, const std::string& why) {
    auto r = std::make_shared<transport::Request>(peer);
    r->fail(why);
    return r;
  }

  // ---- operations ---------------------------------------------------------------------------

  transport::RequestPtr isend(int world_peer, uint64_t tag, const void* data, size_t bytes) override {
    Peer& p = peer(world_peer);
    if (p.dead) return failed(world_peer, p.death);
    auto req = detail::make_pooled<UcxRequest>(world_peer, false, bytes);
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    prm.cb.send = &UcxTransportImpl::on_send;
    prm.user_data = req.get();
    prm.memory_type = UCS_MEMORY_TYPE_HOST;
    void* r = ucp_tag_send_nbx(p.ep, data, bytes, wire_tag(rank_, tag), &prm);
    if (r == nullptr) return p.completed_send;
    if (UCS_PTR_IS_ERR(r)) return failed(world_peer, send_error(p, UCS_PTR_STATUS(r)));
    req->ucx = r;
    req->self = req;
    p.link(req.get());
    return req;
  }

  transport::RequestPtr irecv(int world_peer, uint64_t tag, void* data, size_t bytes) override {
    Peer& p = peer(world_peer);
    auto req = detail::make_pooled<UcxRequest>(world_peer, true, bytes);
    ucp_request_param_t prm{};
    // UCX 1.13 reports no length for a receive completed inside the call (its recv_info stays
    // zero), so completion always goes through the callback, which may run inside the call:
    // everything the callback touches is set up before it.
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv = &UcxTransportImpl::on_recv;
    prm.user_data = req.get();
    prm.memory_type = UCS_MEMORY_TYPE_HOST;
    req->self = req;
    p.link(req.get());
    req->ucx = reinterpret_cast<void*>(1);  // pending, handle not known yet
    void* r = ucp_tag_recv_nbx(worker_, data, bytes, wire_tag(world_peer, tag), ~uint64_t(0), &prm);
    if (UCS_PTR_IS_ERR(r)) {
      p.unlink(req.get());
      req->self.reset();
      req->ucx = nullptr;
      req->fail(recv_error(p, UCS_PTR_STATUS(r), bytes));
      return req;
    }
    if (req->ucx == nullptr) return req;  // the callback already ran (and freed UCX's request)
    req->ucx = r;
    if (p.dead) {
      // Whatever it sent before dying has been matched above; nothing more will come.
      req->fail(p.death);
      ucp_request_cancel(worker_, r);
    }
    return req;
  }

  std::string send_error(const Peer& p, ucs_status_t s) const {
    return p.dead ? p.death
                  : "seam ucx: send to rank " + std::to_string(p.rank) + " (host " + p.host + ") failed: " + status_text(s);
  }
  std::string recv_error(const Peer& p, ucs_status_t s, size_t cap) const {
    if (s == UCS_ERR_MESSAGE_TRUNCATED)
      return "seam ucx: size mismatch: a message from rank " + std::to_string(p.rank) + " is larger than the " +
             std::to_string(cap) + "-byte receive posted for it";
    if (p.dead) return p.death;
    return "seam ucx: receive from rank " + std::to_string(p.rank) + " failed: " + status_text(s);
  }

  static void finish(UcxRequest* r, void* ucx_request) {
    std::shared_ptr<UcxRequest> keep = std::move(r->self);
    if (r->owner) r->owner->unlink(r);
    r->ucx = nullptr;
    if (!r->released) ucp_request_free(ucx_request);
  }

  static void on_send(void* request, ucs_status_t status, void* user_data) {
    auto* r = static_cast<UcxRequest*>(user_data);
    Peer* p = r->owner;
    if (!r->finished()) {
      if (status == UCS_OK) r->complete();
      else r->fail(p ? p->transport->send_error(*p, status) : "seam ucx: send failed: " + status_text(status));
    }
    finish(r, request);
  }

  static void on_recv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
    auto* r = static_cast<UcxRequest*>(user_data);
    Peer* p = r->owner;
    if (!r->finished()) {
      if (status == UCS_OK) r->complete(info ? info->length : 0);
      else r->fail(p ? p->transport->recv_error(*p, status, r->cap) : "seam ucx: receive failed: " + status_text(status));
    }
    finish(r, request);
  }

  // ---- abort notices -------------------------------------------------------------------------

  /// One receive, from any source, for the reserved abort tag.
  void post_abort_receive() {
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv = &UcxTransportImpl::on_abort_notice;
    prm.user_data = this;
    void* r = ucp_tag_recv_nbx(worker_, abort_buffer_, sizeof(abort_buffer_), kAbortTag, kTagMask48, &prm);
    abort_request_ = UCS_PTR_IS_PTR(r) ? r : nullptr;
  }

  static void on_abort_notice(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
    auto* t = static_cast<UcxTransportImpl*>(user_data);
    t->abort_request_ = nullptr;
    ucp_request_free(request);
    if (status != UCS_OK || t->abort_seen_) return;
    t->abort_seen_ = true;
    // "<origin rank>\n<reason>"
    const std::string notice(t->abort_buffer_, std::min(info->length, sizeof(t->abort_buffer_)));
    const auto nl = notice.find('\n');
    const std::string why = "seam ucx: rank " + notice.substr(0, nl) + " aborted the job: " +
                            (nl == std::string::npos ? std::string() : notice.substr(nl + 1));
    SEAM_LOG_DEBUG("{}", why);
    t->notice_ = why;
    for (auto& p : t->peers_)
      if (p.rank != t->rank_) t->mark_dead(p, why);
  }

  std::string_view job_aborted() override { return notice_; }

  std::string abort_notice(std::chrono::milliseconds wait) override {
    const auto deadline = Clock::now() + wait;
    while (notice_.empty() && !abort_seen_ && Clock::now() < deadline)
      if (!ucp_worker_progress(worker_)) wait_for_activity(std::chrono::milliseconds(1));
    return notice_;
  }

  void broadcast_abort(const std::string& reason) override {
    if (abort_seen_) return;  // someone else's abort, already sent to everyone
    abort_seen_ = true;
    abort_message_ = (std::to_string(rank_) + "\n" + reason).substr(0, sizeof(abort_buffer_));
    std::vector<void*> sends;
    for (auto& p : peers_) {
      if (p.rank == rank_ || p.dead || !p.ep) continue;
      ucp_request_param_t prm{};
      void* r = ucp_tag_send_nbx(p.ep, abort_message_.data(), abort_message_.size(), wire_tag(rank_, kAbortTag), &prm);
      if (UCS_PTR_IS_PTR(r)) sends.push_back(r);
    }
    // Push them out (bounded: a peer behind a cut link never takes its notice).
    const auto deadline = Clock::now() + std::chrono::milliseconds(100);
    auto pending = [&] {
      for (void* r : sends)
        if (ucp_request_check_status(r) == UCS_INPROGRESS) return true;
      return false;
    };
    while (pending() && Clock::now() < deadline) ucp_worker_progress(worker_);
    for (void* r : sends) ucp_request_free(r);
  }

  static void on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* p = static_cast<Peer*>(arg);
    p->transport->mark_dead(*p, "seam ucx: connection to rank " + std::to_string(p->rank) + " (host " + p->host +
                                    ") failed: " + status_text(status));
  }

  void mark_dead(Peer& p, const std::string& why) {
    if (p.dead) return;
    p.dead = true;
    p.death = why;
    if (p.pending)
      log().warn("{}", why);
    else
      SEAM_LOG_DEBUG("{}", why);
    // Fail what is pending now; cancel receives so UCX never writes into them later (a cancel
    // may call back and unlink at once, hence the copy).
    std::vector<std::shared_ptr<UcxRequest>> pending;
    for (UcxRequest* r = p.pending; r; r = r->next) pending.push_back(r->self);
    for (auto& r : pending) {
      r->fail(why);
      if (r->is_recv && r->ucx && r->ucx != reinterpret_cast<void*>(1)) ucp_request_cancel(worker_, r->ucx);
    }
  }

  // ---- progress and waiting -----------------------------------------------------------------

  bool progress() override {
    bool moved = ucp_worker_progress(worker_) != 0;
    if (++progress_calls_ % 256 == 0) check_peers();
    return moved;
  }

  void wait_for_activity(std::chrono::microseconds max) override {
    check_peers();
    if (ucp_worker_progress(worker_)) return;
    ucs_status_t s = ucp_worker_arm(worker_);
    if (s == UCS_ERR_BUSY) return;  // events are waiting: the caller progresses
    if (s != UCS_OK) return;
    auto us = std::clamp<int64_t>(max.count(), 1, std::chrono::duration_cast<std::chrono::microseconds>(kPeerCheckInterval).count());
    timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
    pollfd pfd{efd_, POLLIN, 0};
    ppoll(&pfd, 1, &ts, nullptr);
  }

  bool peer_alive(int r) override {
    check_peers();
    return !peer(r).dead;
  }

  std::string why_lost(int r) override { return peer(r).death; }

  std::optional<uint64_t> unmatched_tag(int r, uint64_t tag, uint64_t mask) override {
    ucp_tag_recv_info_t info{};
    // Not removed: the message stays for the receive that may still come.
    if (ucp_tag_probe_nb(worker_, wire_tag(r, tag), mask | ~kTagMask48, 0, &info) == nullptr)
      return std::nullopt;
    return info.sender_tag & kTagMask48;
  }

  std::optional<std::pair<int, uint64_t>> unmatched_from_any(uint64_t tag, uint64_t mask, UnmatchedFilter accept,
                                                             void* context) override {
    ucp_tag_recv_info_t info{};
    // From any source (its bits left out of the mask); UCX shows the oldest match only.
    if (ucp_tag_probe_nb(worker_, tag & kTagMask48, mask & kTagMask48, 0, &info) == nullptr) return std::nullopt;
    const int source = static_cast<int>(info.sender_tag >> kTagBits);
    const uint64_t found = info.sender_tag & kTagMask48;
    if (!accept(context, source, found)) return std::nullopt;
    return std::make_pair(source, found);
  }

  bool arm() override {
    check_peers();
    if (ucp_worker_progress(worker_)) return false;
    return ucp_worker_arm(worker_) == UCS_OK;
  }
  int event_fd() const override { return efd_; }

  void check_peers(bool force = false) {
    auto now = Clock::now();
    if (!force && now - last_check_ < kPeerCheckInterval) return;
    last_check_ = now;
    for (auto& p : peers_) {
      if (p.dead || p.pidfd < 0) continue;
      pollfd pfd{p.pidfd, POLLIN, 0};
      if (poll(&pfd, 1, 0) > 0) {
        // UCX's shared-memory transports do not notice a dead peer by themselves.
        while (ucp_worker_progress(worker_)) {
        }  // take what it sent before dying
        mark_dead(p, "seam ucx: local peer rank " + std::to_string(p.rank) + " (pid " + std::to_string(p.pid) + ") died");
      }
    }
  }

 private:
  int rank_, size_;
  std::vector<Peer> peers_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  uint64_t progress_calls_ = 0;
  void* abort_request_ = nullptr;
  char abort_buffer_[448];
  std::string abort_message_;
  bool abort_seen_ = false;  // a notice arrived or this rank sent its own
  std::string notice_;       // why, from the notice that arrived
  Clock::time_point last_check_{};
};

}  // namespace

std::unique_ptr<UcxTransport> UcxTransport::create(transport::AddressExchange& exchange,
                                                   const std::vector<std::string>& hosts,
                                                   const std::vector<int>& pids,
                                                   std::chrono::milliseconds timeout,
                                                   bool same_host_traffic) {
  if (exchange.size() > 65535) throw NotSupportedError("seam ucx: more than 65535 ranks");
  auto t = std::make_unique<UcxTransportImpl>(exchange.rank(), exchange.size(), timeout);
  t->init(exchange, hosts, pids, same_host_traffic);
  return t;
}

std::vector<std::string> available_transports() {
  std::vector<std::string> out;
  uct_component_h* components = nullptr;
  unsigned ncomponents = 0;
  if (uct_query_components(&components, &ncomponents) != UCS_OK) return out;
  for (unsigned c = 0; c < ncomponents; ++c) {
    uct_component_attr_t attr{};
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    if (uct_component_query(components[c], &attr) != UCS_OK) continue;
    for (auto& md_desc : mds) {
      uct_md_config_t* md_config = nullptr;
      if (uct_md_config_read(components[c], nullptr, nullptr, &md_config) != UCS_OK) continue;
      uct_md_h md = nullptr;
      ucs_status_t s = uct_md_open(components[c], md_desc.md_name, md_config, &md);
      uct_config_release(md_config);
      if (s != UCS_OK) continue;
      uct_tl_resource_desc_t* tls = nullptr;
      unsigned ntls = 0;
      if (uct_md_query_tl_resources(md, &tls, &ntls) == UCS_OK) {
        for (unsigned t = 0; t < ntls; ++t) out.push_back(std::string(tls[t].tl_name) + "/" + tls[t].dev_name);
        uct_release_tl_resource_list(tls);
      }
      uct_md_close(md);
    }
  }
  uct_release_component_list(components);
  return out;
}

bool cuda_memory_supported() {
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return false;
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context = nullptr;
  const ucs_status_t status = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (status != UCS_OK) return false;
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  const bool cuda = ucp_context_query(context, &attr) == UCS_OK &&
                    (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  ucp_cleanup(context);
  return cuda;
}

std::string version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace seam::ucx
