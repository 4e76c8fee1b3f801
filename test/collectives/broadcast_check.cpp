// Integration check under mpirun: back-to-back broadcasts with the root moving every call, as
// the eager schedule runs them (the root returns without waiting for its peers; the next call
// through the region waits for them), between all-reduces and all-gathers through the slots,
// with the ranks arriving at different times. Every result is checked. With --mismatch, rank 1
// passes another count than its peers once (then the root one that goes eager where the
// others' take the gather): the ranks that disagree with the root (and a root that waits for
// all) fail in the broadcast, every rank in its next call where some rank went eager, and the
// communicator works after that. At two ranks, small broadcasts go as messages and the rank
// that disagrees fails; ranks that disagree on the dtype of a gather both fail in it. With
// --straddle ROOT PEER (counts of floats), the root's and its peers' counts lie on both sides of
// the size that parts messages from the shared-memory gather: every rank fails at once and the
// communicator aborts (the ranks wait for one another otherwise).
#include <cstdint>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"

namespace {

using seam::DType;
using seam::ReduceOp;

float value(int call, int root, size_t i) { return static_cast<float>((call * 31 + root * 7 + i) % 1001); }

/// Broadcasts, all-reduces and all-gathers in a row; returns how many results were wrong.
long run(seam::comm::Communicator& comm) {
  const int n = comm.size(), me = comm.rank();
  long wrong = 0;
  const size_t counts[] = {1, 100, 1000, 4096};  // 4 B to 16 KiB
  std::vector<float> buffer(4096), reduced(256), gathered(1024 * static_cast<size_t>(n));
  for (int call = 0; call < 3000; ++call) {
    const int root = call % n;
    const size_t count = counts[call % 4];
    if ((call + me) % 13 == 0) usleep(static_cast<useconds_t>(20 * (1 + me)));
    for (size_t i = 0; i < count; ++i) buffer[i] = me == root ? value(call, root, i) : -1.0f;
    comm.broadcast(buffer.data(), count, DType::f32, root).wait();
    for (size_t i = 0; i < count; ++i) wrong += buffer[i] != value(call, root, i);
    if (call % 7 == 0) {
      std::vector<float> mine(256, static_cast<float>(me + call));
      comm.all_reduce(mine.data(), reduced.data(), 256, DType::f32, ReduceOp::sum).wait();
      wrong += reduced[255] != static_cast<float>(n * call + n * (n - 1) / 2);
    }
    if (call % 11 == 0) {
      std::vector<float> mine(1024, static_cast<float>(me));
      comm.all_gather(mine.data(), gathered.data(), 1024, DType::f32).wait();
      for (int p = 0; p < n; ++p) wrong += gathered[1024 * static_cast<size_t>(p) + 3] != static_cast<float>(p);
    }
  }
  return wrong;
}

/// A broadcast from rank 0 where some ranks pass other counts than the root (`count_of` each
/// rank's). The ranks that disagree with the root must fail with a MismatchError in the
/// broadcast, and the root too where its schedule waits for every rank (`root_waits`); where some
/// rank went eager (`next_fails`), every rank in the next call (an all-reduce),
/// whose first wait compares every rank's call of the broadcast's round. The calls after must
/// work on every rank, a broadcast's data included, within a second in all.
template <class CountOf>
bool mismatch_fails_everywhere(seam::comm::Communicator& comm, const char* what, bool root_waits,
                               bool next_fails, CountOf count_of) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> buffer(20000, 1.0f);
  auto fails = [&](auto&& call) {
    try {
      call();
    } catch (const seam::MismatchError& e) {
      std::printf("broadcast_check: %s: rank %d: %s\n", what, comm.rank(), e.what());
      return true;
    }
    return false;
  };
  const bool in_broadcast = fails([&] { comm.broadcast(buffer.data(), count_of(comm.rank()), DType::f32, 0).wait(); });
  const bool in_next = fails([&] {
    comm.all_reduce(buffer.data(), buffer.data(), 200, DType::f32, ReduceOp::sum).wait();
  });
  std::vector<float> ones(200, 1.0f), sum(200, 0.0f);
  comm.all_reduce(ones.data(), sum.data(), 200, DType::f32, ReduceOp::sum).wait();
  // The root's count of the failed call, with data no earlier call sent.
  const size_t count = count_of(0);
  for (size_t i = 0; i < count; ++i) buffer[i] = comm.rank() == 0 ? static_cast<float>(i % 977) : -1.0f;
  comm.broadcast(buffer.data(), count, DType::f32, 0).wait();
  bool worked = sum[199] == static_cast<float>(comm.size());
  for (size_t i = 0; i < count; ++i) worked &= buffer[i] == static_cast<float>(i % 977);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool expected_in_broadcast = root_waits || count_of(comm.rank()) != count_of(0);
  const bool ok = in_broadcast == expected_in_broadcast && in_next == next_fails && worked && seconds < 1.0;
  std::printf("broadcast_check: %s: rank %d: mismatch %s in the broadcast, %s in the next call; "
              "the call after %s; %.3f s: %s\n", what, comm.rank(), in_broadcast ? "found" : "not found",
              in_next ? "found" : "not found", worked ? "worked" : "failed", seconds, ok ? "OK" : "FAILED");
  return ok;
}

