#include "runtime/bootstrap/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "layouts/config.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "layouts/sha256.h"
#include "runtime/bootstrap/bootstrap.h"

namespace seam::bootstrap {

using Clock = std::chrono::steady_clock;

namespace {

// ---- encoding -------------------------------------------------------------------------------

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& b, uint64_t v) {
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put_u32(b, static_cast<uint32_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

/// Reads fields of one body; every read checks bounds and throws ValueError when the body is
/// shorter than its fields claim.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() {
    need(1);
    return p_[off_++];
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p_[off_ + i]) << (8 * i);
    off_ += 4;
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p_[off_ + i]) << (8 * i);
    off_ += 8;
    return v;
  }
  std::string str(size_t max) {
    uint32_t len = u32();
    if (len > max)
      throw ValueError("string field of " + std::to_string(len) + " bytes exceeds the limit of " +
                       std::to_string(max));
    need(len);
    std::string s(reinterpret_cast<const char*>(p_ + off_), len);
    off_ += len;
    return s;
  }
  void end() const {
    if (off_ != n_)
      throw ValueError(std::to_string(n_ - off_) + " unexpected trailing bytes after the fields");
  }

 private:
  void need(size_t k) const {
    if (n_ - off_ < k)
      throw ValueError("body of " + std::to_string(n_) + " bytes is shorter than its fields");
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
};

std::vector<uint8_t> frame(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> f;
  f.reserve(body.size() + 4);
  put_u32(f, static_cast<uint32_t>(body.size()));
  f.insert(f.end(), body.begin(), body.end());
  return f;
}

std::vector<uint8_t> error_body(const std::string& msg) {
  std::vector<uint8_t> b{static_cast<uint8_t>(StoreOp::error)};
  put_str(b, msg);
  return b;
}

std::string random_nonce() {
  std::string n(kNonceBytes, '\0');
  size_t got = 0;
  while (got < n.size()) {
    const ssize_t r = getrandom(n.data() + got, n.size() - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw CommError(std::string("seam store: no random bytes: ") + strerror(errno));
    got += static_cast<size_t>(r);
  }
  return n;
}

/// What one side sends to prove it knows the token: bound to both nonces, the rank and the side,
/// so an answer cannot be replayed or reflected.
std::string proof(const std::string& token, const char* side, const std::string& client_nonce,
                  const std::string& server_nonce, int rank) {
  std::string message = std::string("seam-store-v2 ") + side;
  message += client_nonce;
  message += server_nonce;
  message += std::to_string(rank);
  const auto d = hmac_sha256(token, message);
  return std::string(d.begin(), d.end());
}

/// Warnings about unauthenticated peers: at most one a second, with a count of those left out.
class RateLimitedWarning {
 public:
  void operator()(const std::string& message) {
    const auto now = Clock::now();
    if (now < next_) {
      ++suppressed_;
      return;
    }
    if (suppressed_)
      log().warn("{} ({} more rejections of unauthenticated peers not shown since the last such warning)", message,
                 suppressed_);
    else
      log().warn("{}", message);
    suppressed_ = 0;
    next_ = now + std::chrono::seconds(1);
  }

 private:
  Clock::time_point next_{};
  uint64_t suppressed_ = 0;
};

std::string peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "?";
  return std::string(host) + ":" + port;
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// Waits until `fd` has one of `events` or `deadline` passes (false), through signals. An error
/// on the socket counts as ready: the caller's next call on it reports the error.
bool poll_until(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT32_MAX)));
    if (n > 0 || (n < 0 && errno != EINTR)) return true;
  }
}

