// Soak under mpirun: random collectives for a fixed time, every output element checked.
// Every rank draws the same call sequence from a shared seed (all-reduce, reduce-scatter(v),
// all-gather(v), broadcast with varying roots; on the world and on a split that is re-made now and
// then; 1-4 calls in flight before waiting; 0 to 1 MiB; f32/bf16/f64/i32; sum/max/min; in and out
// of place). Inputs are small integers drawn from (call, rank, index), so every reduction is exact
// in its dtype whatever the order, and the expectation is computed exactly. Resident memory is
// sampled at each report and must stay within a bound of its value after the first 10% of the run.
//
//   soak_check [--seconds N] [--report-every S] [--seed X] [--rss-bound-mib M]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "seam/dtype.h"
#include "seam/communicator.h"
#include "test/collectives/collective_names.h"

namespace {

using seam::DType;
using seam::test::kind_name;
using seam::ReduceOp;
using seam::comm::Communicator;
using seam::comm::Work;

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The shared sequence: every rank draws exactly the same numbers in the same order.
struct Rng {
  uint64_t s;
  uint64_t next() { return mix(s += 0x9e3779b97f4a7c15ull); }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

// Half-width of the values: sums over up to 16 ranks stay exact (bf16 holds integers to 256).
int64_t span_of(DType t) {
  switch (t) {
    case DType::bf16: return 16;
    case DType::f32: return 1 << 12;
    case DType::f64: return int64_t{1} << 40;
    default: return 1 << 20;
  }
}

int64_t value(uint64_t key, int rank, size_t i, DType t) {
  const uint64_t h = mix(mix(key + static_cast<uint64_t>(rank) * 0x632be59bd9b4e019ull) + i);
  const int64_t span = span_of(t);
  return static_cast<int64_t>(h % static_cast<uint64_t>(2 * span + 1)) - span;
}

void put(DType t, void* p, size_t i, int64_t v) {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(p)[i] = static_cast<double>(v); break;
    case DType::bf16: static_cast<uint16_t*>(p)[i] = seam::float_to_bf16(static_cast<float>(v)); break;
    default: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
  }
}

double get(DType t, const void* p, size_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::bf16: return seam::bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const int32_t*>(p)[i];
  }
}

int64_t fold(ReduceOp op, int64_t a, int64_t b) {
  return op == ReduceOp::sum ? a + b : op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
}

enum class Kind { all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast };

struct Call {
  Kind kind;
  DType dtype;
  ReduceOp op;
  bool in_place, on_split;
  uint64_t key;
  int n, me, root;
  std::vector<size_t> counts;  // each rank's block (all equal for the fixed-block kinds)
  size_t total = 0, offset = 0;  // sum of the blocks; this rank's block's start
  std::vector<uint64_t> send_store, recv_store;  // 8-byte aligned storage for every dtype
  void* send = nullptr;
  void* recv = nullptr;
  Work work;
};

void* storage(std::vector<uint64_t>& v, size_t count, DType t) {
  v.assign((count * seam::dtype_size(t) + 7) / 8 + 1, 0);
  return v.data();
}

