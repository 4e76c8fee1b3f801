// A collectives::Group seen through the Communicator's method names, so RankCase::launch (and
// any test written against the Communicator) drives the algorithms directly on loopback ranks.
#pragma once

#include <span>

#include "runtime/collectives/collectives.h"

namespace seam::test {

struct GroupApi {
  collectives::Group& g;
  comm::Task all_reduce(const void* s, void* r, size_t n, DType d, ReduceOp op) {
    return collectives::all_reduce(g, s, r, n, d, op);
  }
  comm::Task reduce_scatter(const void* s, void* r, size_t n, DType d, ReduceOp op) {
    return collectives::reduce_scatter(g, s, r, n, d, op);
  }
  comm::Task reduce_scatterv(const void* s, void* r, std::span<const size_t> c, DType d, ReduceOp op) {
    return collectives::reduce_scatterv(g, s, r, c, d, op);
  }
  comm::Task all_gather(const void* s, void* r, size_t n, DType d) {
    return collectives::all_gather(g, s, r, n, d);
  }
  comm::Task all_gatherv(const void* s, void* r, std::span<const size_t> c, DType d) {
    return collectives::all_gatherv(g, s, r, c, d);
  }
  comm::Task broadcast(void* b, size_t n, DType d, int root) {
    return collectives::broadcast(g, b, n, d, root);
  }
  comm::Task scatterv(const void* s, void* r, std::span<const size_t> c, DType d, int root) {
    return collectives::scatterv(g, s, r, c, d, root);
  }
};

}  // namespace seam::test
