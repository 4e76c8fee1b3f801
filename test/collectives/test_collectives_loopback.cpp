// Every collective x dtype x op x in/out-of-place x 1..5 ranks x counts (0, 1, not divisible by
// the rank count, multi-MiB) on threads over the loopback transport, against a reference
// computed independently in double. Registered three times: automatic selection, SEAM_ALGO=direct
// and SEAM_ALGO=ring with small chunks (so both algorithms and their pipelining are covered).
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "layouts/errors.h"
#include "runtime/collectives/collectives.h"
#include "test/collectives/loopback_ranks.h"
#include "test/collectives/reference.h"

namespace seam::test {
namespace {

using collectives::Group;
using Bytes = std::vector<char>;

constexpr DType kDtypes[] = {DType::f32, DType::f64, DType::i32, DType::bf16, DType::f16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min};
constexpr size_t kCounts[] = {0, 1, 7, 1000};
constexpr size_t kLarge = size_t{1} << 20;  // 4 MiB of f32 per rank

struct Case {
  int ranks;
  size_t count;  // per rank's block (all_reduce: the whole buffer)
  DType dtype;
  ReduceOp op;
  bool in_place;
};

/// Uneven blocks with zeros: rank r's share is (count + r) elements except every third rank
/// (r % 3 == 1), which gets none.
std::vector<size_t> uneven_counts(int ranks, size_t count) {
  std::vector<size_t> counts(ranks);
  for (int r = 0; r < ranks; ++r) counts[r] = r % 3 == 1 ? 0 : count + r;
  return counts;
}

std::vector<Bytes> inputs(const Case& c, size_t count) {
  std::vector<Bytes> in;
  for (int r = 0; r < c.ranks; ++r) in.push_back(integer_input(c.dtype, count, r));
  return in;
}

size_t bytes(const Case& c, size_t count) { return count * dtype_size(c.dtype); }

void expect_equal(const char* what, int rank, const void* actual, const std::vector<double>& ref,
                  DType dtype, double tolerance = 0) {
  long bad = first_mismatch(actual, ref, dtype, tolerance);
  INFO(what << " rank " << rank << " first wrong element " << bad);
  CHECK(bad == -1);
}

void check_all_reduce(const Case& c, bool fractional = false) {
  std::vector<Bytes> in;
  for (int r = 0; r < c.ranks; ++r)
    in.push_back(fractional ? fractional_input(c.dtype, c.count, r)
                            : integer_input(c.dtype, c.count, r));
  std::vector<Bytes> out(c.ranks, Bytes(bytes(c, c.count)));
  if (c.in_place) out = in;
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    const void* send = c.in_place ? out[r].data() : in[r].data();
    return collectives::all_reduce(g, send, out[r].data(), c.count, c.dtype, c.op);
  });
  std::vector<double> ref(c.count);
  for (size_t i = 0; i < c.count; ++i) ref[i] = reduce_reference(in, i, c.dtype, c.op);
  // FP32 accumulation, rounded once (direct) or once per ring hop.
  double tolerance = fractional ? c.ranks * 1.0 / 128 : 0;
  for (int r = 0; r < c.ranks; ++r) expect_equal("all_reduce", r, out[r].data(), ref, c.dtype, tolerance);
}

/// reduce_scatter (equal) or reduce_scatterv (uneven) with NCCL's in-place convention:
/// recv = send + offset of the rank's block.
void check_reduce_scatter(const Case& c, bool uneven) {
  auto counts = uneven ? uneven_counts(c.ranks, c.count) : std::vector<size_t>(c.ranks, c.count);
  std::vector<size_t> off(c.ranks + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), off.begin() + 1);
  const size_t total = off.back();
  auto in = inputs(c, total);
  std::vector<Bytes> work = in;  // in-place buffers
  std::vector<Bytes> out(c.ranks);
  for (int r = 0; r < c.ranks; ++r) out[r].resize(bytes(c, counts[r]) + 1);
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    const void* send = c.in_place ? work[r].data() : in[r].data();
    void* recv = c.in_place ? work[r].data() + bytes(c, off[r]) : out[r].data();
    if (uneven) return collectives::reduce_scatterv(g, send, recv, counts, c.dtype, c.op);
    return collectives::reduce_scatter(g, send, recv, c.count, c.dtype, c.op);
  });
  for (int r = 0; r < c.ranks; ++r) {
    std::vector<double> ref(counts[r]);
    for (size_t i = 0; i < counts[r]; ++i) ref[i] = reduce_reference(in, off[r] + i, c.dtype, c.op);
    const char* result = c.in_place ? work[r].data() + bytes(c, off[r]) : out[r].data();
    expect_equal(uneven ? "reduce_scatterv" : "reduce_scatter", r, result, ref, c.dtype);
  }
}