// Draws one call (the same on every rank) and issues it on `comm`.
void issue(Call& c, Rng& rng, uint64_t call_id, uint64_t seed, Communicator& comm) {
  static const DType dtypes[] = {DType::f32, DType::bf16, DType::f64, DType::i32};
  static const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::sum, ReduceOp::max, ReduceOp::min};
  c.kind = static_cast<Kind>(rng.below(6));
  c.dtype = dtypes[rng.below(4)];
  c.op = ops[rng.below(4)];
  c.in_place = rng.below(4) == 0;
  const uint64_t root_draw = rng.below(1 << 16);
  // Sizes log-uniform up to 1 MiB, with empty calls now and then.
  size_t bytes = 0;
  if (rng.below(16) != 0) {
    const uint64_t e = rng.below(21);
    bytes = std::min<size_t>((size_t{1} << e) + rng.below(uint64_t{1} << e), size_t{1} << 20);
  }
  c.key = mix(seed ^ (call_id * 0xd1b54a32d192ed03ull));
  c.n = comm.size();
  c.me = comm.rank();
  c.root = static_cast<int>(root_draw % static_cast<uint64_t>(c.n));
  const DType t = c.dtype;
  const size_t elems = bytes / seam::dtype_size(t);
  const size_t n = static_cast<size_t>(c.n), me = static_cast<size_t>(c.me);
  // Blocks of the v-kinds from the call's key, so that every member agrees whatever comm's size.
  c.counts.assign(n, elems / n);
  if (c.kind == Kind::reduce_scatterv || c.kind == Kind::all_gatherv)
    for (size_t r = 0; r < n; ++r) {
      const uint64_t h = mix(c.key + 7 * r + 1);
      c.counts[r] = h % 8 == 0 ? 0 : static_cast<size_t>(h >> 8) % (2 * (elems / n) + 1);
    }
  c.total = 0;
  for (size_t r = 0; r < n; ++r) c.total += c.counts[r];
  c.offset = 0;
  for (size_t r = 0; r < me; ++r) c.offset += c.counts[r];
  const size_t mine = c.counts[me];
  switch (c.kind) {
    case Kind::all_reduce:
      c.send = storage(c.send_store, elems, t);
      for (size_t i = 0; i < elems; ++i) put(t, c.send, i, value(c.key, c.me, i, t));
      c.recv = c.in_place ? c.send : storage(c.recv_store, elems, t);
      c.work = comm.all_reduce(c.send, c.recv, elems, t, c.op);
      c.total = elems;
      break;
    case Kind::reduce_scatter:
    case Kind::reduce_scatterv: {
      c.send = storage(c.send_store, c.total, t);
      for (size_t i = 0; i < c.total; ++i) put(t, c.send, i, value(c.key, c.me, i, t));
      c.recv = c.in_place ? static_cast<char*>(c.send) + c.offset * seam::dtype_size(t) : storage(c.recv_store, mine, t);
      if (c.kind == Kind::reduce_scatter) c.work = comm.reduce_scatter(c.send, c.recv, mine, t, c.op);
      else c.work = comm.reduce_scatterv(c.send, c.recv, c.counts, t, c.op);
      break;
    }
    case Kind::all_gather:
    case Kind::all_gatherv: {
      c.recv = storage(c.recv_store, c.total, t);
      for (size_t i = 0; i < c.total; ++i) put(t, c.recv, i, span_of(t) + 1);  // never a drawn value
      c.send = c.in_place ? static_cast<char*>(c.recv) + c.offset * seam::dtype_size(t) : storage(c.send_store, mine, t);
      for (size_t i = 0; i < mine; ++i) put(t, c.send, i, value(c.key, c.me, i, t));
      if (c.kind == Kind::all_gather) c.work = comm.all_gather(c.send, c.recv, mine, t);
      else c.work = comm.all_gatherv(c.send, c.recv, c.counts, t);
      break;
    }
    case Kind::broadcast:
      c.recv = storage(c.recv_store, elems, t);
      for (size_t i = 0; i < elems; ++i)
        put(t, c.recv, i, c.me == c.root ? value(c.key, c.root, i, t) : span_of(t) + 1);
      c.work = comm.broadcast(c.recv, elems, t, c.root);
      c.total = elems;
      break;
  }
}

// Wrong elements of a completed call; the first few are described on stderr.
long check(const Call& c, uint64_t call_id, int world_rank, long& described) {
  const DType t = c.dtype;
  long wrong = 0;
  auto expect = [&](size_t at, int64_t want) {
    const double got = get(t, c.recv, at);
    if (got == static_cast<double>(want)) return;
    ++wrong;
    if (described++ < 5)
      std::fprintf(stderr, "rank %d: call %llu %s %s %s n=%d root=%d %s: element %zu is %g, want %lld\n", world_rank,
                   static_cast<unsigned long long>(call_id), kind_name(c.kind),
                   std::string(seam::dtype_name(t)).c_str(), std::string(seam::reduce_op_name(c.op)).c_str(), c.n,
                   c.root, c.in_place ? "in place" : "out of place", at, got, static_cast<long long>(want));
  };
  auto reduced = [&](size_t i) {
    int64_t acc = value(c.key, 0, i, t);
    for (int r = 1; r < c.n; ++r) acc = fold(c.op, acc, value(c.key, r, i, t));
    return acc;
  };
  switch (c.kind) {
    case Kind::all_reduce:
      for (size_t i = 0; i < c.total; ++i) expect(i, reduced(i));
      break;
    case Kind::reduce_scatter:
    case Kind::reduce_scatterv:
      for (size_t i = 0; i < c.counts[static_cast<size_t>(c.me)]; ++i) expect(i, reduced(c.offset + i));
      break;
    case Kind::all_gather:
    case Kind::all_gatherv: {
      size_t at = 0;
      for (int r = 0; r < c.n; ++r)
        for (size_t i = 0; i < c.counts[static_cast<size_t>(r)]; ++i) expect(at++, value(c.key, r, i, t));
      break;
    }
    case Kind::broadcast:
      for (size_t i = 0; i < c.total; ++i) expect(i, value(c.key, c.root, i, t));
      break;
  }
  return wrong;
}

// Bytes this rank received from the call (its output).
size_t output_bytes(const Call& c) {
  const bool scatter = c.kind == Kind::reduce_scatter || c.kind == Kind::reduce_scatterv;
  return (scatter ? c.counts[static_cast<size_t>(c.me)] : c.total) * seam::dtype_size(c.dtype);
}

long rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}

// Rank 0's decisions, broadcast to every rank so that all stop, report and take the baseline at
// the same call (each rank's own clock would split them).
enum Control : int32_t { keep_going = 0, stop = 1, report = 2, baseline = 4 };

}  // namespace