/// connect() that gives up at `deadline` (a blocking connect to an address that drops SYNs
/// waits out the kernel's retries, about two minutes). 0 or the errno. The socket stays
/// non-blocking, so that every later write and read also keeps its deadline.
int connect_before(int fd, const sockaddr* address, socklen_t length, Clock::time_point deadline) {
  set_nonblocking(fd);
  int err = connect(fd, address, length) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    socklen_t size = sizeof err;
    if (!poll_until(fd, POLLOUT, deadline)) err = ETIMEDOUT;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &size) != 0) err = errno;
  }
  return err;
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// Writes everything (blocking socket, or a non-blocking one that we poll for writability).
bool write_all(int fd, const uint8_t* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!poll_until(fd, POLLOUT, deadline)) return false;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

std::pair<std::string, uint16_t> parse_host_port(const std::string& addr) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size())
    throw ValueError("seam store address must be host:port, got '" + addr + "'");
  std::string host = addr.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  long port = std::strtol(addr.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535)
    throw ValueError("seam store address has a bad port: '" + addr + "'");
  return {host, static_cast<uint16_t>(port)};
}

// ---- server ---------------------------------------------------------------------------------

void check_job_token(const std::string& token) {
  if (token.empty())
    throw ValueError("seam store bootstrap: SEAM_JOB_TOKEN must be set (a secret shared by the job's ranks)");
  std::set<char> distinct(token.begin(), token.end());
  if (token.size() < kMinJobTokenChars || distinct.size() < 8)
    throw ValueError("seam store bootstrap: SEAM_JOB_TOKEN is too weak (" + std::to_string(token.size()) +
                     " characters, " + std::to_string(distinct.size()) + " distinct): use at least " +
                     std::to_string(kMinJobTokenChars) +
                     " random characters, e.g. SEAM_JOB_TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')");
}

struct StoreServer::State {
  enum class Stage { hello, challenged, authenticated };
  struct Conn {
    int fd = -1;
    std::string name;
    int rank = -1;  // -1 until authenticated
    Stage stage = Stage::hello;
    Clock::time_point accepted;
    size_t bytes_before_auth = 0;
    int claimed_rank = -1;
    std::string client_nonce, server_nonce;
    std::vector<uint8_t> in;
    bool closing = false;
    bool said_bye = false;
  };
  struct Waiter {
    int fd;
    std::vector<std::string> keys;
    Clock::time_point deadline;
  };

  int listen_fd = -1;
  int wake_pipe[2] = {-1, -1};
  int world_size;
  std::string token;
  StoreLimits limits;
  RateLimitedWarning warn_unauthenticated;
  Clock::time_point accept_paused_until{};
  int unauthenticated = 0;
  uint16_t port = 0;
  std::map<int, Conn> conns;
  std::map<std::string, std::string> kv;
  std::vector<Waiter> waiters;
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::vector<uint8_t>* replies = nullptr;  ///< set by the fuzz target: replies land here, not on a socket

  std::mutex mu;
  std::condition_variable cv;
  std::set<int> joined;  // ranks that authenticated
  std::set<int> left;    // ranks that said BYE or disconnected after authenticating
  std::set<int> lost;    // ranks that disconnected after authenticating without a BYE

  void run();
  void accept_new();
  void read_from(Conn& c);
  /// Buffers bytes `c` sent and handles every complete frame among them.
  void consume(Conn& c, const uint8_t* p, size_t n);
  void handle(Conn& c, const uint8_t* body, size_t n);
  void reply(Conn& c, const std::vector<uint8_t>& body) {
    auto f = frame(body);
    if (replies) {  // fuzzing: no socket behind the connection
      replies->insert(replies->end(), f.begin(), f.end());
      return;
    }
    // An unauthenticated peer that does not read gets nothing more: the server never waits on one.
    const auto patience = c.rank >= 0 ? std::chrono::seconds(5) : std::chrono::seconds(0);
    if (!write_all(c.fd, f.data(), f.size(), Clock::now() + patience)) c.closing = true;
  }
  void reject(Conn& c, const std::string& why) {
    const std::string message = "seam store: rejecting " + c.name + " (" +
                                (c.rank >= 0 ? "rank " + std::to_string(c.rank) : "unauthenticated") + "): " + why;
    if (c.rank >= 0) log().warn("{}", message);
    else warn_unauthenticated(message);
    reply(c, error_body("seam store: " + why));
    c.closing = true;
  }
  void expire_unauthenticated(Clock::time_point now);
  void evict_oldest_unauthenticated(const char* why);
  void serve_waiters();
  void drop(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    if (it->second.rank >= 0) {
      std::lock_guard lk(mu);
      left.insert(it->second.rank);
      if (!it->second.said_bye) lost.insert(it->second.rank);
      cv.notify_all();
    }
    waiters.erase(std::remove_if(waiters.begin(), waiters.end(), [&](const Waiter& w) { return w.fd == fd; }),
                  waiters.end());
    if (it->second.rank < 0) --unauthenticated;
    ::close(fd);
    conns.erase(it);
  }
};