/// all_gather / all_gatherv with the in-place convention send = recv + offset of the block.
void check_all_gather(const Case& c, bool uneven) {
  auto counts = uneven ? uneven_counts(c.ranks, c.count) : std::vector<size_t>(c.ranks, c.count);
  std::vector<size_t> off(c.ranks + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), off.begin() + 1);
  std::vector<Bytes> in;
  for (int r = 0; r < c.ranks; ++r) in.push_back(integer_input(c.dtype, counts[r], r));
  std::vector<Bytes> out(c.ranks, Bytes(bytes(c, off.back())));
  if (c.in_place)
    for (int r = 0; r < c.ranks; ++r)
      if (counts[r]) std::memcpy(out[r].data() + bytes(c, off[r]), in[r].data(), in[r].size());
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    const void* send = c.in_place ? out[r].data() + bytes(c, off[r]) : in[r].data();
    if (uneven) return collectives::all_gatherv(g, send, out[r].data(), counts, c.dtype);
    return collectives::all_gather(g, send, out[r].data(), c.count, c.dtype);
  });
  std::vector<double> ref(off.back());
  for (int p = 0; p < c.ranks; ++p)
    for (size_t i = 0; i < counts[p]; ++i) ref[off[p] + i] = get_element(in[p].data(), i, c.dtype);
  for (int r = 0; r < c.ranks; ++r)
    expect_equal(uneven ? "all_gatherv" : "all_gather", r, out[r].data(), ref, c.dtype);
}

void check_broadcast(const Case& c, int root) {
  auto in = inputs(c, c.count);
  std::vector<Bytes> buf(c.ranks, Bytes(bytes(c, c.count)));
  buf[root] = in[root];
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    return collectives::broadcast(g, buf[r].data(), c.count, c.dtype, root);
  });
  std::vector<double> ref(c.count);
  for (size_t i = 0; i < c.count; ++i) ref[i] = get_element(in[root].data(), i, c.dtype);
  for (int r = 0; r < c.ranks; ++r) expect_equal("broadcast", r, buf[r].data(), ref, c.dtype);
}

void check_scatterv(const Case& c, int root) {
  auto counts = uneven_counts(c.ranks, c.count);
  std::vector<size_t> off(c.ranks + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), off.begin() + 1);
  Bytes source = integer_input(c.dtype, off.back(), root);
  std::vector<Bytes> out(c.ranks);
  for (int r = 0; r < c.ranks; ++r) out[r].resize(bytes(c, counts[r]));
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    bool in_place_root = c.in_place && r == root;
    void* recv = in_place_root ? source.data() + bytes(c, off[r]) : out[r].data();
    return collectives::scatterv(g, r == root ? source.data() : nullptr, recv, counts, c.dtype, root);
  });
  for (int r = 0; r < c.ranks; ++r) {
    if (c.in_place && r == root) continue;  // its block never moved
    std::vector<double> ref(counts[r]);
    for (size_t i = 0; i < counts[r]; ++i) ref[i] = get_element(source.data(), off[r] + i, c.dtype);
    expect_equal("scatterv", r, out[r].data(), ref, c.dtype);
  }
}

template <class Check>
void for_each_case(Check check) {
  for (int ranks = 1; ranks <= 5; ++ranks)
    for (DType dtype : kDtypes)
      for (ReduceOp op : kOps)
        for (size_t count : kCounts)
          for (bool in_place : {false, true}) {
            Case c{ranks, count, dtype, op, in_place};
            CAPTURE(ranks);
            CAPTURE(count);
            CAPTURE(dtype_name(dtype));
            CAPTURE(reduce_op_name(op));
            CAPTURE(in_place);
            check(c);
          }
}

