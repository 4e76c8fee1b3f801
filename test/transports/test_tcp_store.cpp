// The TCP store: set/wait, timeouts, the all-gather bootstrap on threads, and rejection of peers
// without the job token or with malformed / oversized messages (sent from a raw socket).
#include <cstdint>
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "layouts/errors.h"
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

std::vector<uint8_t> hello(const std::string& token, int rank) {
  std::vector<uint8_t> body{static_cast<uint8_t>(StoreOp::hello)};
  put_u32(body, kStoreProtocolVersion);
  put_u32(body, static_cast<uint32_t>(rank));
  put_u32(body, static_cast<uint32_t>(token.size()));
  body.insert(body.end(), token.begin(), token.end());
  std::vector<uint8_t> f;
  put_u32(f, static_cast<uint32_t>(body.size()));
  f.insert(f.end(), body.begin(), body.end());
  return f;
}

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
      auto bs = create_store({addr, r, 4, "tok", 10000ms});
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
}

TEST_CASE("store: wrong token, garbage, oversized and malformed messages are rejected") {
  const uint16_t port = static_cast<uint16_t>(seam::test::listen_port());
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  StoreServer server(addr, 2, "the-right-token");

  SUBCASE("a client with the wrong token") {
    CHECK_THROWS_WITH_AS(StoreClient(addr, 1, "the-wrong-token", 2s), doctest::Contains("wrong job token"), CommError);
    CHECK_THROWS_WITH_AS(StoreClient(addr, 1, "", 2s), doctest::Contains("wrong job token"), CommError);
  }
  SUBCASE("raw: a HELLO with the wrong token") {
    auto got = raw_exchange(port, hello("the-right-tokeX", 1));
    CHECK(got.find("wrong job token") != std::string::npos);
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
    put_u32(f, 1 + 4 + 1 + 4 + 1);
    f.push_back(static_cast<uint8_t>(StoreOp::set));
    put_u32(f, 1);
    f.push_back('k');
    put_u32(f, 1);
    f.push_back('v');
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
  SUBCASE("raw: an unknown opcode after a good HELLO") {
    auto f = hello("the-right-token", 1);
    put_u32(f, 1);
    f.push_back(0x42);
    auto got = raw_exchange(port, f);
    CHECK(got.find("unknown opcode 66") != std::string::npos);
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
