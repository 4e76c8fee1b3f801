// Sub-communicators at any rank count: split(color, key) with MPI ordering, group(ranks) in the
// listed order, nested splits, and operations of different communicators in flight at once
// (their messages must never match each other's; waiting on a later one must not deadlock an
// earlier one). Over hosts (SEAM_HOSTNAME set per rank), a split by host reports the shm
// transport: its collectives run out of shared memory.
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "comm_check.h"
#include "seam/errors.h"
#include "seam/communicator.h"

using seam::DType;
using seam::ReduceOp;
using seam::comm::Communicator;
using seam::comm::Work;

namespace {

int32_t sum_world(const Communicator& c) {
  int32_t s = 0;
  for (int r = 0; r < c.size(); ++r) s += c.world_rank(r);
  return s;
}

void check_sum(Communicator& c, const char* what) {
  int32_t mine = c.world_rank(c.rank()), out = -1;
  c.all_reduce(&mine, &out, 1, DType::i32, ReduceOp::sum).wait();
  COMM_CHECK(out == sum_world(c), "%s: all_reduce gave %d, expected %d", what, out, sum_world(c));
  // p2p around the ring of the sub-communicator
  if (c.size() > 1) {
    int32_t to = c.world_rank(c.rank()), from = -1;
    int right = (c.rank() + 1) % c.size(), left = (c.rank() + c.size() - 1) % c.size();
    Work s = c.send(&to, 4, right, 5);
    c.recv(&from, 4, left, 5).wait();
    s.wait();
    COMM_CHECK(from == c.world_rank(left), "%s: ring p2p got %d from %d", what, from, c.world_rank(left));
  }
}

}  // namespace