StoreServer::StoreServer(const std::string& addr, int world_size, std::string token, StoreLimits limits)
    : state_(std::make_unique<State>()) {
  auto [host, port] = parse_host_port(addr);
  state_->world_size = world_size;
  state_->token = std::move(token);
  state_->limits = limits;
  if (limits.max_unauthenticated < 1) throw ValueError("seam store: max_unauthenticated must be positive");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int gai = getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (gai != 0) throw CommError("seam store: cannot resolve '" + host + "': " + gai_strerror(gai));
  std::string last_error;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    int rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EADDRNOTAVAIL) {
      // Listening on every interface instead would expose the store where the user did not ask.
      last_error = "'" + host + "' is not an address of this host (rank 0 serves the store on one of its own "
                   "addresses; name it, or 0.0.0.0 to listen on every interface)";
      ::close(fd);
      continue;
    }
    if (rc == 0 && listen(fd, 1024) == 0) {
      state_->listen_fd = fd;
      break;
    }
    last_error = strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(res);
  if (state_->listen_fd < 0)
    throw CommError("seam store: cannot listen on " + addr + ": " + last_error);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(state_->listen_fd, reinterpret_cast<sockaddr*>(&ss), &len);
  state_->port = ntohs(ss.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                               : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  set_nonblocking(state_->listen_fd);
  if (pipe2(state_->wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw CommError("seam store: pipe failed");
  state_->thread = std::thread([s = state_.get()] { s->run(); });
  SEAM_LOG_DEBUG("seam store: serving {} ranks on {}", world_size, addr);
}

StoreServer::~StoreServer() {
  stop();
  if (state_->listen_fd >= 0) ::close(state_->listen_fd);
  for (int fd : state_->wake_pipe)
    if (fd >= 0) ::close(fd);
}

uint16_t StoreServer::port() const { return state_->port; }

void StoreServer::stop() {
  if (!state_->thread.joinable()) return;
  state_->stopping = true;
  char c = 1;
  [[maybe_unused]] ssize_t w = write(state_->wake_pipe[1], &c, 1);
  state_->thread.join();
  for (auto& [fd, conn] : state_->conns) ::close(fd);
  state_->conns.clear();
}

bool StoreServer::wait_all_left(std::chrono::milliseconds timeout) {
  std::unique_lock lk(state_->mu);
  return state_->cv.wait_for(lk, timeout, [&] {
    return static_cast<int>(state_->left.size()) >= state_->world_size;
  });
}

void StoreServer::State::run() {
  std::vector<pollfd> fds;
  while (!stopping) {
    fds.clear();
    auto now = Clock::now();
    fds.push_back({wake_pipe[0], POLLIN, 0});
    // Out of descriptors: stop accepting a moment rather than spin on the ready listener.
    fds.push_back({now < accept_paused_until ? -1 : listen_fd, POLLIN, 0});
    for (auto& [fd, c] : conns) fds.push_back({fd, POLLIN, 0});
    int timeout_ms = 1000;
    auto shorten = [&](Clock::time_point t) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left + 1, 0, timeout_ms));
    };
    for (auto& w : waiters) shorten(w.deadline);
    for (auto& [fd, c] : conns)
      if (c.rank < 0) shorten(c.accepted + limits.auth_timeout);
    if (now < accept_paused_until) shorten(accept_paused_until);
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) break;
    if (stopping) break;
    if (fds[1].revents & POLLIN) accept_new();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = conns.find(fds[i].fd);
      if (it == conns.end()) continue;
      read_from(it->second);
    }
    serve_waiters();
    expire_unauthenticated(Clock::now());
    std::vector<int> dead;
    for (auto& [fd, c] : conns)
      if (c.closing) dead.push_back(fd);
    for (int fd : dead) drop(fd);
  }
}

