// All-reduce by recursive halving and doubling (Rabenseifner): a reduce-scatter in log2(p) steps,
// each exchanging half of the part still in play with the partner one bit away, then an
// all-gather retracing them. Per rank it moves as many bytes as the ring, 2 (p-1)/p of the
// buffer, in 2 log2(p) messages instead of 2 (p-1): the schedule for medium sizes over many
// ranks, where the ring pays its steps' latency and direct sends the whole buffer to everyone.
// A count of ranks that is not a power of two first folds the surplus: ranks 2i and 2i+1 for
// i < n - p combine onto 2i+1, which takes part for both and hands 2i the result at the end.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/scratch.h"

namespace seam::collectives {
namespace {

constexpr std::string_view kName = "all_reduce";
/// The step of the result handed back to a folded rank: past the 2 x 16 steps of 65536 ranks.
constexpr uint32_t kHandBackStep = 33;

/// The ranks that take part after the fold, numbered 0..p-1.
struct Folded {
  Folded(int n, int r) {
    while (p * 2 <= n) p *= 2;
    surplus = n - p;
    if (r < 2 * surplus) {
      folds_into = r % 2 == 0 ? r + 1 : -1;
      folds_from = r % 2 == 1 ? r - 1 : -1;
      me = r % 2 == 1 ? r / 2 : -1;
    } else {
      me = r - surplus;
    }
  }
  /// The group rank of participant q.
  int rank_of(int q) const { return q < surplus ? 2 * q + 1 : q + surplus; }
  int p = 1, surplus = 0;
  int me = -1;          // this rank's number among the participants; -1 when it folded
  int folds_into = -1;  // the rank this one hands its buffer to (and gets the result from)
  int folds_from = -1;  // the rank that hands this one its buffer
};

}  // namespace

comm::Task halving_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                              ReduceOp op) {
  const size_t es = dtype_size(dtype);
  const size_t bytes = count * es;
  const Folded f(g.size(), g.rank());
  // Steps: 0 the fold, 1..log2(p) the halving, then the doubling, then the result to the folded.
  uint32_t step = 0;
  std::vector<transport::RequestPtr> sends;
  if (f.folds_into >= 0) {
    sends.push_back(g.isend(f.folds_into, step, send, bytes));
    co_await received(kName, post_receive(g, f.folds_into, kHandBackStep, recv, bytes));
    co_await comm::all_of(std::move(sends));
    co_return;
  }
  const auto blocks = even_blocks(count, f.p);
  const auto at = block_offsets(blocks);
  // What arrives at once: a folded rank's whole buffer, else at most the first step's half.
  const size_t half = std::max(at[f.p / 2], at[f.p] - at[f.p / 2]);
  Scratch incoming(f.folds_from >= 0 ? bytes : half * es);
  if (f.folds_from >= 0) {
    co_await received(kName, post_receive(g, f.folds_from, step, incoming.data(), bytes));
    kernels::reduce2(recv, incoming.data(), send, count, dtype, op);  // lower rank first
  } else if (recv != send) {
    std::memcpy(recv, send, bytes);
  }
  // Halving: this rank's part shrinks from all p blocks to its own, [lo, hi).
  int lo = 0, hi = f.p;
  for (int mask = f.p / 2; mask >= 1; mask /= 2) {
    ++step;
    const int partner = f.me ^ mask, mid = lo + (hi - lo) / 2;
    const bool upper = (f.me & mask) != 0;
    const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
    const int give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
    const size_t keep = at[keep_hi] - at[keep_lo], give = at[give_hi] - at[give_lo];
    // A part of no elements (fewer elements than participants) travels as an empty message,
    // whose size the partner checks (see Chunks).
    std::vector<ExpectedReceive> theirs;
    theirs.push_back(post_receive(g, f.rank_of(partner), step, incoming.data(), keep * es));
    sends.push_back(g.isend(f.rank_of(partner), step, recv + at[give_lo] * es, give * es));
    co_await received(kName, std::move(theirs));
    char* part = recv + at[keep_lo] * es;
    // The lower participant's partial first, so every rank folds alike.
    if (upper)
      kernels::reduce2(part, incoming.data(), part, keep, dtype, op);
    else
      kernels::reduce2(part, part, incoming.data(), keep, dtype, op);
    lo = keep_lo;
    hi = keep_hi;
  }
  // Later halving steps send and fold only inside what this one kept, but the doubling writes
  // where the given parts went: every send must be done by then.
  co_await comm::all_of(std::move(sends));
  sends.clear();
  // Doubling: the finished blocks spread back, twice as many each step.
  for (int mask = 1; mask < f.p; mask *= 2) {
    ++step;
    // This rank holds blocks [mine, mine + mask), its partner the neighbouring run.
    const int partner = f.me ^ mask;
    const int mine = f.me & ~(mask - 1), theirs = partner & ~(mask - 1);
    const size_t held = at[mine + mask] - at[mine], arriving = at[theirs + mask] - at[theirs];
    std::vector<ExpectedReceive> run;
    run.push_back(post_receive(g, f.rank_of(partner), step, recv + at[theirs] * es, arriving * es));
    sends.push_back(g.isend(f.rank_of(partner), step, recv + at[mine] * es, held * es));
    co_await received(kName, std::move(run));
  }
  if (f.folds_from >= 0) sends.push_back(g.isend(f.folds_from, kHandBackStep, recv, bytes));
  co_await comm::all_of(std::move(sends));
}

}  // namespace seam::collectives
