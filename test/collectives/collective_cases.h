// The collectives' test matrix, shared by the loopback unit test and the mpirun integration
// check: each case is one call; RankCase holds one rank's buffers (NCCL's in-place conventions)
// and the expected result, computed independently from every rank's input formula.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "seam/dtype.h"
#include "transports/shm/shared_host_memory.h"

namespace seam::test {

enum class Kind { all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast, scatterv };

struct Case {
  Kind kind;
  int ranks;
  size_t count;  ///< all_reduce/broadcast: the buffer; others: the base of each rank's block
  DType dtype;
  ReduceOp op = ReduceOp::sum;
  bool in_place = false;
  int root = 0;             ///< broadcast, scatterv
  bool fractional = false;  ///< non-integer inputs, compared with an FP32-accumulation tolerance
  bool skewed = false;      ///< v-variants and scatterv: rank r's block (r + 1) * count, none empty
};

std::string describe(const Case& c);

/// Per-rank blocks of the v-variants and scatterv: (count + r) elements, except every third
/// rank (r % 3 == 1), which gets none; skewed, (r + 1) * count. Equal variants: count each.
std::vector<size_t> case_blocks(const Case& c);

/// Which of a case's buffers lie in SharedHostMemory (the zero-copy schedules): none, the
/// output alone (the input stays plain, out of place), or both.
enum class SharedBuffers { none, output, both };

/// One rank's side of a case.
class RankCase {
 public:
  RankCase(const Case& c, int rank, SharedBuffers shared = SharedBuffers::none);
  /// Issues the call on `api`: a Communicator, or anything with its collective methods.
  template <class Api>
  auto launch(Api& api);
  /// -1 when this rank's result matches the reference, else the first wrong element.
  long first_wrong() const;

 private:
  void move_to_shared_memory(SharedBuffers shared);
  Case c_;
  std::vector<size_t> blocks_, offsets_;
  std::vector<char> input_, output_;
  std::unique_ptr<SharedHostMemory> shared_;  // copies of input_ and output_, when asked for
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  std::vector<double> expected_;
};

template <class Api>
auto RankCase::launch(Api& api) {
  const size_t n = c_.count;
  std::span<const size_t> blocks(blocks_);
  switch (c_.kind) {
    case Kind::all_reduce: return api.all_reduce(send_, recv_, n, c_.dtype, c_.op);
    case Kind::reduce_scatter: return api.reduce_scatter(send_, recv_, n, c_.dtype, c_.op);
    case Kind::reduce_scatterv: return api.reduce_scatterv(send_, recv_, blocks, c_.dtype, c_.op);
    case Kind::all_gather: return api.all_gather(send_, recv_, n, c_.dtype);
    case Kind::all_gatherv: return api.all_gatherv(send_, recv_, blocks, c_.dtype);
    case Kind::broadcast: return api.broadcast(recv_, n, c_.dtype, c_.root);
    case Kind::scatterv: break;
  }
  return api.scatterv(send_, recv_, blocks, c_.dtype, c_.root);
}

/// Every case of `kind` at `ranks` ranks: dtypes x ops (reductions only) x in/out-of-place x
/// counts 0, 1, 7, 1000, 9000 x roots; with `large`, also multi-MiB f32 and bf16 sums; and for
/// all_reduce, fractional half-type inputs.
void for_each_case(Kind kind, int ranks, bool large, const std::function<void(const Case&)>& visit);

}  // namespace seam::test
