// The shared-memory transport on threads (framing, matching, streaming, errors) and on forked
// processes (a dead peer fails pending requests, naming it).
#include <cstdint>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "seam/errors.h"
#include "runtime/bootstrap/bootstrap.h"
#include "test/transports/listen_port.h"
#include "thread_exchange.h"
#include "transports/shm/shm_transport.h"
#include "transports/ucx/ucx_transport.h"

using namespace seam;
using transport::RequestPtr;
using Clock = std::chrono::steady_clock;

namespace {

void wait_all(transport::Transport& t, const std::vector<RequestPtr>& reqs, int seconds = 30) {
  auto deadline = Clock::now() + std::chrono::seconds(seconds);
  auto done = [&] {
    for (auto& r : reqs)
      if (!r->finished()) return false;
    return true;
  };
  while (!done()) {
    if (!t.progress()) t.wait_for_activity(std::chrono::microseconds(1000));
    REQUIRE(Clock::now() < deadline);
  }
}

enum class Kind { shm, shm_cma, ucx };

/// Runs body(rank, transport) on n threads, each with its own transport of `kind`.
template <class F>
void on_threads(Kind kind, int n, size_t ring_bytes, F body) {
  test::ThreadExchangeHub hub(n);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        test::ThreadExchange ex(hub, r);
        std::vector<int> local(static_cast<size_t>(n));
        std::iota(local.begin(), local.end(), 0);
        std::unique_ptr<transport::Transport> t;
        if (kind != Kind::ucx) {
          // shm: every message through the ring; shm_cma: from 1000 bytes straight from the sender.
          t = shm::ShmTransport::create(ex, local, ring_bytes, std::chrono::milliseconds(10000),
                                        kind == Kind::shm_cma ? 1000 : 0);
        } else {
          std::vector<std::string> hosts(static_cast<size_t>(n), "thread-host");
          std::vector<int> pids(static_cast<size_t>(n), getpid());
          t = ucx::UcxTransport::create(ex, hosts, pids, std::chrono::milliseconds(10000), true);
        }
        body(r, *t);
        ex.all_gather("done");  // keep the segment mapped until everyone finished
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) CHECK_MESSAGE(errors[static_cast<size_t>(r)].empty(), "rank ", r, ": ", errors[static_cast<size_t>(r)]);
}

std::vector<uint8_t> pattern(size_t n, int salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + salt * 7 + (i >> 9));
  return v;
}

}  // namespace

void sizes_case(Kind kind) {
  const std::vector<size_t> sizes = {0, 1, 15, 16, 17, 47, 48, 49, 63, 64, 65, 4095, 4096, 32 * 1024,
                                     32 * 1024 + 1, 100000, 3 * 65536 + 5, 1 << 20};
  on_threads(kind, 2, 64 * 1024, [&](int rank, transport::Transport& t) {
    const int peer = 1 - rank;
    for (size_t s : sizes) {
      auto out = pattern(s, rank);
      std::vector<uint8_t> in(s + 3, 0xcc);
      auto rr = t.irecv(peer, s, in.data(), in.size());
      auto sr = t.isend(peer, s, out.data(), s);
      wait_all(t, {rr, sr});
      REQUIRE(rr->done());
      REQUIRE(sr->done());
      CHECK(rr->received_bytes() == s);
      CHECK(std::equal(in.begin(), in.begin() + static_cast<long>(s), pattern(s, peer).begin()));
      CHECK(in[s] == 0xcc);
    }
  });
}

void order_case(Kind kind) {
  on_threads(kind, 3, 4096, [&](int rank, transport::Transport& t) {
    const int K = 20;
    std::vector<RequestPtr> reqs;
    std::vector<std::vector<int>> out, in;
    out.reserve(64);
    in.reserve(64);
    for (int p = 0; p < 3; ++p) {
      if (p == rank) continue;
      for (int k = K - 1; k >= 0; --k) {  // descending tags, sizes that exceed the 4 KiB ring
        out.emplace_back(static_cast<size_t>(k * 50 + 1), rank * 1000 + k);
        reqs.push_back(t.isend(p, static_cast<uint64_t>(k % 5), out.back().data(), out.back().size() * sizeof(int)));
      }
    }
    for (int p = 0; p < 3; ++p) {
      if (p == rank) continue;
      // tags 0..4, each tag's messages in send order (k descending within a tag)
      for (int tag = 0; tag < 5; ++tag)
        for (int k = K - 1; k >= 0; --k) {
          if (k % 5 != tag) continue;
          in.emplace_back(static_cast<size_t>(k * 50 + 1), -1);
          reqs.push_back(t.irecv(p, static_cast<uint64_t>(tag), in.back().data(), in.back().size() * sizeof(int)));
        }
    }
    wait_all(t, reqs);
    for (auto& r : reqs) REQUIRE(r->done());
    size_t idx = 0;
    for (int p = 0; p < 3; ++p) {
      if (p == rank) continue;
      for (int tag = 0; tag < 5; ++tag)
        for (int k = K - 1; k >= 0; --k) {
          if (k % 5 != tag) continue;
          for (int v : in[idx]) REQUIRE(v == p * 1000 + k);
          ++idx;
        }
    }
  });
}

