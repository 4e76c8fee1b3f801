// The TCP store: set/wait, timeouts, the all-gather bootstrap on threads, and rejection of peers
// without the job token or with malformed / oversized messages (sent from a raw socket); the
// handshake (the token never on the wire, a port squatter learns nothing, idle and chatty
// unauthenticated peers dropped) and a flood of bad peers while a real job of processes
// bootstraps.
#include <cstdint>
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "seam/errors.h"
#include "runtime/bootstrap/bootstrap.h"
#include "runtime/bootstrap/tcp_store.h"
#include "test/transports/listen_port.h"

using namespace seam;
using namespace seam::bootstrap;
using namespace std::chrono_literals;

namespace {

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

/// Connects a raw socket, sends bytes, returns everything the server answers until it closes.
std::string raw_exchange(uint16_t port, const std::vector<uint8_t>& bytes) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  if (!bytes.empty()) REQUIRE(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
  std::string got;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) break;  // no close within 5 s: stop reading
    ssize_t r = recv(fd, buf, sizeof(buf), 0);
    if (r <= 0) break;
    got.append(buf, static_cast<size_t>(r));
  }
  close(fd);
  return got;
}

/// A HELLO frame with a 32-byte nonce of `nonce_char`.
std::vector<uint8_t> hello(int rank, char nonce_char = 'n') {
  std::vector<uint8_t> body{static_cast<uint8_t>(StoreOp::hello)};
  put_u32(body, kStoreProtocolVersion);
  put_u32(body, static_cast<uint32_t>(rank));
  put_u32(body, kNonceBytes);
  body.insert(body.end(), kNonceBytes, static_cast<uint8_t>(nonce_char));
  std::vector<uint8_t> f;
  put_u32(f, static_cast<uint32_t>(body.size()));
  f.insert(f.end(), body.begin(), body.end());
  return f;
}

/// Appends a SET frame of key "k" and value "v" to f.
void put_set_kv(std::vector<uint8_t>& f) {
  put_u32(f, 1 + 4 + 1 + 4 + 1);
  f.push_back(static_cast<uint8_t>(StoreOp::set));
  put_u32(f, 1);
  f.push_back('k');
  put_u32(f, 1);
  f.push_back('v');
}

/// An AUTH frame with a proof of `proof_char` bytes.
std::vector<uint8_t> auth(char proof_char) {
  std::vector<uint8_t> f;
  put_u32(f, 1 + 4 + kNonceBytes);
  f.push_back(static_cast<uint8_t>(StoreOp::auth));
  put_u32(f, kNonceBytes);
  f.insert(f.end(), kNonceBytes, static_cast<uint8_t>(proof_char));
  return f;
}

const std::string kToken = "7f3a9c01d2e84b56a0c19e3f5b7d2468";  // 32 varied characters

}  // namespace

TEST_CASE("store: set, wait, and a wait that times out") {
  const std::string addr = "127.0.0.1:" + std::to_string(seam::test::listen_port());
  StoreServer server(addr, 2, "secret");
  StoreClient a(addr, 0, "secret", 5s), b(addr, 1, "secret", 5s);
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    b.set("k2", std::string("v\0two", 5));
  });
  a.set("k1", "one");
  auto v = a.wait({"k1", "k2"}, 5s);
  late.join();
  CHECK(v[0] == "one");
  CHECK(v[1] == std::string("v\0two", 5));
  CHECK_THROWS_AS(a.wait({"never"}, 100ms), TimeoutError);
  a.close();
  b.close();
  CHECK(server.wait_all_left(5s));
}

TEST_CASE("store: a server that never answers the connection fails the client by its deadline") {
  // A listener that accepts nothing, its backlog filled: the kernel drops further SYNs, so a
  // blocking connect would wait out its retries (about two minutes).
  const int port = seam::test::listen_port();
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_port = htons(static_cast<uint16_t>(port));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  REQUIRE(listen(listener, 0) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at);
    fillers.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(StoreClient("127.0.0.1:" + std::to_string(port), 0, "secret", 500ms), TimeoutError);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  for (int fd : fillers) close(fd);
  close(listener);
}

