// Integration check under mpirun: disagreements whose messages no receive takes (stranded) end
// in an error on every rank, never in a silent success whose message a later call consumes.
//   --broadcast-root:   rank 0 broadcasts from root 0, the others from root 1 (message path: two
//                       ranks, ranks that outnumber the cores, UCX; the slot on shared memory).
//   --scatterv-root:    the same for scatterv.
//   --all-gatherv-blocks: rank 0 splits the total into other blocks than the others do.
// After the disagreeing call each rank makes up to three valid all-reduces; the disagreement
// must have ended in a MismatchError or CommError on every rank by then, within seconds (not
// at the deadline). Then 5,000 valid calls of the same collective, each checked, past a 12-bit
// sequence wrap (4,096 calls), where a stranded message could be taken by a later call: on the same
// world where no rank's error aborted it (or none came), else on a fresh world.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"

namespace {

using seam::DType;
using seam::ReduceOp;
using seam::comm::Communicator;

constexpr int kValidCalls = 5000;

float value(int root, int call, size_t i) {
  return static_cast<float>((root * 131 + call * 17 + static_cast<int>(i)) % 1009);
}

/// Blocks of `total` elements over n ranks, one of them `extra` larger and the next one
/// `extra` smaller (same total).
std::vector<size_t> blocks(int n, size_t base, int larger, size_t extra) {
  std::vector<size_t> b(static_cast<size_t>(n), base);
  b[static_cast<size_t>(larger)] += extra;
  b[static_cast<size_t>((larger + 1) % n)] -= extra;
  return b;
}

/// One call of the case. `agree`: every rank passes the same arguments; else rank 0 disagrees.
/// Returns the elements that came out wrong (only checked where the ranks agree).
long call_once(Communicator& comm, const std::string& mode, size_t count, int call, bool agree) {
  const int n = comm.size(), me = comm.rank();
  long wrong = 0;
  if (mode == "--broadcast-root") {
    const int root = agree ? call % n : (me == 0 ? 0 : 1);
    std::vector<float> buffer(count);
    for (size_t i = 0; i < count; ++i) buffer[i] = me == root ? value(root, call, i) : -1.0f;
    comm.broadcast(buffer.data(), count, DType::f32, root).wait();
    if (agree)
      for (size_t i = 0; i < count; ++i) wrong += buffer[i] != value(root, call, i);
  } else if (mode == "--scatterv-root") {
    const int root = agree ? call % n : (me == 0 ? 0 : 1);
    std::vector<size_t> counts(static_cast<size_t>(n), count);
    std::vector<float> send(count * static_cast<size_t>(n)), recv(count, -1.0f);
    for (size_t i = 0; i < send.size(); ++i) send[i] = value(me, call, i);
    comm.scatterv(send.data(), recv.data(), counts, DType::f32, root).wait();
    if (agree)
      for (size_t i = 0; i < count; ++i)
        wrong += recv[i] != value(root, call, static_cast<size_t>(me) * count + i);
  } else {  // --all-gatherv-blocks
    const std::vector<size_t> counts = blocks(n, count, agree || me != 0 ? 0 : 1, agree ? 0 : 1);
    size_t total = 0;
    for (size_t c : counts) total += c;
    std::vector<float> send(counts[static_cast<size_t>(me)]), recv(total, -1.0f);
    for (size_t i = 0; i < send.size(); ++i) send[i] = value(me, call, i);
    comm.all_gatherv(send.data(), recv.data(), counts, DType::f32).wait();
    if (agree) {
      size_t at = 0;
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < counts[static_cast<size_t>(r)]; ++i) wrong += recv[at++] != value(r, call, i);
    }
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const size_t count = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 64;
  if (mode != "--broadcast-root" && mode != "--scatterv-root" && mode != "--all-gatherv-blocks") {
    std::fprintf(stderr, "usage: stranded_check --broadcast-root|--scatterv-root|--all-gatherv-blocks [count]\n");
    return 2;
  }
  int rank = -1;
  try {
    auto comm = Communicator::create_world();
    rank = comm->rank();
    const std::string transport = comm->transport_name();
    if (comm->size() < 2) return 0;
    call_once(*comm, mode, count, 0, true);  // every path set up before the disagreement

    // The disagreement, then up to three valid calls: one of them must fail.
    const auto start = std::chrono::steady_clock::now();
    std::string error;
    bool timed_out = false, aborts = false;
    for (int k = 0; k < 4 && error.empty(); ++k) {
      try {
        if (k == 0) {
          call_once(*comm, mode, count, 1, false);
        } else {
          int one = 1;
          comm->all_reduce(&one, &one, 1, DType::i32, ReduceOp::sum).wait();
        }
      } catch (const seam::TimeoutError& e) {
        error = std::string("TimeoutError: ") + e.what();
        timed_out = true;
      } catch (const seam::MismatchError& e) {
        error = std::string("MismatchError: ") + e.what();
        aborts = e.aborts();
      } catch (const seam::CommError& e) {
        error = std::string("CommError: ") + e.what();
        aborts = true;
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool detected = !error.empty() && !timed_out && ms < 5000;
    if (detected)
      std::printf("stranded_check %s: rank %d (%s) detected in %.1f ms: %s\n", mode.c_str(), rank,
                  transport.c_str(), ms, error.c_str());
    else
      std::fprintf(stderr, "stranded_check %s: rank %d (%s): the disagreement %s after %.1f ms%s%s\n",
                   mode.c_str(), rank, transport.c_str(), error.empty() ? "went unnoticed" : "ended late",
                   ms, error.empty() ? "" : ": ", error.c_str());

    // 5,000 valid calls: on this world where every rank's error left it usable (or none had
    // one), else on a fresh world. (The aborted world stays alive beside it: a world's end
    // finalises PMIx, which a new one could not start again.)
    auto fresh = Communicator::create_world();
    int usable = static_cast<int>(!aborts);
    fresh->all_reduce(&usable, &usable, 1, DType::i32, ReduceOp::min).wait();
    if (!usable) std::swap(comm, fresh);
    long wrong = 0;
    int wrong_calls = 0, first_wrong = -1;
    for (int call = 0; call < kValidCalls; ++call) {
      const long w = call_once(*comm, mode, count, 2 + call, true);
      if (w && first_wrong < 0) first_wrong = call;
      wrong += w;
      wrong_calls += w != 0;
    }
    int all_wrong = static_cast<int>(wrong > 0), all_undetected = static_cast<int>(!detected);
    comm->all_reduce(&all_wrong, &all_wrong, 1, DType::i32, ReduceOp::max).wait();
    comm->all_reduce(&all_undetected, &all_undetected, 1, DType::i32, ReduceOp::max).wait();
    if (wrong)
      std::fprintf(stderr, "stranded_check %s: rank %d: %ld wrong elements in %d of %d valid calls (first: call %d)\n",
                   mode.c_str(), rank, wrong, wrong_calls, kValidCalls, first_wrong);
    if (rank == 0)
      std::printf("stranded_check %s: %d ranks, %s, 5,000 calls on %s world: %s\n", mode.c_str(),
                  comm->size(), transport.c_str(), usable ? "the same" : "a fresh",
                  all_wrong || all_undetected ? "FAILED" : "OK");
    return all_wrong || all_undetected ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stranded_check %s: rank %d: %s\n", mode.c_str(), rank, e.what());
    return 1;
  }
}
