#include "runtime/bootstrap/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
#include "layouts/errors.h"
#include "layouts/log.h"
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

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Time depends only on the expected token's length, never on where the strings differ.
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < b.size(); ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0u;
    diff |= x ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

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

struct StoreServer::State {
  struct Conn {
    int fd = -1;
    std::string name;
    int rank = -1;  // -1 until authenticated
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
  uint16_t port = 0;
  std::map<int, Conn> conns;
  std::map<std::string, std::string> kv;
  std::vector<Waiter> waiters;
  std::thread thread;
  std::atomic<bool> stopping{false};

  std::mutex mu;
  std::condition_variable cv;
  std::set<int> joined;  // ranks that authenticated
  std::set<int> left;    // ranks that said BYE or disconnected after authenticating
  std::set<int> lost;    // ranks that disconnected after authenticating without a BYE

  void run();
  void accept_new();
  void read_from(Conn& c);
  void handle(Conn& c, const uint8_t* body, size_t n);
  void reply(Conn& c, const std::vector<uint8_t>& body) {
    auto f = frame(body);
    if (!write_all(c.fd, f.data(), f.size(), Clock::now() + std::chrono::seconds(5))) c.closing = true;
  }
  void reject(Conn& c, const std::string& why) {
    log().warn("seam store: rejecting {} ({}): {}", c.name, c.rank >= 0 ? "rank " + std::to_string(c.rank) : "unauthenticated", why);
    reply(c, error_body("seam store: " + why));
    c.closing = true;
  }
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
    ::close(fd);
    conns.erase(it);
  }
};

StoreServer::StoreServer(const std::string& addr, int world_size, std::string token)
    : state_(std::make_unique<State>()) {
  auto [host, port] = parse_host_port(addr);
  state_->world_size = world_size;
  state_->token = std::move(token);

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
      // The name is not one of this host's addresses (e.g. a NAT'ed name): listen on every one.
      sockaddr_in any{};
      any.sin_family = AF_INET;
      any.sin_port = htons(port);
      any.sin_addr.s_addr = htonl(INADDR_ANY);
      ::close(fd);
      fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      rc = bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any));
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
    fds.push_back({wake_pipe[0], POLLIN, 0});
    fds.push_back({listen_fd, POLLIN, 0});
    for (auto& [fd, c] : conns) fds.push_back({fd, POLLIN, 0});
    int timeout_ms = 1000;
    auto now = Clock::now();
    for (auto& w : waiters) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w.deadline - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left + 1, 0, timeout_ms));
    }
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
    std::vector<int> dead;
    for (auto& [fd, c] : conns)
      if (c.closing) dead.push_back(fd);
    for (int fd : dead) drop(fd);
  }
}

void StoreServer::State::accept_new() {
  while (true) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    set_nodelay(fd);
    Conn c;
    c.fd = fd;
    c.name = peer_name(fd);
    conns.emplace(fd, std::move(c));
  }
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
    c.in.insert(c.in.end(), buf, buf + r);
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
}

void StoreServer::State::handle(Conn& c, const uint8_t* body, size_t n) {
  try {
    Reader r(body, n);
    auto op = static_cast<StoreOp>(r.u8());
    if (c.rank < 0 && op != StoreOp::hello) {
      reject(c, "the first message must be HELLO with the job token");
      return;
    }
    switch (op) {
      case StoreOp::hello: {
        if (c.rank >= 0) throw ValueError("second HELLO on one connection");
        uint32_t version = r.u32();
        int rank = static_cast<int32_t>(r.u32());
        std::string tok = r.str(kMaxKeyBytes);
        r.end();
        if (!constant_time_equal(tok, token)) {
          reject(c, "wrong job token (SEAM_JOB_TOKEN differs from rank 0's)");
          return;
        }
        if (version != kStoreProtocolVersion) {
          reject(c, "protocol version " + std::to_string(version) + ", server speaks " +
                        std::to_string(kStoreProtocolVersion));
          return;
        }
        if (rank < 0 || rank >= world_size) {
          reject(c, "rank " + std::to_string(rank) + " outside 0.." + std::to_string(world_size - 1));
          return;
        }
        {
          std::lock_guard lk(mu);
          if (joined.count(rank)) {
            reject(c, "rank " + std::to_string(rank) + " already joined (two processes with one SEAM_RANK?)");
            return;
          }
          joined.insert(rank);
        }
        c.rank = rank;
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

// ---- client ---------------------------------------------------------------------------------

StoreClient::StoreClient(const std::string& addr, int rank, const std::string& token,
                         std::chrono::milliseconds timeout)
    : addr_(addr) {
  auto [host, port] = parse_host_port(addr);
  auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  auto pause = std::chrono::milliseconds(5);
  while (fd_ < 0) {
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
    if (fd_ >= 0) break;
    if (Clock::now() + pause > deadline)
      throw TimeoutError("seam store: cannot connect to " + addr + " within " +
                             std::to_string(timeout.count()) + " ms: " + last_error + " (is rank 0 running?)",
                         0);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
  set_nodelay(fd_);
  std::vector<uint8_t> hello{static_cast<uint8_t>(StoreOp::hello)};
  put_u32(hello, kStoreProtocolVersion);
  put_u32(hello, static_cast<uint32_t>(rank));
  put_str(hello, token);
  request(hello, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()) +
                     std::chrono::milliseconds(1000));
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
      throw TimeoutError(std::string(e.what()) + " (a rank did not join the all-gather)", -1);
    }
  }

  void barrier() override { all_gather({}); }

  void finish() override {
    if (client_) client_->close();
    client_.reset();
    if (server_) {
      if (!server_->wait_all_left(o_.timeout))
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
};

}  // namespace

std::unique_ptr<Bootstrap> create_store(const StoreBootstrapOptions& o) {
  if (o.addr.empty()) throw ValueError("seam store bootstrap: no address (SEAM_STORE_ADDR=host:port)");
  parse_host_port(o.addr);
  if (o.world_size <= 0) throw ValueError("seam store bootstrap: SEAM_WORLD_SIZE must be set and positive");
  if (o.rank < 0 || o.rank >= o.world_size)
    throw ValueError("seam store bootstrap: SEAM_RANK must be in 0.." + std::to_string(o.world_size - 1) +
                     ", got " + std::to_string(o.rank));
  if (o.token.empty())
    throw ValueError("seam store bootstrap: SEAM_JOB_TOKEN must be set (a secret shared by the job's ranks)");
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