void mismatch_case(Kind kind) {
  on_threads(kind, 2, 4096, [&](int rank, transport::Transport& t) {
    std::vector<char> big(10000, 'x'), small(100);
    int after = 0, got = 0;
    if (rank == 0) {
      wait_all(t, {t.isend(1, 1, big.data(), big.size()), t.isend(1, 2, &after, sizeof(after))});
    } else {
      auto r = t.irecv(0, 1, small.data(), small.size());
      auto r2 = t.irecv(0, 2, &got, sizeof(got));
      wait_all(t, {r, r2});
      REQUIRE(r->failed());
      CHECK(r->error().find("size mismatch") != std::string::npos);
      if (kind != Kind::ucx) CHECK(r->error().find("10000-byte message") != std::string::npos);
      CHECK(r->error().find("100-byte receive") != std::string::npos);
      CHECK(r2->done());
    }
  });
}

void self_case(Kind kind) {
  on_threads(kind, 2, 4096, [&](int rank, transport::Transport& t) {
    int a = 42, b = 0;
    wait_all(t, {t.isend(rank, 9, &a, 4), t.irecv(rank, 9, &b, 4)});
    CHECK(b == 42);
    std::vector<uint32_t> out(2000), in(2000, 0);
    std::iota(out.begin(), out.end(), 0u);
    std::vector<RequestPtr> reqs;
    for (size_t i = 0; i < out.size(); ++i) reqs.push_back(t.isend(1 - rank, 5, &out[i], 4));
    for (size_t i = 0; i < in.size(); ++i) reqs.push_back(t.irecv(1 - rank, 5, &in[i], 4));
    wait_all(t, reqs);
    CHECK(in == out);
  });
}

TEST_CASE("shm: every size from 0 bytes to several rings, both directions at once") { sizes_case(Kind::shm); }
TEST_CASE("shm (cma): every size from 0 bytes to several rings") { sizes_case(Kind::shm_cma); }
TEST_CASE("ucx: every size from 0 bytes to several MiB, both directions at once") { sizes_case(Kind::ucx); }
TEST_CASE("shm: tags match out of order; same tag keeps order") { order_case(Kind::shm); }
TEST_CASE("shm (cma): tags match out of order; same tag keeps order") { order_case(Kind::shm_cma); }
TEST_CASE("ucx: tags match out of order; same tag keeps order") { order_case(Kind::ucx); }
TEST_CASE("shm: a receive smaller than the message fails naming both sizes") { mismatch_case(Kind::shm); }
TEST_CASE("shm (cma): a receive smaller than the message fails naming both sizes") { mismatch_case(Kind::shm_cma); }
TEST_CASE("ucx: a receive smaller than the message fails") { mismatch_case(Kind::ucx); }
TEST_CASE("shm: send to self, and many small messages in flight") { self_case(Kind::shm); }
TEST_CASE("shm (cma): send to self, and many small messages in flight") { self_case(Kind::shm_cma); }
TEST_CASE("ucx: send to self, and many small messages in flight") { self_case(Kind::ucx); }

TEST_CASE("shm (cma): a send whose acknowledgement slot an unread message holds still completes") {
  // Cma send 1 (tag 9) stays unread while sends 2..65 (tag 1) are read one by one; send 65
  // maps to send 1's slot. The receiver reads 65, then 1, before the sender looks again: had
  // 65 taken that slot, the acknowledgement of 1 would overwrite its own and 65 never complete.
  std::barrier sync(2);
  on_threads(Kind::shm_cma, 2, 64 * 1024, [&](int rank, transport::Transport& t) {
    std::vector<uint8_t> x(4000, 7), y(2000, 3);
    if (rank == 0) {
      auto unread = t.isend(1, 9, x.data(), x.size());
      for (int i = 0; i < 63; ++i) wait_all(t, {t.isend(1, 1, y.data(), y.size())}, 5);
      auto last = t.isend(1, 1, y.data(), y.size());
      sync.arrive_and_wait();  // the receiver reads `last`, then `unread`, meanwhile
      sync.arrive_and_wait();
      wait_all(t, {last, unread}, 5);
      CHECK(last->done());
      CHECK(unread->done());
    } else {
      std::vector<uint8_t> in(4000);
      for (int i = 0; i < 63; ++i) wait_all(t, {t.irecv(0, 1, in.data(), in.size())}, 5);
      sync.arrive_and_wait();
      wait_all(t, {t.irecv(0, 1, in.data(), in.size())}, 5);
      wait_all(t, {t.irecv(0, 9, in.data(), in.size())}, 5);
      CHECK(in[0] == 7);
      sync.arrive_and_wait();
    }
  });
}