int main() {
  try {
    auto world = Communicator::create_world();
    const int me = world->rank(), n = world->size();
    seam::test::check_rank() = me;
    check_sum(*world, "world");

    // split: even/odd, ordered by descending world rank.
    auto half = world->split(me % 2, -me);
    COMM_CHECK(half, "split returned null");
    std::vector<int> expect;
    for (int r = n - 1; r >= 0; --r)
      if (r % 2 == me % 2) expect.push_back(r);
    COMM_CHECK(half->size() == static_cast<int>(expect.size()), "split size %d", half->size());
    for (int r = 0; r < half->size(); ++r) COMM_CHECK(half->world_rank(r) == expect[static_cast<size_t>(r)], "split order");
    COMM_CHECK(half->world_rank(half->rank()) == me, "split: my rank");
    check_sum(*half, "split");

    // split with a negative color on rank 0 and equal keys (ties by parent rank).
    auto most = world->split(me == 0 ? -1 : 7, 0);
    COMM_CHECK((me == 0) == (most == nullptr), "negative color");
    if (most) {
      COMM_CHECK(most->size() == n - 1 && most->rank() == me - 1, "tie order");
      check_sum(*most, "split-negative");
    }

    // group: every rank, reversed.
    std::vector<int> rev(static_cast<size_t>(n));
    std::iota(rev.rbegin(), rev.rend(), 0);
    auto reversed = world->group(rev);
    COMM_CHECK(reversed && reversed->rank() == n - 1 - me, "reversed group rank");
    check_sum(*reversed, "reversed");

    // group of a subset (only the members call it) while others go on to the next step.
    std::vector<int> firsts;
    for (int r = 0; r < std::max(1, n / 2); ++r) firsts.push_back(r);
    if (me < static_cast<int>(firsts.size())) {
      auto g = world->group(firsts);
      COMM_CHECK(g && g->rank() == me, "subset group");
      check_sum(*g, "subset");
      // a nested split inside it
      auto nested = g->split(0, g->size() - g->rank());
      COMM_CHECK(nested && nested->rank() == g->size() - 1 - g->rank(), "nested split");
      check_sum(*nested, "nested");
    }

    // operations of three communicators in flight; wait on the last first.
    std::vector<int32_t> a(1000, me), b(1000, me), cc(1000, me);
    std::vector<int32_t> ra(1000), rb(1000), rc(1000);
    Work wa = world->all_reduce(a.data(), ra.data(), a.size(), DType::i32, ReduceOp::sum);
    Work wb = half->all_reduce(b.data(), rb.data(), b.size(), DType::i32, ReduceOp::max);
    Work wc = reversed->all_reduce(cc.data(), rc.data(), cc.size(), DType::i32, ReduceOp::min);
    wc.wait();
    wb.wait();
    wa.wait();
    int32_t max_half = *std::max_element(expect.begin(), expect.end());
    for (size_t i = 0; i < 1000; ++i) {
      COMM_CHECK(ra[i] == n * (n - 1) / 2, "concurrent world sum");
      COMM_CHECK(rb[i] == max_half, "concurrent half max");
      COMM_CHECK(rc[i] == 0, "concurrent reversed min");
    }
    // Two communicators with the same members (a split into one color keeps world's order):
    // even ranks issue world's call first, odd ranks the twin's. Their shared-memory state must
    // be kept apart, so neither call sees the other's data (several shm rounds each).
    auto twin = world->split(0, me);
    std::vector<int32_t> x(100000, me + 1), y(100000, 2 * me), rx(x.size()), ry(y.size());
    Work wx, wy;
    if (me % 2 == 0) {
      wx = world->all_reduce(x.data(), rx.data(), x.size(), DType::i32, ReduceOp::sum);
      wy = twin->all_reduce(y.data(), ry.data(), y.size(), DType::i32, ReduceOp::sum);
    } else {
      wy = twin->all_reduce(y.data(), ry.data(), y.size(), DType::i32, ReduceOp::sum);
      wx = world->all_reduce(x.data(), rx.data(), x.size(), DType::i32, ReduceOp::sum);
    }
    wy.wait();
    wx.wait();
    for (size_t i = 0; i < x.size(); ++i) {
      COMM_CHECK(rx[i] == n * (n + 1) / 2, "world, twin in flight: %d", rx[i]);
      COMM_CHECK(ry[i] == n * (n - 1), "twin, world in flight: %d", ry[i]);
    }
    // Rank 0 issues collectives while its peers hold back: the 4,096th outstanding one is
    // refused; the others then complete.
    if (n > 1) {
      world->barrier().wait();
      std::vector<int32_t> ones(4095, 1), sums(4095);
      std::vector<Work> issued;
      if (me == 0) {
        for (size_t i = 0; i < ones.size(); ++i)
          issued.push_back(world->all_reduce(&ones[i], &sums[i], 1, DType::i32, ReduceOp::sum));
        bool refused = false;
        try {
          world->all_reduce(&ones[0], &sums[0], 1, DType::i32, ReduceOp::sum);
        } catch (const seam::UsageError&) {
          refused = true;
        }
        COMM_CHECK(refused, "a 4096th outstanding collective was accepted");
        world->send(&me, sizeof me, 1, 77).wait();  // now the peers may call
      } else if (me == 1) {
        int token = 0;
        world->recv(&token, sizeof token, 0, 77).wait();
      }
      if (me != 0)
        for (size_t i = 0; i < ones.size(); ++i)
          issued.push_back(world->all_reduce(&ones[i], &sums[i], 1, DType::i32, ReduceOp::sum));
      for (auto& w : issued) w.wait();
      for (int32_t s : sums) COMM_CHECK(s == n, "outstanding collectives: sum %d", s);
    }
    if (const char* host = std::getenv("SEAM_HOSTNAME"); host && world->transport_name() == "shm+ucx") {
      auto local = world->split(static_cast<int>(std::hash<std::string>{}(host) & 0x7fffffff), me);
      COMM_CHECK(local->transport_name() == "shm", "split by host: transport %s",
                 local->transport_name().c_str());
      check_sum(*local, "split by host");
    }
    world->barrier().wait();
    if (me == 0) std::printf("groups test passed on %d ranks (%s)\n", n, world->transport_name().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] error: %s\n", seam::test::check_rank(), e.what());
    return 1;
  }
  return 0;
}