int main(int argc, char** argv) {
  double seconds = 20, report_every = 5;
  uint64_t seed = 35;
  long bound_mib = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (a == "--report-every") report_every = std::atof(argv[i + 1]);
    else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 0);
    else if (a == "--rss-bound-mib") bound_mib = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--seconds N] [--report-every S] [--seed X] [--rss-bound-mib M]\n", argv[0]);
      return 2;
    }
  }
  int rank = -1;
  try {
    auto world = Communicator::create_world();
    const int n = world->size(), me = world->rank();
    rank = me;
    Rng rng{seed};
    auto make_split = [&] {
      // Colors of 1 to 3 groups, members ordered up or down: the sub-communicator differs each time.
      const int groups = 1 + static_cast<int>(rng.below(static_cast<uint64_t>(std::min(n, 3))));
      const int shift = static_cast<int>(rng.below(static_cast<uint64_t>(n)));
      const bool down = rng.below(2) == 1;
      return world->split((me + shift) % groups, down ? -me : me);
    };
    auto split = make_split();
    long splits = 1, wrong = 0, described = 0, rss_failures = 0;
    uint64_t calls = 0, call_id = 0, bytes = 0;
    long base_rss = -1, max_rss = 0;
    const long start_rss = rss_kib();
    const auto t0 = std::chrono::steady_clock::now();
    double next_report = report_every;
    bool baseline_taken = false;
    for (uint64_t batch = 0;; ++batch) {
      if (batch % 4 == 0) {
        int32_t control = keep_going;
        if (me == 0) {
          const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (t >= seconds) control |= stop | report;
          if (t >= next_report) {
            control |= report;
            while (next_report <= t) next_report += report_every;
          }
          if (!baseline_taken && t >= 0.1 * seconds) control |= baseline, baseline_taken = true;
        }
        world->broadcast(&control, 1, DType::i32, 0).wait();
        if (control & (report | baseline)) {
          const long rss = rss_kib();
          max_rss = std::max(max_rss, rss);
          if (control & baseline) base_rss = rss;
          if (base_rss >= 0 && rss - base_rss > bound_mib * 1024) {
            if (rss_failures++ == 0)
              std::fprintf(stderr, "rank %d: resident %ld KiB, %+ld KiB over the baseline (bound +%ld MiB)\n", me,
                           rss, rss - base_rss, bound_mib);
          }
        }
        if (control & report) {
          // Every rank's resident memory, calls and bytes on rank 0's line (f64: exact integers).
          const double mine[3] = {static_cast<double>(rss_kib()), static_cast<double>(calls),
                                  static_cast<double>(bytes)};
          std::vector<double> all(3 * static_cast<size_t>(n));
          world->all_gather(mine, all.data(), 3, DType::f64).wait();
          if (me == 0) {
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            double total_bytes = 0;
            std::string rss;
            for (int r = 0; r < n; ++r) {
              total_bytes += all[3 * static_cast<size_t>(r) + 2];
              rss += (r ? "/" : "") + std::to_string(static_cast<long>(all[3 * static_cast<size_t>(r)]) / 1024);
            }
            std::printf("soak %6.1f s: %llu calls on rank 0, %.3f GiB checked on all ranks, %ld splits, RSS MiB %s\n",
                        t, static_cast<unsigned long long>(calls), total_bytes / (1u << 30), splits, rss.c_str());
            std::fflush(stdout);
          }
        }
        if (control & stop) break;
      }
      // Now and then a fresh split: the old one is dropped with nothing in flight on it.
      if (rng.below(256) == 0) {
        split.reset();
        split = make_split();
        ++splits;
      }
      const int in_flight = 1 + static_cast<int>(rng.below(4));
      std::vector<Call> batch_calls(static_cast<size_t>(in_flight));
      std::vector<uint64_t> ids(batch_calls.size());
      for (size_t k = 0; k < batch_calls.size(); ++k) {
        Call& c = batch_calls[k];
        c.on_split = rng.below(3) == 0;
        ids[k] = call_id++;
        issue(c, rng, ids[k], seed, c.on_split ? *split : *world);
      }
      // Waited for in a drawn order, not always the issue order.
      std::vector<size_t> order(batch_calls.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.below(k)]);
      for (size_t k : order) batch_calls[k].work.wait();
      for (size_t k = 0; k < batch_calls.size(); ++k) {
        wrong += check(batch_calls[k], ids[k], me, described);
        bytes += output_bytes(batch_calls[k]);
        ++calls;
      }
    }
    split.reset();
    // Every rank's verdict on every rank, so that all exit alike.
    int32_t verdict[2] = {static_cast<int32_t>(std::min<long>(wrong, 1 << 30)), static_cast<int32_t>(rss_failures)};
    world->all_reduce(verdict, verdict, 2, DType::i32, ReduceOp::sum).wait();
    if (me == 0)
      std::printf("soak at %d ranks, %.0f s, seed %llu: %llu calls, %ld splits, RSS %ld -> %ld KiB "
                  "(baseline %ld, max %ld, bound +%ld MiB): %d wrong elements, %d RSS failures\n",
                  n, seconds, static_cast<unsigned long long>(seed), static_cast<unsigned long long>(calls), splits, start_rss, rss_kib(), base_rss, max_rss, bound_mib,
                  verdict[0], verdict[1]);
    if (base_rss < 0 && me == 0) std::fprintf(stderr, "no resident-memory baseline was taken\n");
    return verdict[0] || verdict[1] || base_rss < 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 2;
  }
}