void StoreServer::State::accept_new() {
  while (true) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (unauthenticated > 0) {
          evict_oldest_unauthenticated("out of descriptors");
          continue;
        }
        accept_paused_until = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    // The oldest unauthenticated peer makes room: a real rank's handshake takes a round trip, a
    // flood's connections linger, so the newest ones are the likeliest to be real.
    if (unauthenticated >= limits.max_unauthenticated) evict_oldest_unauthenticated("too many unauthenticated connections");
    set_nodelay(fd);
    Conn c;
    c.fd = fd;
    c.name = peer_name(fd);
    c.accepted = Clock::now();
    conns.emplace(fd, std::move(c));
    ++unauthenticated;
  }
}

void StoreServer::State::evict_oldest_unauthenticated(const char* why) {
  auto oldest = conns.end();
  for (auto it = conns.begin(); it != conns.end(); ++it)
    if (it->second.rank < 0 && (oldest == conns.end() || it->second.accepted < oldest->second.accepted)) oldest = it;
  if (oldest == conns.end()) return;
  warn_unauthenticated("seam store: dropping unauthenticated " + oldest->second.name + ": " + why + " (limit " +
                       std::to_string(limits.max_unauthenticated) + ")");
  drop(oldest->first);
}

void StoreServer::State::expire_unauthenticated(Clock::time_point now) {
  for (auto& [fd, c] : conns)
    if (c.rank < 0 && !c.closing && now >= c.accepted + limits.auth_timeout)
      reject(c, "did not authenticate within " + std::to_string(limits.auth_timeout.count()) + " ms");
}

void StoreServer::State::read_from(Conn& c) {
  uint8_t buf[65536];
  while (!c.closing) {
    ssize_t r = ::recv(c.fd, buf, sizeof(buf), 0);
    if (r == 0) {
      c.closing = true;
      break;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.closing = true;
      break;
    }
    consume(c, buf, static_cast<size_t>(r));
  }
}

void StoreServer::State::consume(Conn& c, const uint8_t* p, size_t n) {
  if (c.rank < 0) {
    c.bytes_before_auth += n;
    if (c.bytes_before_auth > kMaxBytesBeforeAuth) {
      reject(c, "sent more than " + std::to_string(kMaxBytesBeforeAuth) + " bytes before authenticating");
      return;
    }
  }
  c.in.insert(c.in.end(), p, p + n);
  // Parse every complete frame; check the announced length before buffering more of it.
  size_t off = 0;
  while (!c.closing && c.in.size() - off >= 4) {
    uint32_t len = Reader(c.in.data() + off, 4).u32();
    if (len > kMaxFrameBytes) {
      reject(c, "message of " + std::to_string(len) + " bytes exceeds the limit of " +
                    std::to_string(kMaxFrameBytes) + " bytes");
      break;
    }
    if (len == 0) {
      reject(c, "malformed message: empty body");
      break;
    }
    if (c.in.size() - off - 4 < len) break;
    handle(c, c.in.data() + off + 4, len);
    off += 4 + len;
  }
  c.in.erase(c.in.begin(), c.in.begin() + static_cast<std::ptrdiff_t>(std::min(off, c.in.size())));
}