TEST_CASE("store: a rank that disconnects without saying goodbye fails the others' waits at once") {
  const std::string addr = "127.0.0.1:" + std::to_string(seam::test::listen_port());
  StoreServer server(addr, 2, "secret");
  StoreClient a(addr, 0, "secret", 5s);
  {
    StoreClient b(addr, 1, "secret", 5s);
    b.set("from-b", "x");
  }  // destroyed without close(): as if the process died
  CHECK(a.get("from-b", 5s) == "x");  // what it set is still served
  const auto start = std::chrono::steady_clock::now();
  try {
    a.wait({"never"}, 10s);
    FAIL("the wait did not fail");
  } catch (const CommError& e) {
    CHECK(std::string(e.what()).find("rank 1 disconnected") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  a.close();
}

TEST_CASE("store bootstrap: all-gather and barrier on 4 threads") {
  const std::string addr = "127.0.0.1:" + std::to_string(seam::test::listen_port());
  std::vector<std::thread> ts;
  std::vector<std::vector<std::string>> got(4);
  for (int r = 0; r < 4; ++r)
    ts.emplace_back([&, r] {
      auto bs = create_store({addr, r, 4, kToken, 10000ms});
      got[static_cast<size_t>(r)] = bs->all_gather("rank" + std::to_string(r));
      bs->barrier();
      auto again = bs->all_gather(std::string(100000, static_cast<char>('a' + r)));
      CHECK(again[3] == std::string(100000, 'd'));
      bs->finish();
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 4; ++r) CHECK(got[static_cast<size_t>(r)] == std::vector<std::string>{"rank0", "rank1", "rank2", "rank3"});
}

TEST_CASE("store: options are checked with clear errors") {
  CHECK_THROWS_WITH_AS(create_store({"", 0, 2, "t", 1000ms}), doctest::Contains("SEAM_STORE_ADDR"), ValueError);
  CHECK_THROWS_WITH_AS(create_store({"host", 0, 2, "t", 1000ms}), doctest::Contains("host:port"), ValueError);
  CHECK_THROWS_WITH_AS(create_store({"h:1", 2, 2, "t", 1000ms}), doctest::Contains("SEAM_RANK"), ValueError);
  CHECK_THROWS_WITH_AS(create_store({"h:1", 0, 2, "", 1000ms}), doctest::Contains("SEAM_JOB_TOKEN"), ValueError);
  // Guessable tokens: short, or long but hardly random.
  CHECK_THROWS_WITH_AS(create_store({"h:1", 0, 2, "secret", 1000ms}), doctest::Contains("too weak (6 characters"),
                       ValueError);
  CHECK_THROWS_WITH_AS(create_store({"h:1", 0, 2, std::string(40, 'a'), 1000ms}),
                       doctest::Contains("1 distinct"), ValueError);
  CHECK_THROWS_WITH_AS(create_store({"h:1", 0, 2, "job-1234-5678", 1000ms}), doctest::Contains("at least 32 random"),
                       ValueError);
}

TEST_CASE("store: wrong token, garbage, oversized and malformed messages are rejected") {
  const uint16_t port = static_cast<uint16_t>(seam::test::listen_port());
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  StoreServer server(addr, 2, "the-right-token");

  SUBCASE("a client with the wrong token") {
    CHECK_THROWS_WITH_AS(StoreClient(addr, 1, "the-wrong-token", 2s), doctest::Contains("wrong job token"), CommError);
    CHECK_THROWS_WITH_AS(StoreClient(addr, 1, "", 2s), doctest::Contains("wrong job token"), CommError);
  }
  SUBCASE("raw: a HELLO, then an AUTH whose proof is wrong") {
    auto f = hello(1);
    const auto a = auth('p');
    f.insert(f.end(), a.begin(), a.end());
    auto got = raw_exchange(port, f);
    CHECK(got.find("wrong job token") != std::string::npos);
  }
  SUBCASE("raw: an AUTH without a HELLO") {
    auto got = raw_exchange(port, auth('p'));
    CHECK(got.find("AUTH without a HELLO") != std::string::npos);
  }
  SUBCASE("raw: a HELLO of the old protocol (the token in clear)") {
    std::vector<uint8_t> body{static_cast<uint8_t>(StoreOp::hello)};
    put_u32(body, 1);
    put_u32(body, 1);
    put_u32(body, 15);
    for (char ch : std::string("the-right-token")) body.push_back(static_cast<uint8_t>(ch));
    std::vector<uint8_t> f;
    put_u32(f, static_cast<uint32_t>(body.size()));
    f.insert(f.end(), body.begin(), body.end());
    auto got = raw_exchange(port, f);
    CHECK(got.find("protocol version 1, server speaks 2") != std::string::npos);
  }
  SUBCASE("raw: garbage bytes") {
    auto got = raw_exchange(port, {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n', '\r', '\n'});
    CHECK(got.find("exceeds the limit") != std::string::npos);
  }
  SUBCASE("raw: an oversized length prefix") {
    std::vector<uint8_t> f;
    put_u32(f, 0xfffffff0u);
    auto got = raw_exchange(port, f);
    CHECK(got.find("4294967280 bytes exceeds the limit") != std::string::npos);
  }
  SUBCASE("raw: a SET before HELLO") {
    std::vector<uint8_t> f;
    put_set_kv(f);
    auto got = raw_exchange(port, f);
    CHECK(got.find("first message must be HELLO") != std::string::npos);
  }
  SUBCASE("raw: a HELLO whose token length overruns the body") {
    std::vector<uint8_t> f;
    put_u32(f, 1 + 4 + 4 + 4 + 2);
    f.push_back(static_cast<uint8_t>(StoreOp::hello));
    put_u32(f, kStoreProtocolVersion);
    put_u32(f, 1);
    put_u32(f, 1000);  // claims 1000 token bytes, carries 2
    f.push_back('a');
    f.push_back('b');
    auto got = raw_exchange(port, f);
    CHECK(got.find("malformed message") != std::string::npos);
  }
  SUBCASE("raw: a SET after HELLO, before AUTH") {
    auto f = hello(1);
    put_set_kv(f);
    auto got = raw_exchange(port, f);
    CHECK(got.find("first message must be HELLO") != std::string::npos);
  }
  SUBCASE("raw: an empty body") {
    std::vector<uint8_t> f;
    put_u32(f, 0);
    auto got = raw_exchange(port, f);
    CHECK(got.find("empty body") != std::string::npos);
  }
  SUBCASE("two processes claiming one rank") {
    StoreClient first(addr, 1, "the-right-token", 2s);
    CHECK_THROWS_WITH_AS(StoreClient(addr, 1, "the-right-token", 2s), doctest::Contains("already joined"), CommError);
  }
  // After all that, a legitimate client is still served.
  StoreClient good(addr, 0, "the-right-token", 2s);
  good.set("k", "v");
  CHECK(good.get("k", 1s) == "v");
}

namespace {

/// A listening socket on 127.0.0.1:port.
int listen_on(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(listen(fd, 16) == 0);
  return fd;
}

int connect_to(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/// Relays one connection from `listener` to the store at `store_port`, recording every byte the
/// client sends, until either side closes.
void relay_one(int listener, uint16_t store_port, std::string& client_bytes) {
  const int client = accept(listener, nullptr, nullptr);
  const int server = connect_to(store_port);
  if (client < 0 || server < 0) return;
  char buf[65536];
  for (bool open = true; open;) {
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (poll(p, 2, 10000) <= 0) break;
    for (int k = 0; k < 2; ++k) {
      if (!p[k].revents) continue;
      const ssize_t r = recv(p[k].fd, buf, sizeof buf, 0);
      if (r <= 0) {
        open = false;
        break;
      }
      if (k == 0) client_bytes.append(buf, static_cast<size_t>(r));
      send(p[1 - k].fd, buf, static_cast<size_t>(r), MSG_NOSIGNAL);
    }
  }
  close(client);
  close(server);
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("store: the job token never crosses the wire") {
  const uint16_t store_port = static_cast<uint16_t>(seam::test::listen_port());
  const uint16_t proxy_port = static_cast<uint16_t>(seam::test::listen_port());
  StoreServer server("127.0.0.1:" + std::to_string(store_port), 1, kToken);
  const int listener = listen_on(proxy_port);
  std::string sent;
  std::thread proxy([&] { relay_one(listener, store_port, sent); });
  {
    StoreClient client("127.0.0.1:" + std::to_string(proxy_port), 0, kToken, 5s);
    client.set("key", "value");
    CHECK(client.get("key", 2s) == "value");
    client.close();
  }
  proxy.join();
  close(listener);
  REQUIRE(sent.size() > 40);  // HELLO, AUTH, SET, WAIT, BYE went through the proxy
  CHECK(contains(sent, "key"));
  CHECK_FALSE(contains(sent, kToken));
  CHECK_FALSE(contains(sent, kToken.substr(0, 8)));
  CHECK_FALSE(contains(sent, kToken.substr(24)));
}

TEST_CASE("store: a process squatting the port gets a nonce, not the token, and the client fails clearly") {
  const uint16_t port = static_cast<uint16_t>(seam::test::listen_port());
  const int listener = listen_on(port);
  std::string sent;
  std::thread squatter([&] {
    const int fd = accept(listener, nullptr, nullptr);
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) > 0) {
      const ssize_t r = recv(fd, buf, sizeof buf, 0);
      if (r > 0) sent.append(buf, static_cast<size_t>(r));
    }
    // A challenge with a made-up proof, as a squatter without the token must send.
    std::vector<uint8_t> body{static_cast<uint8_t>(StoreOp::challenge)};
    put_u32(body, kNonceBytes);
    body.insert(body.end(), kNonceBytes, 's');
    put_u32(body, kNonceBytes);
    body.insert(body.end(), kNonceBytes, 'x');
    std::vector<uint8_t> f;
    put_u32(f, static_cast<uint32_t>(body.size()));
    f.insert(f.end(), body.begin(), body.end());
    send(fd, f.data(), f.size(), MSG_NOSIGNAL);
    // Whatever comes next is recorded too: there must be nothing.
    while (poll(&p, 1, 1000) > 0) {
      const ssize_t r = recv(fd, buf, sizeof buf, 0);
      if (r <= 0) break;
      sent.append(buf, static_cast<size_t>(r));
    }
    close(fd);
  });
  CHECK_THROWS_WITH_AS(StoreClient("127.0.0.1:" + std::to_string(port), 0, kToken, 3s),
                       doctest::Contains("could not prove it knows the job token"), CommError);
  squatter.join();
  close(listener);
  // Only the HELLO: 4-byte length, opcode, version, rank, 4-byte length, 32-byte nonce.
  CHECK(sent.size() == 4 + 1 + 4 + 4 + 4 + kNonceBytes);
  CHECK_FALSE(contains(sent, kToken));
}

TEST_CASE("store: idle and chatty unauthenticated connections are dropped") {
  const uint16_t port = static_cast<uint16_t>(seam::test::listen_port());
  StoreServer server("127.0.0.1:" + std::to_string(port), 2, kToken, StoreLimits{64, 300ms});
  SUBCASE("silent after connecting") {
    const auto start = std::chrono::steady_clock::now();
    auto got = raw_exchange(port, {});
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(contains(got, "did not authenticate within 300 ms"));
    CHECK(took >= 250ms);
    CHECK(took < 3s);
  }
  SUBCASE("silent after HELLO") {
    auto got = raw_exchange(port, hello(0));
    CHECK(contains(got, "did not authenticate within 300 ms"));
  }
  SUBCASE("more bytes before authenticating than a handshake needs") {
    std::vector<uint8_t> f;
    put_u32(f, 1000);  // a frame within kMaxFrameBytes, far beyond the handshake's bytes
    f.insert(f.end(), 1000, 'z');
    auto got = raw_exchange(port, f);
    CHECK(contains(got, "sent more than 256 bytes before authenticating"));
  }
  StoreClient good("127.0.0.1:" + std::to_string(port), 0, kToken, 2s);
  good.set("k", "v");
  CHECK(good.get("k", 1s) == "v");
}

TEST_CASE("store: an address that is not this host's is an error, not a listen on every interface") {
  // 192.0.2.0/24 is TEST-NET-1: never a local address.
  CHECK_THROWS_WITH_AS(StoreServer("192.0.2.1:" + std::to_string(seam::test::listen_port()), 2, kToken),
                       doctest::Contains("is not an address of this host"), CommError);
}

TEST_CASE("store bootstrap: rank 0 whose peers never come fails within one timeout") {
  const std::string addr = "127.0.0.1:" + std::to_string(seam::test::listen_port());
  const auto start = std::chrono::steady_clock::now();
  {
    auto bs = create_store({addr, 0, 2, kToken, 1000ms});
    CHECK_THROWS_AS(bs->all_gather("x"), TimeoutError);
  }  // its destructor finishes the bootstrap: no second wait for the missing rank
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 1000ms);
  CHECK(took < 1600ms);
}

namespace {

size_t open_descriptors(pid_t pid) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

long resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

// Rank 0's resident memory bound while the flood runs: 64 MiB, or 256 MiB under AddressSanitizer,
// whose shadow and quarantine of freed blocks grow with every connection served.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kFloodRssKib = 256 * 1024;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr long kFloodRssKib = 256 * 1024;
#else
constexpr long kFloodRssKib = 64 * 1024;
#endif
#else
constexpr long kFloodRssKib = 64 * 1024;
#endif

}  // namespace

TEST_CASE("store flood: thousands of bad peers while a real job of 4 processes bootstraps") {
  constexpr int kRanks = 4;
  const uint16_t port = static_cast<uint16_t>(seam::test::listen_port());
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  char log_path[] = "/tmp/seam-store-flood-XXXXXX";
  const int log_fd = mkstemp(log_path);
  REQUIRE(log_fd >= 0);
  // The ranks first (no thread runs yet, so fork is safe); ranks 1-3 come once the flood is on.
  std::vector<pid_t> ranks;
  for (int r = 0; r < kRanks; ++r) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      if (r == 0) dup2(log_fd, 2);
      else std::this_thread::sleep_for(1500ms);
      int rc = 1;
      try {
        auto bs = create_store({addr, r, kRanks, kToken, 20000ms});
        const auto all = bs->all_gather("rank" + std::to_string(r));
        bs->barrier();
        rc = all.size() == kRanks && all[3] == "rank3" && all[0] == "rank0" ? 0 : 2;
        bs->finish();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        rc = 3;
      }
      _exit(rc);
    }
    ranks.push_back(pid);
  }
  close(log_fd);

  std::atomic<bool> stop{false};
  std::atomic<long> attempts{0};
  std::vector<std::thread> flood;
  // Connections that say nothing, 300 held at a time.
  flood.emplace_back([&] {
    std::deque<int> held;
    while (!stop) {
      const int fd = connect_to(port);
      ++attempts;
      if (fd >= 0) held.push_back(fd);
      if (held.size() > 300 || (fd < 0 && !held.empty())) {
        close(held.front());
        held.pop_front();
      }
      if (fd < 0) std::this_thread::sleep_for(1ms);
    }
    for (int fd : held) close(fd);
  });
  // Garbage: a frame far larger than a handshake.
  flood.emplace_back([&] {
    std::vector<uint8_t> junk;
    put_u32(junk, 60000);
    junk.resize(4 + 60000, 'j');
    while (!stop) {
      const int fd = connect_to(port);
      ++attempts;
      if (fd < 0) continue;
      send(fd, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
    }
  });
  // Wrong proofs, claiming the real ranks' numbers.
  flood.emplace_back([&] {
    for (int k = 0; !stop; ++k) {
      const int fd = connect_to(port);
      ++attempts;
      if (fd < 0) continue;
      auto f = hello(k % kRanks);
      const auto a = auth('p');
      f.insert(f.end(), a.begin(), a.end());
      send(fd, f.data(), f.size(), MSG_NOSIGNAL);
      char buf[512];
      pollfd p{fd, POLLIN, 0};
      while (poll(&p, 1, 200) > 0 && recv(fd, buf, sizeof buf, 0) > 0) {
      }
      close(fd);
    }
  });

  const auto start = std::chrono::steady_clock::now();
  size_t max_fds = 0;
  long max_rss_kib = 0;
  std::vector<int> status(kRanks, -1);
  int running = kRanks;
  while (running > 0 && std::chrono::steady_clock::now() - start < 40s) {
    max_fds = std::max(max_fds, open_descriptors(ranks[0]));
    max_rss_kib = std::max(max_rss_kib, resident_kib(ranks[0]));
    for (int r = 0; r < kRanks; ++r) {
      int st = 0;
      if (status[static_cast<size_t>(r)] == -1 && waitpid(ranks[static_cast<size_t>(r)], &st, WNOHANG) > 0) {
        status[static_cast<size_t>(r)] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --running;
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  for (auto& t : flood) t.join();
  for (int r = 0; r < kRanks; ++r)
    if (status[static_cast<size_t>(r)] == -1) {
      kill(ranks[static_cast<size_t>(r)], SIGKILL);
      waitpid(ranks[static_cast<size_t>(r)], nullptr, 0);
    }

  std::ifstream log_file(log_path);
  std::string log_text((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
  std::remove(log_path);
  long warnings = 0;
  for (size_t at = 0; (at = log_text.find("seam store: ", at)) != std::string::npos; ++at) ++warnings;
  INFO("rank 0's log:\n" << log_text.substr(0, 4000));
  INFO(attempts.load() << " bad connections in " << seconds << " s; rank 0 held at most " << max_fds
                       << " descriptors and " << max_rss_kib << " KiB");
  for (int r = 0; r < kRanks; ++r) CHECK(status[static_cast<size_t>(r)] == 0);
  CHECK(max_fds > 0);  // rank 0 was sampled while it served
  CHECK(attempts.load() > 300);
  CHECK(max_fds <= 64 + 2 * kRanks + 16);  // the unauthenticated cap, the ranks, a few of its own
  CHECK(max_rss_kib < kFloodRssKib);
  CHECK(warnings >= 1);
  CHECK(contains(log_text, "more rejections of unauthenticated peers not shown since the last such warning"));
  CHECK(warnings <= static_cast<long>(seconds) + 3);  // one a second at most
  std::printf("store flood: %ld bad connections in %.2f s; rank 0 at most %zu descriptors, %ld KiB resident, "
              "%ld warnings\n", attempts.load(), seconds, max_fds, max_rss_kib, warnings);
}