/// Multi-MiB buffers: f32 and bf16 sums at a few rank counts.
template <class Check>
void for_each_large_case(Check check) {
  for (int ranks : {2, 3, 5})
    for (DType dtype : {DType::f32, DType::bf16})
      for (bool in_place : {false, true}) {
        Case c{ranks, kLarge, dtype, ReduceOp::sum, in_place};
        CAPTURE(ranks);
        CAPTURE(dtype_name(dtype));
        CAPTURE(in_place);
        check(c);
      }
}

}  // namespace

TEST_CASE("all_reduce") {
  for_each_case([](const Case& c) { check_all_reduce(c); });
  for_each_large_case([](const Case& c) { check_all_reduce(c); });
}

TEST_CASE("all_reduce of non-integer half values stays within FP32-accumulation tolerance") {
  for (int ranks = 2; ranks <= 5; ++ranks)
    for (DType dtype : {DType::bf16, DType::f16})
      check_all_reduce({ranks, 3001, dtype, ReduceOp::sum, false}, true);
}

TEST_CASE("reduce_scatter") {
  for_each_case([](const Case& c) { check_reduce_scatter(c, false); });
  for_each_large_case([](const Case& c) { check_reduce_scatter(c, false); });
}

TEST_CASE("reduce_scatterv (uneven counts, zeros)") {
  for_each_case([](const Case& c) { check_reduce_scatter(c, true); });
  for_each_large_case([](const Case& c) { check_reduce_scatter(c, true); });
}

TEST_CASE("all_gather") {
  for_each_case([](const Case& c) {
    if (c.op == ReduceOp::sum) check_all_gather(c, false);
  });
  for_each_large_case([](const Case& c) { check_all_gather(c, false); });
}

TEST_CASE("all_gatherv (uneven counts, zeros)") {
  for_each_case([](const Case& c) {
    if (c.op == ReduceOp::sum) check_all_gather(c, true);
  });
  for_each_large_case([](const Case& c) { check_all_gather(c, true); });
}

TEST_CASE("broadcast from every root") {
  for_each_case([](const Case& c) {
    if (c.op != ReduceOp::sum || c.in_place) return;
    for (int root = 0; root < c.ranks; ++root) check_broadcast(c, root);
  });
  for_each_large_case([](const Case& c) { check_broadcast(c, c.ranks - 1); });
}

TEST_CASE("scatterv from every root") {
  for_each_case([](const Case& c) {
    if (c.op != ReduceOp::sum) return;
    for (int root = 0; root < c.ranks; ++root) check_scatterv(c, root);
  });
}

TEST_CASE("barrier completes at every size") {
  for (int ranks = 1; ranks <= 5; ++ranks)
    run_on_ranks(ranks, [](int, Group& g) { return collectives::barrier(g); });
}

TEST_CASE("ranks that disagree on the count get a MismatchError") {
  std::vector<Bytes> buf{Bytes(40), Bytes(48)};
  CHECK_THROWS_AS(run_on_ranks(2,
                               [&](int r, Group& g) {
                                 size_t count = r == 0 ? 10 : 12;
                                 return collectives::all_reduce(g, buf[r].data(), buf[r].data(),
                                                                count, DType::f32, ReduceOp::sum);
                               }),
                  MismatchError);
}

TEST_CASE("bad arguments are rejected before anything is sent") {
  std::vector<size_t> two{1, 1};
  Bytes buf(64);
  run_on_ranks(3, [&](int, Group& g) {
    CHECK_THROWS_AS(collectives::reduce_scatterv(g, buf.data(), buf.data(), two, DType::f32,
                                                 ReduceOp::sum),
                    ValueError);
    CHECK_THROWS_AS(collectives::all_reduce(g, buf.data(), buf.data(), 4, DType::u8, ReduceOp::sum),
                    ValueError);
    CHECK_THROWS_AS(collectives::broadcast(g, buf.data(), 4, DType::f32, 3), ValueError);
    return collectives::barrier(g);
  });
}

}  // namespace seam::test