void StoreServer::State::handle(Conn& c, const uint8_t* body, size_t n) {
  try {
    Reader r(body, n);
    auto op = static_cast<StoreOp>(r.u8());
    const bool handshake = op == StoreOp::hello || op == StoreOp::auth;
    if (c.rank < 0 && !handshake) {
      reject(c, "the first message must be HELLO");
      return;
    }
    switch (op) {
      case StoreOp::hello: {
        if (c.stage != Stage::hello) throw ValueError("second HELLO on one connection");
        uint32_t version = r.u32();
        int rank = static_cast<int32_t>(r.u32());
        std::string client_nonce = r.str(kNonceBytes);
        r.end();
        if (version != kStoreProtocolVersion) {
          reject(c, "protocol version " + std::to_string(version) + ", server speaks " +
                        std::to_string(kStoreProtocolVersion));
          return;
        }
        if (client_nonce.size() != kNonceBytes) throw ValueError("a nonce must have " + std::to_string(kNonceBytes) + " bytes");
        if (rank < 0 || rank >= world_size) {
          reject(c, "rank " + std::to_string(rank) + " outside 0.." + std::to_string(world_size - 1));
          return;
        }
        c.claimed_rank = rank;
        c.client_nonce = std::move(client_nonce);
        c.server_nonce = random_nonce();
        c.stage = Stage::challenged;
        std::vector<uint8_t> b{static_cast<uint8_t>(StoreOp::challenge)};
        put_str(b, c.server_nonce);
        put_str(b, proof(token, "server", c.client_nonce, c.server_nonce, rank));
        reply(c, b);
        return;
      }
      case StoreOp::auth: {
        if (c.stage != Stage::challenged) throw ValueError("AUTH without a HELLO first, or a second one");
        std::string client_proof = r.str(kNonceBytes);
        r.end();
        if (!constant_time_equal(client_proof, proof(token, "client", c.client_nonce, c.server_nonce, c.claimed_rank))) {
          reject(c, "wrong job token (SEAM_JOB_TOKEN differs from rank 0's)");
          return;
        }
        {
          std::lock_guard lk(mu);
          if (joined.count(c.claimed_rank)) {
            reject(c, "rank " + std::to_string(c.claimed_rank) + " already joined (two processes with one SEAM_RANK?)");
            return;
          }
          joined.insert(c.claimed_rank);
        }
        c.rank = c.claimed_rank;
        c.stage = Stage::authenticated;
        --unauthenticated;
        reply(c, {static_cast<uint8_t>(StoreOp::ok)});
        return;
      }
      case StoreOp::set: {
        std::string key = r.str(kMaxKeyBytes);
        std::string value = r.str(kMaxFrameBytes);
        r.end();
        kv[std::move(key)] = std::move(value);
        reply(c, {static_cast<uint8_t>(StoreOp::ok)});
        return;
      }
      case StoreOp::wait: {
        int64_t timeout_ms = static_cast<int64_t>(r.u64());
        uint32_t nkeys = r.u32();
        if (nkeys > 1u << 20) throw ValueError("too many keys (" + std::to_string(nkeys) + ")");
        Waiter w;
        w.fd = c.fd;
        for (uint32_t i = 0; i < nkeys; ++i) w.keys.push_back(r.str(kMaxKeyBytes));
        r.end();
        w.deadline = Clock::now() + std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms, 0, 86400000));
        waiters.push_back(std::move(w));
        return;  // answered by serve_waiters
      }
      case StoreOp::bye: {
        c.closing = true;
        c.said_bye = true;
        return;
      }
      default:
        throw ValueError("unknown opcode " + std::to_string(static_cast<int>(op)));
    }
  } catch (const ValueError& e) {
    reject(c, std::string("malformed message: ") + e.what());
  }
}

