#include <cstring>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"

namespace seam::collectives {
namespace {

constexpr std::string_view kName = "scatterv";

/// The root sends each rank its block.
comm::Task direct_scatterv(Group& g, const char* send, char* recv, std::vector<size_t> counts,
                           size_t es, int root) {
  const int r = g.rank();
  if (r != root) {
    co_await received(kName, post_receive(g, root, 0, recv, counts[r] * es));  // see Chunks
    co_return;
  }
  const auto off = block_offsets(counts);
  std::vector<transport::RequestPtr> sends;
  for (int p = 0; p < g.size(); ++p)
    if (p != root) sends.push_back(g.isend(p, 0, send + off[p] * es, counts[p] * es));
  if (counts[r] && recv != send + off[r] * es) std::memcpy(recv, send + off[r] * es, counts[r] * es);
  co_await comm::all_of(std::move(sends));
}

}  // namespace

comm::Task scatterv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                    DType dtype, int root) {
  check_counts(kName, g.size(), counts);
  check_rank(kName, "root", g.size(), root);
  std::vector<size_t> blocks(counts.begin(), counts.end());
  size_t total = block_offsets(blocks).back();
  select_algorithm(Collective::scatterv, g, total * dtype_size(dtype), total, dtype);
  return direct_scatterv(g, static_cast<const char*>(send), static_cast<char*>(recv),
                         std::move(blocks), dtype_size(dtype), root);
}

}  // namespace seam::collectives
