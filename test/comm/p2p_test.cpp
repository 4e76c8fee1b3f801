// Point-to-point through the Communicator at any rank count: ping-pong of many sizes (0 bytes to
// multi-MiB) between every pair, out-of-order tag matching, many messages in flight, a barrier,
// and a small-message round-trip latency (printed, not asserted).
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm_check.h"
#include "seam/errors.h"
#include "seam/communicator.h"

using seam::comm::Communicator;
using seam::comm::Work;

namespace {

uint8_t pattern(int from, int to, size_t size, size_t i) {
  return static_cast<uint8_t>((from * 131 + to * 17 + size * 7 + i * 13 + (i >> 8)) & 0xff);
}

void fill(std::vector<uint8_t>& b, int from, int to) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(from, to, b.size(), i);
}

void expect(const std::vector<uint8_t>& b, size_t n, int from, int to) {
  for (size_t i = 0; i < n; ++i)
    COMM_CHECK(b[i] == pattern(from, to, n, i), "byte %zu of a %zu-byte message %d->%d", i, n, from, to);
}

void ping_pong(Communicator& c) {
  const size_t sizes[] = {0, 1, 3, 8, 48, 49, 64, 1000, 4096, 32 * 1024 - 16, 32 * 1024, 65537,
                          (1u << 20) + 3, 8u << 20};
  const int me = c.rank(), n = c.size();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b || (me != a && me != b)) continue;
      for (size_t size : sizes) {
        std::vector<uint8_t> out(size), in(size + 5, 0xee);
        if (me == a) {
          fill(out, a, b);
          c.send(out.data(), size, b, 7).wait();
          c.recv(in.data(), in.size(), b, 8).wait();
          expect(in, size, b, a);
        } else {
          c.recv(in.data(), in.size(), a, 7).wait();
          expect(in, size, a, b);
          fill(out, b, a);
          c.send(out.data(), size, a, 8).wait();
        }
      }
    }
}

/// Every rank sends K tagged messages to every other, tags in descending order; receivers post
/// in ascending order (so most arrive unexpected), all in flight at once.
void out_of_order(Communicator& c) {
  const int me = c.rank(), n = c.size(), K = 16;
  std::vector<std::vector<uint32_t>> out(static_cast<size_t>(n * K)), in(static_cast<size_t>(n * K));
  std::vector<Work> works;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int k = K - 1; k >= 0; --k) {
      auto& b = out[static_cast<size_t>(p * K + k)];
      b.assign(static_cast<size_t>(k * 100 + 1), static_cast<uint32_t>(me * 1000000 + p * 1000 + k));
      works.push_back(c.send(b.data(), b.size() * 4, p, static_cast<uint32_t>(k)));
    }
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int k = 0; k < K; ++k) {
      auto& b = in[static_cast<size_t>(p * K + k)];
      b.assign(static_cast<size_t>(k * 100 + 1), 0);
      works.push_back(c.recv(b.data(), b.size() * 4, p, static_cast<uint32_t>(k)));
    }
  }
  for (auto& w : works) w.wait();
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    for (int k = 0; k < K; ++k)
      for (uint32_t v : in[static_cast<size_t>(p * K + k)])
        COMM_CHECK(v == static_cast<uint32_t>(p * 1000000 + me * 1000 + k), "tag %d from %d", k, p);
  }
}

/// Same tag, many messages: delivered in order.
void ordering(Communicator& c) {
  if (c.size() < 2) return;
  const int me = c.rank(), M = 200;
  if (me == 0) {
    std::vector<uint32_t> v(M);
    std::vector<Work> ws;
    for (int i = 0; i < M; ++i) {
      v[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
      ws.push_back(c.send(&v[static_cast<size_t>(i)], 4, 1, 99));
    }
    for (auto& w : ws) w.wait();
  } else if (me == 1) {
    for (int i = 0; i < M; ++i) {
      uint32_t x = 0xffffffff;
      c.recv(&x, 4, 0, 99).wait();
      COMM_CHECK(x == static_cast<uint32_t>(i), "message %d arrived as %u", i, x);
    }
  }
}

void latency(Communicator& c) {
  if (c.size() < 2 || c.rank() > 1) return;
  const int iters = 20000, warm = 2000;
  char b[8] = {};
  const int peer = 1 - c.rank();
  std::chrono::steady_clock::time_point t0;
  for (int i = 0; i < iters + warm; ++i) {
    if (i == warm) t0 = std::chrono::steady_clock::now();
    if (c.rank() == 0) {
      c.send(b, 8, peer, 1).wait();
      c.recv(b, 8, peer, 1).wait();
    } else {
      c.recv(b, 8, peer, 1).wait();
      c.send(b, 8, peer, 1).wait();
    }
  }
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
  if (c.rank() == 0)
    std::printf("p2p 8-byte ping-pong over %s: %.2f us round trip (%.2f us one way)\n",
                c.transport_name().c_str(), us, us / 2);
}

}  // namespace

int main() {
  try {
    auto world = Communicator::create_world();
    seam::test::check_rank() = world->rank();
    ping_pong(*world);
    out_of_order(*world);
    ordering(*world);
    world->barrier().wait();
    latency(*world);
    world->barrier().wait();
    if (world->rank() == 0) std::printf("p2p test passed on %d ranks (%s)\n", world->size(), world->transport_name().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error: %s\n", seam::test::check_rank(), e.what());
    return 1;
  }
  return 0;
}