void StoreServer::State::serve_waiters() {
  auto now = Clock::now();
  for (size_t i = 0; i < waiters.size();) {
    Waiter& w = waiters[i];
    auto cit = conns.find(w.fd);
    bool all = true;
    std::string missing;
    for (auto& k : w.keys)
      if (!kv.count(k)) {
        all = false;
        missing = k;
        break;
      }
    if (cit == conns.end()) {
      waiters.erase(waiters.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (all) {
      std::vector<uint8_t> b{static_cast<uint8_t>(StoreOp::values)};
      put_u32(b, static_cast<uint32_t>(w.keys.size()));
      for (auto& k : w.keys) put_str(b, kv[k]);
      reply(cit->second, b);
    } else if (!lost.empty()) {
      // The key may never come: a rank that left without saying goodbye crashed or was killed.
      reply(cit->second, error_body("seam store: rank " + std::to_string(*lost.begin()) +
                                    " disconnected before the bootstrap finished (it crashed or "
                                    "was killed) while waiting for key '" + missing + "'"));
    } else if (now >= w.deadline) {
      reply(cit->second, error_body("seam store: timed out waiting for key '" + missing + "'"));
    } else {
      ++i;
      continue;
    }
    waiters.erase(waiters.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

std::vector<uint8_t> detail::serve_bytes_for_fuzzing(const uint8_t* data, size_t size, size_t piece,
                                                     bool authenticated) {
  StoreServer::State s;
  s.world_size = 4;
  s.token = std::string(kMinJobTokenChars, 'k');
  std::vector<uint8_t> replies;
  s.replies = &replies;
  constexpr int fd = 1 << 20;  // a key for the connection map only: nothing reads or closes it
  StoreServer::State::Conn& c = s.conns[fd];
  c.fd = fd;
  c.name = "fuzz";
  c.accepted = Clock::now();
  if (authenticated) {
    c.rank = c.claimed_rank = 0;
    c.stage = StoreServer::State::Stage::authenticated;
    s.joined.insert(0);
  } else {
    ++s.unauthenticated;
  }
  piece = std::max<size_t>(piece, 1);
  for (size_t off = 0; off < size && !c.closing; off += piece) {
    s.consume(c, data + off, std::min(piece, size - off));
    s.serve_waiters();
  }
  return replies;
}

// ---- client ---------------------------------------------------------------------------------

namespace {
/// A handshake cut short by the server (a flood of bad peers can evict a connection that is
/// still authenticating): worth another try, unlike an answer that rejects us.
struct HandshakeCut : CommError {
  using CommError::CommError;
};
}  // namespace

StoreClient::StoreClient(const std::string& addr, int rank, const std::string& token,
                         std::chrono::milliseconds timeout)
    : addr_(addr) {
  auto [host, port] = parse_host_port(addr);
  auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last_error = gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai && fd_ < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        if (const int err = connect_before(fd, ai->ai_addr, ai->ai_addrlen, deadline); err == 0) {
          fd_ = fd;
        } else {
          last_error = strerror(err);
          ::close(fd);
        }
      }
      freeaddrinfo(res);
    }
    if (fd_ >= 0) {
      set_nodelay(fd_);
      try {
        authenticate(rank, token, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()) +
                                      std::chrono::milliseconds(1000));
        return;
      } catch (const HandshakeCut& e) {
        last_error = e.what();
        ::close(fd_);
        fd_ = -1;
      } catch (...) {
        ::close(fd_);
        fd_ = -1;
        throw;
      }
    }
    if (Clock::now() + pause > deadline)
      throw TimeoutError("seam store: cannot connect to " + addr + " within " +
                             std::to_string(timeout.count()) + " ms: " + last_error + " (is rank 0 running?)",
                         0);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

void StoreClient::authenticate(int rank, const std::string& token, std::chrono::milliseconds timeout) {
  const std::string client_nonce = random_nonce();
  std::vector<uint8_t> hello{static_cast<uint8_t>(StoreOp::hello)};
  put_u32(hello, kStoreProtocolVersion);
  put_u32(hello, static_cast<uint32_t>(rank));
  put_str(hello, client_nonce);
  auto exchange = [&](const std::vector<uint8_t>& body) {
    try {
      return request(body, timeout);
    } catch (const TimeoutError&) {
      throw;
    } catch (const CommError& e) {
      // An ERROR frame rejects us for good; a closed connection may be a flood's eviction.
      if (std::string(e.what()).find("the connection") != std::string::npos) throw HandshakeCut(e.what(), 0);
      throw;
    }
  };
  const std::vector<uint8_t> challenge = exchange(hello);
  std::string server_nonce, server_proof;
  try {
    Reader r(challenge.data(), challenge.size());
    if (static_cast<StoreOp>(r.u8()) != StoreOp::challenge) throw ValueError("not a CHALLENGE");
    server_nonce = r.str(kNonceBytes);
    server_proof = r.str(kNonceBytes);
    r.end();
  } catch (const ValueError& e) {
    throw CommError("seam store: " + addr_ + " answered HELLO with a malformed challenge (" + e.what() +
                        "): is it a Seam store of this version?",
                    0);
  }
  if (server_nonce.size() != kNonceBytes ||
      !constant_time_equal(server_proof, proof(token, "server", client_nonce, server_nonce, rank)))
    throw CommError("seam store: the server at " + addr_ +
                        " could not prove it knows the job token: wrong job token (SEAM_JOB_TOKEN differs "
                        "from rank 0's), or another process holds that port",
                    0);
  std::vector<uint8_t> auth{static_cast<uint8_t>(StoreOp::auth)};
  put_str(auth, proof(token, "client", client_nonce, server_nonce, rank));
  exchange(auth);
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

void StoreClient::close() {
  if (fd_ < 0) return;
  auto f = frame({static_cast<uint8_t>(StoreOp::bye)});
  write_all(fd_, f.data(), f.size(), Clock::now() + std::chrono::seconds(1));
  ::close(fd_);
  fd_ = -1;
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::vector<uint8_t> b{static_cast<uint8_t>(StoreOp::set)};
  put_str(b, key);
  put_str(b, value);
  request(b, std::chrono::milliseconds(Config::get().timeout_ms));
}

std::vector<std::string> StoreClient::wait(const std::vector<std::string>& keys,
                                           std::chrono::milliseconds timeout) {
  std::vector<uint8_t> b{static_cast<uint8_t>(StoreOp::wait)};
  put_u64(b, static_cast<uint64_t>(timeout.count()));
  put_u32(b, static_cast<uint32_t>(keys.size()));
  for (auto& k : keys) put_str(b, k);
  auto resp = request(b, timeout + std::chrono::milliseconds(2000));
  Reader r(resp.data(), resp.size());
  r.u8();
  uint32_t n = r.u32();
  if (n != keys.size()) throw CommError("seam store: answer has " + std::to_string(n) + " values for " +
                                        std::to_string(keys.size()) + " keys");
  std::vector<std::string> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(r.str(kMaxFrameBytes));
  return out;
}

std::vector<uint8_t> StoreClient::request(const std::vector<uint8_t>& body,
                                          std::chrono::milliseconds timeout) {
  if (fd_ < 0) throw CommError("seam store: connection to " + addr_ + " is closed", 0);
  auto deadline = Clock::now() + timeout;
  auto f = frame(body);
  if (!write_all(fd_, f.data(), f.size(), deadline)) {
    if (Clock::now() >= deadline)
      throw TimeoutError("seam store: rank 0 at " + addr_ + " took no request in time (is it stuck?)", 0);
    throw CommError("seam store: lost the connection to rank 0 at " + addr_ + ": " + strerror(errno), 0);
  }
  auto read_exact = [&](uint8_t* p, size_t n) {
    while (n > 0) {
      if (!poll_until(fd_, POLLIN, deadline))
        throw TimeoutError("seam store: no answer from rank 0 at " + addr_ + " in time", 0);
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r == 0) throw CommError("seam store: rank 0 at " + addr_ + " closed the connection", 0);
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        throw CommError("seam store: lost the connection to rank 0 at " + addr_ + ": " + strerror(errno), 0);
      }
      p += r;
      n -= static_cast<size_t>(r);
    }
  };
  uint8_t hdr[4];
  read_exact(hdr, 4);
  uint32_t len = Reader(hdr, 4).u32();
  if (len == 0 || len > kMaxFrameBytes)
    throw CommError("seam store: malformed answer (" + std::to_string(len) + "-byte body) from " + addr_, 0);
  std::vector<uint8_t> resp(len);
  read_exact(resp.data(), len);
  if (resp[0] == static_cast<uint8_t>(StoreOp::error)) {
    Reader r(resp.data(), resp.size());
    r.u8();
    std::string msg = r.str(kMaxFrameBytes);
    if (msg.find("timed out") != std::string::npos) throw TimeoutError(msg, 0);
    throw CommError(msg, 0);
  }
  return resp;
}

// ---- the bootstrap --------------------------------------------------------------------------

namespace {

class StoreBootstrap final : public Bootstrap {
 public:
  explicit StoreBootstrap(const StoreBootstrapOptions& o) : o_(o) {
    if (o.rank == 0) server_ = std::make_unique<StoreServer>(o.addr, o.world_size, o.token);
    client_ = std::make_unique<StoreClient>(o.addr, o.rank, o.token, o.timeout);
    SEAM_LOG_DEBUG("bootstrap: tcp store at {}, rank {} of {}", o.addr, o.rank, o.world_size);
  }
  ~StoreBootstrap() override { finish(); }

  std::string_view kind() const override { return "tcp-store"; }
  int rank() const override { return o_.rank; }
  int size() const override { return o_.world_size; }

  std::vector<std::string> all_gather(const std::string& mine) override {
    if (!client_) throw UsageError("seam store: bootstrap already finished");
    const std::string prefix = "ag/" + std::to_string(round_++) + "/";
    client_->set(prefix + std::to_string(o_.rank), mine);
    std::vector<std::string> keys;
    for (int r = 0; r < o_.world_size; ++r) keys.push_back(prefix + std::to_string(r));
    try {
      return client_->wait(keys, o_.timeout);
    } catch (const TimeoutError& e) {
      failed_ = true;
      throw TimeoutError(std::string(e.what()) + " (a rank did not join the all-gather)", -1);
    } catch (...) {
      failed_ = true;
      throw;
    }
  }

  void barrier() override { all_gather({}); }

  void finish() override {
    if (client_) client_->close();
    client_.reset();
    if (server_) {
      // After a failure the others are gone or failing too: no second timeout on rank 0.
      if (!server_->wait_all_left(failed_ ? std::chrono::milliseconds(0) : o_.timeout))
        log().warn("seam store: not every rank left the store within {} ms", o_.timeout.count());
      server_->stop();
      server_.reset();
    }
  }

 private:
  StoreBootstrapOptions o_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  uint64_t round_ = 0;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Bootstrap> create_store(const StoreBootstrapOptions& o) {
  if (o.addr.empty()) throw ValueError("seam store bootstrap: no address (SEAM_STORE_ADDR=host:port)");
  parse_host_port(o.addr);
  if (o.world_size <= 0) throw ValueError("seam store bootstrap: SEAM_WORLD_SIZE must be set and positive");
  if (o.rank < 0 || o.rank >= o.world_size)
    throw ValueError("seam store bootstrap: SEAM_RANK must be in 0.." + std::to_string(o.world_size - 1) +
                     ", got " + std::to_string(o.rank));
  check_job_token(o.token);
  return std::make_unique<StoreBootstrap>(o);
}

std::string host_identity() {
  const auto& c = Config::get();
  if (!c.hostname.empty()) return c.hostname;
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace seam::bootstrap
