// Integration check under mpirun: ranks that disagree on which call comes next, or on its count
// or root, end promptly in MismatchError or CommError on every rank (not at SEAM_TIMEOUT_MS),
// whatever the path: in the call itself, or (where a rank's part of it completed, e.g. a small
// broadcast's root) in the next call, which finds the stranded messages.
//   disagreement_check --case {ar-vs-bcast|split-vs-ar|world-vs-sub|count|root|roots} [--bytes N] [--within-ms M]
// Rank 0 makes the first call, the others the second (count, root: rank 0's argument differs).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"

int main(int argc, char** argv) {
  std::string which;
  size_t bytes = 64 << 10;
  long within_ms = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--case")) which = argv[i + 1];
    else if (!std::strcmp(argv[i], "--bytes")) bytes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--within-ms")) within_ms = std::atol(argv[i + 1]);
  }
  auto world = seam::comm::Communicator::create_world();
  const int rank = world->rank();
  const bool first = rank == 0;
  auto sub = which == "world-vs-sub" ? world->split(0, rank) : nullptr;
  world->barrier().wait();
  const size_t count = bytes / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  std::string outcome;
  try {
    if (which == "ar-vs-bcast") {
      if (first) world->all_reduce(a.data(), b.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
      else world->broadcast(a.data(), count, seam::DType::f32, 0).wait();
    } else if (which == "split-vs-ar") {
      if (first) world->split(0, rank);
      else world->all_reduce(a.data(), b.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
    } else if (which == "world-vs-sub") {
      auto& c = first ? *world : *sub;
      c.all_reduce(a.data(), b.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
    } else if (which == "count") {
      world->all_reduce(a.data(), b.data(), first ? count / 2 : count, seam::DType::f32, seam::ReduceOp::sum).wait();
    } else if (which == "root") {
      world->broadcast(a.data(), count, seam::DType::f32, first ? 0 : 1).wait();
    } else if (which == "roots") {  // every rank names itself
      world->broadcast(a.data(), count, seam::DType::f32, rank).wait();
    } else {
      std::fprintf(stderr, "disagreement_check: unknown --case '%s'\n", which.c_str());
      return 2;
    }
    outcome = "no error, next call: no error";
    world->barrier().wait();
  } catch (const seam::MismatchError& e) {
    outcome = std::string("MismatchError: ") + e.what();
  } catch (const seam::TimeoutError& e) {
    outcome = std::string("TimeoutError: ") + e.what();
  } catch (const seam::CommError& e) {
    outcome = std::string("CommError: ") + e.what();
  } catch (const std::exception& e) {
    outcome = std::string("other: ") + e.what();
  }
  const long ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::steady_clock::now() - t0).count());
  const bool ok = (outcome.rfind("MismatchError", 0) == 0 || outcome.rfind("CommError", 0) == 0) && ms <= within_ms;
  std::printf("rank %d: %s after %ld ms: %s\n", rank, which.c_str(), ms, outcome.substr(0, 300).c_str());
  std::fflush(stdout);
  return ok ? 0 : 1;
}
