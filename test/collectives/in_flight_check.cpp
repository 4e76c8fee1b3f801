// Integration check under mpirun: several collectives of one communicator in flight before any is
// waited for, broadcasts among them (two broadcasts with different roots; a broadcast before and
// after an all-reduce; four calls of four kinds at once), at sizes on both sides of every path's
// threshold (messages, the eager slot, the gather, single-copy). Every rank must pair the same
// calls in issue order whatever path each takes: every result is checked, and a hang ends at the
// deadline as a failure.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "seam/communicator.h"

namespace {

using seam::DType;
using seam::ReduceOp;

float value(int rank, int call, size_t i) { return static_cast<float>((rank * 131 + call * 17 + i) % 1009); }

long check(const std::vector<float>& v, size_t count, float (*want)(size_t, const void*), const void* ctx) {
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += v[i] != want(i, ctx);
  return wrong;
}

struct Ctx {
  int rank, call, n;
};
float from_root(size_t i, const void* c) {
  const Ctx& x = *static_cast<const Ctx*>(c);
  return value(x.rank, x.call, i);
}
float summed(size_t i, const void* c) {
  const Ctx& x = *static_cast<const Ctx*>(c);
  float s = 0;
  for (int r = 0; r < x.n; ++r) s += value(r, x.call, i);
  return s;
}

}  // namespace

int main() {
  long wrong = 0;
  int rank = -1;
  try {
    auto comm = seam::comm::Communicator::create_world();
    const int n = comm->size(), me = comm->rank();
    rank = me;
    const size_t counts[] = {256, 4096, 16384, 65536, 262144};  // 1 KiB to 1 MiB of floats
    int call = 0;
    for (int rep = 0; rep < 10; ++rep)
      for (size_t count : counts) {
        std::vector<float> a(count), b(count), c(count), d(count), g(count * static_cast<size_t>(n)),
            rs(count);
        auto fill = [&](std::vector<float>& v, int root, int k) {
          for (size_t i = 0; i < count; ++i) v[i] = me == root ? value(root, k, i) : -1.0f;
        };
        // Two broadcasts with different roots.
        const int r0 = call % n, r1 = (call + 1) % n;
        fill(a, r0, call);
        fill(b, r1, call + 1);
        auto w0 = comm->broadcast(a.data(), count, DType::f32, r0);
        auto w1 = comm->broadcast(b.data(), count, DType::f32, r1);
        w0.wait();
        w1.wait();
        Ctx ca{r0, call, n}, cb{r1, call + 1, n};
        wrong += check(a, count, from_root, &ca) + check(b, count, from_root, &cb);
        call += 2;
        // A broadcast, then an all-reduce, then a broadcast, all in flight.
        fill(a, r1, call);
        for (size_t i = 0; i < count; ++i) c[i] = value(me, call + 1, i);
        fill(b, r0, call + 2);
        auto x0 = comm->broadcast(a.data(), count, DType::f32, r1);
        auto x1 = comm->all_reduce(c.data(), d.data(), count, DType::f32, ReduceOp::sum);
        auto x2 = comm->broadcast(b.data(), count, DType::f32, r0);
        x2.wait();
        x1.wait();
        x0.wait();
        Ctx c0{r1, call, n}, c1{0, call + 1, n}, c2{r0, call + 2, n};
        wrong += check(a, count, from_root, &c0) + check(d, count, summed, &c1) + check(b, count, from_root, &c2);
        call += 3;
        // Four kinds at once: all-gather, broadcast, reduce-scatter, broadcast.
        for (size_t i = 0; i < count; ++i) c[i] = value(me, call, i);
        fill(a, r1, call + 1);
        std::vector<float> rs_in(count * static_cast<size_t>(n));
        for (size_t i = 0; i < rs_in.size(); ++i) rs_in[i] = value(me, call + 2, i);
        fill(b, r0, call + 3);
        auto y0 = comm->all_gather(c.data(), g.data(), count, DType::f32);
        auto y1 = comm->broadcast(a.data(), count, DType::f32, r1);
        auto y2 = comm->reduce_scatter(rs_in.data(), rs.data(), count, DType::f32, ReduceOp::sum);
        auto y3 = comm->broadcast(b.data(), count, DType::f32, r0);
        y3.wait();
        y1.wait();
        y2.wait();
        y0.wait();
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < count; ++i) wrong += g[static_cast<size_t>(r) * count + i] != value(r, call, i);
        Ctx d1{r1, call + 1, n}, d3{r0, call + 3, n};
        wrong += check(a, count, from_root, &d1) + check(b, count, from_root, &d3);
        for (size_t i = 0; i < count; ++i) {
          float s = 0;
          for (int r = 0; r < n; ++r) s += value(r, call + 2, static_cast<size_t>(me) * count + i);
          wrong += rs[i] != s;
        }
        call += 4;
      }
    comm->barrier().wait();
    if (wrong) std::fprintf(stderr, "rank %d: %ld wrong elements\n", me, wrong);
    else if (me == 0) std::printf("in-flight calls at %d ranks: every result right\n", n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 2;
  }
  return wrong ? 1 : 0;
}