/// Two ranks, a broadcast of 68 000 B through the gather where rank 1 passes bf16 and rank 0
/// float (the same bytes): both must fail in it with a MismatchError within a second (the
/// marker carries no call signature, so they meet at the region's comparison), and the next
/// broadcast must work.
bool dtype_mismatch_fails_at_once(seam::comm::Communicator& comm) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> buffer(17000, 1.0f);
  bool failed = false;
  try {
    if (comm.rank() == 1)
      comm.broadcast(buffer.data(), 34000, DType::bf16, 0).wait();
    else
      comm.broadcast(buffer.data(), 17000, DType::f32, 0).wait();
  } catch (const seam::MismatchError&) {
    failed = true;
  }
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = comm.rank() == 0 ? static_cast<float>(i % 977) : -1.0f;
  comm.broadcast(buffer.data(), buffer.size(), DType::f32, 0).wait();
  bool worked = true;
  for (size_t i = 0; i < buffer.size(); ++i) worked &= buffer[i] == static_cast<float>(i % 977);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool ok = failed && worked && seconds < 1.0;
  std::printf("broadcast_check: dtype: rank %d: mismatch %s; the call after %s; %.3f s: %s\n",
              comm.rank(), failed ? "found" : "not found", worked ? "worked" : "failed", seconds,
              ok ? "OK" : "FAILED");
  return ok;
}

/// A broadcast from rank 0 whose count (`root_count` floats) and its peers' (`peer_count`) put
/// them on both sides of the size that parts messages from the shared-memory gather (64 KiB at
/// two ranks). Every rank must fail within a second: those on the root's other side in the
/// broadcast, saying why; the root there or, where it sent its message and returned, in its
/// next call; and the communicator must be aborted (ranks left waiting for one another).
bool straddle_aborts(seam::comm::Communicator& comm, size_t root_count, size_t peer_count) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> buffer(std::max(root_count, peer_count) + 1, 1.0f);
  std::string in_broadcast = "no error", in_next = "no error";
  try {
    comm.broadcast(buffer.data(), comm.rank() == 0 ? root_count : peer_count, DType::f32, 0).wait();
  } catch (const std::exception& e) {
    in_broadcast = e.what();
  }
  try {
    comm.all_reduce(buffer.data(), buffer.data(), 1, DType::f32, ReduceOp::sum).wait();
  } catch (const std::exception& e) {
    in_next = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool why = in_broadcast.find("the ranks disagree on the count") != std::string::npos;
  const bool failed = in_broadcast != "no error" || in_next != "no error";
  const bool aborted = in_next.find("unusable") != std::string::npos ||
                       in_next.find("aborted") != std::string::npos;
  const bool ok = (comm.rank() == 0 || why) && failed && aborted && seconds < 1.0;
  std::printf("broadcast_check: straddle %zu/%zu: rank %d: broadcast: %s; next call: %s; %.3f s: %s\n",
              root_count, peer_count, comm.rank(), in_broadcast.c_str(), in_next.c_str(), seconds,
              ok ? "OK" : "FAILED");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    auto world = seam::comm::Communicator::create_world();
    if (argc > 3 && std::strcmp(argv[1], "--straddle") == 0)
      return straddle_aborts(*world, std::stoul(argv[2]), std::stoul(argv[3])) ? 0 : 1;
    if (argc > 1 && std::strcmp(argv[1], "--mismatch") == 0) {
      if (world->size() == 2) {
        // As messages, rank 1 disagreeing with the root: it fails, and the communicator stays
        // usable; then a dtype disagreement through the gather.
        const bool ok = mismatch_fails_everywhere(*world, "messages", false, false,
                                                  [](int r) { return r == 1 ? 100 : 200; });
        return ok && dtype_mismatch_fails_at_once(*world) ? 0 : 1;
      }
      // Every rank eager, rank 1 disagreeing with the root; the root eager (16 000 B) and the
      // others through the gather (20 000 B); every rank through the gather.
      bool ok = mismatch_fails_everywhere(*world, "one rank", false, true,
                                          [](int r) { return r == 1 ? 100 : 200; });
      ok &= mismatch_fails_everywhere(*world, "eager and gather", false, true,
                                      [](int r) { return r == 0 ? 4000 : 5000; });
      ok &= mismatch_fails_everywhere(*world, "gather", true, false,
                                      [](int r) { return r == 1 ? 6000 : 5000; });
      return ok ? 0 : 1;
    }
    const long wrong = run(*world);
    int32_t total = static_cast<int32_t>(wrong > (1 << 20) ? (1 << 20) : wrong);
    world->all_reduce(&total, &total, 1, DType::i32, ReduceOp::sum).wait();
    if (world->rank() == 0)
      std::printf("broadcast_check: %d ranks: %s (%d wrong results)\n", world->size(),
                  total == 0 ? "OK" : "FAILED", total);
    return total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "broadcast_check: %s\n", e.what());
    return 1;
  }
}