TEST_CASE("shm: a sleeper rung before its last look is still woken by the next publisher") {
  // Rank 0 waits on what ranks 1 and 2 publish in shared memory (a collective's round flags).
  // It marks itself asleep; rank 1 publishes and rings it; its last look (progress) misses rank
  // 2's publication; rank 2 publishes after that look and must ring it too, so its sleep ends at
  // once. A publisher that cleared the mark when it rang left rank 2 nothing to see, and rank 0
  // slept out each wait (5 ms): 20 rounds then take 100 ms, against well under 40 ms.
  constexpr int kRounds = 20;
  std::barrier step(3);
  double slept = 0;
  const int sleeper[] = {0};
  on_threads(Kind::shm, 3, 64 * 1024, [&](int rank, transport::Transport& t) {
    auto& bells = dynamic_cast<transport::Doorbells&>(t);
    for (int k = 0; k < kRounds; ++k) {
      if (rank == 0) REQUIRE(bells.mark_asleep(true));
      step.arrive_and_wait();
      if (rank == 1) bells.wake_if_sleeping(sleeper);
      step.arrive_and_wait();
      if (rank == 0) t.progress();  // the last look: sees the first ring
      step.arrive_and_wait();
      if (rank == 2) bells.wake_if_sleeping(sleeper);
      step.arrive_and_wait();
      if (rank == 0) {
        const auto start = Clock::now();
        t.wait_for_activity(std::chrono::microseconds(5000));
        slept += std::chrono::duration<double>(Clock::now() - start).count();
      }
      step.arrive_and_wait();
    }
  });
  CHECK(slept < 0.040);
}

TEST_CASE("shm: a rank finds the peers that last ran on its CPU, and no others") {
  // The CPU numbers are the callers' (a waiting rank passes sched_getcpu()); each call records
  // the caller's in turn. Rank 2 never calls: unknown, never a match (not even for CPU 0).
  std::barrier step(3);
  std::vector<int> answers(8, -1);
  on_threads(Kind::shm, 3, 64 * 1024, [&](int rank, transport::Transport& t) {
    auto& bells = dynamic_cast<transport::Doorbells&>(t);
    auto ask = [&](int slot, int cpu) { answers[static_cast<size_t>(slot)] = bells.peer_on_cpu(cpu); };
    if (rank == 0) ask(0, 0);  // nobody recorded yet
    step.arrive_and_wait();
    if (rank == 1) ask(1, 3);  // rank 0 is on 0
    step.arrive_and_wait();
    if (rank == 0) ask(2, 3);  // rank 1 is on 3: it moved here
    step.arrive_and_wait();
    if (rank == 1) ask(3, 5);  // rank 0 is on 3 now
    step.arrive_and_wait();
    if (rank == 0) ask(4, 1);  // rank 1 on 5
    step.arrive_and_wait();
    if (rank == 1) ask(5, 1);  // rank 0 moved to 1 too
    step.arrive_and_wait();
    if (rank == 2) ask(6, -1);  // a caller that cannot tell its CPU hands the core over
  });
  CHECK(answers[0] == 0);
  CHECK(answers[1] == 0);
  CHECK(answers[2] == 1);
  CHECK(answers[3] == 0);
  CHECK(answers[4] == 0);
  CHECK(answers[5] == 1);
  CHECK(answers[6] == 1);
}

TEST_CASE("shm: a dead peer fails pending requests naming its rank and pid, within milliseconds") {
  // Two processes bootstrapped through the TCP store.
  const std::string addr = "127.0.0.1:" + std::to_string(seam::test::listen_port());
  pid_t child = fork();
  if (child == 0) {
    try {
      auto bs = bootstrap::create_store({addr, 1, 2, "5e0c2f9a81b7d4436a9e0f12c8b35d7e", std::chrono::milliseconds(10000)});
      auto t = shm::ShmTransport::create(*bs, {0, 1}, 4096, std::chrono::milliseconds(10000));
      int x = 5;
      auto r = t->isend(0, 1, &x, 4);  // delivered before we die
      bs->barrier();
      bs->finish();
    } catch (...) {
      _exit(2);
    }
    _exit(0);  // dies without a word
  }
  auto bs = bootstrap::create_store({addr, 0, 2, "5e0c2f9a81b7d4436a9e0f12c8b35d7e", std::chrono::milliseconds(10000)});
  auto t = shm::ShmTransport::create(*bs, {0, 1}, 4096, std::chrono::milliseconds(10000));
  bs->barrier();
  bs->finish();
  int got = 0, never = 0;
  auto first = t->irecv(1, 1, &got, 4);
  auto second = t->irecv(1, 2, &never, 4);
  auto start = Clock::now();
  wait_all(*t, {first, second});
  int st = 0;
  waitpid(child, &st, 0);
  CHECK(first->done());
  CHECK(got == 5);
  REQUIRE(second->failed());
  CHECK(second->error().find("rank 1") != std::string::npos);
  CHECK(second->error().find("pid " + std::to_string(child)) != std::string::npos);
  CHECK(second->peer() == 1);
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  CHECK_FALSE(t->peer_alive(1));
  // New requests to it fail at once.
  CHECK(t->isend(1, 3, &got, 4)->failed());
}
