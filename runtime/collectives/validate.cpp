#include "runtime/collectives/validate.h"

#include <cstdint>
#include <string>

#include "seam/errors.h"

namespace seam::collectives {

void check_counts(std::string_view collective, int ranks, std::span<const size_t> counts) {
  if (counts.size() != static_cast<size_t>(ranks))
    throw ValueError(std::string(collective) + ": " + std::to_string(counts.size()) +
                     " counts for a group of " + std::to_string(ranks) + " ranks");
}

void check_reducible(std::string_view collective, DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::i32:
    case DType::bf16:
    case DType::f16: return;
    default:
      throw ValueError(std::string(collective) + ": cannot reduce dtype " +
                       std::string(dtype_name(dtype)));
  }
}

void check_rank(std::string_view collective, std::string_view role, int ranks, int rank) {
  if (rank < 0 || rank >= ranks)
    throw ValueError(std::string(collective) + ": " + std::string(role) + " " +
                     std::to_string(rank) + " is not a rank of a group of " + std::to_string(ranks));
}

void check_dtype(std::string_view collective, DType dtype) {
  if (static_cast<unsigned>(dtype) > static_cast<unsigned>(DType::fp8_e4m3))
    throw TypeError(std::string(collective) + ": dtype " + std::to_string(static_cast<unsigned>(dtype)) +
                    " is not a seam::DType");
}

void check_op(std::string_view collective, ReduceOp op) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::min))
    throw ValueError(std::string(collective) + ": op " + std::to_string(static_cast<unsigned>(op)) +
                     " is not a seam::ReduceOp");
}

void check_reduction(std::string_view collective, DType dtype, ReduceOp op) {
  check_dtype(collective, dtype);
  check_op(collective, op);
  check_reducible(collective, dtype);
}

size_t checked_bytes(std::string_view collective, size_t count, DType dtype, size_t times) {
  const size_t es = dtype_size(dtype);
  if (times != 0 && count > SIZE_MAX / es / times)
    throw ValueError(std::string(collective) + ": " + std::to_string(count) + " elements of " +
                     std::string(dtype_name(dtype)) + " overflow a byte count");
  return count * es * times;
}

size_t checked_total_bytes(std::string_view collective, std::span<const size_t> counts, DType dtype) {
  size_t total = 0;
  for (size_t c : counts) {
    if (c > SIZE_MAX - total) throw ValueError(std::string(collective) + ": the counts' sum overflows");
    total += c;
  }
  return checked_bytes(collective, total, dtype);
}

void check_buffer(std::string_view collective, std::string_view what, const void* p, size_t bytes) {
  if (!p && bytes)
    throw ValueError(std::string(collective) + ": " + std::string(what) + " is null for " + std::to_string(bytes) +
                     " bytes");
}

void check_overlap(std::string_view collective, const void* send, size_t send_bytes, const void* recv,
                   size_t recv_bytes, std::ptrdiff_t send_minus_recv) {
  if (!send || !recv || !send_bytes || !recv_bytes) return;
  const auto s = reinterpret_cast<uintptr_t>(send), r = reinterpret_cast<uintptr_t>(recv);
  if (s >= r + recv_bytes || r >= s + send_bytes) return;
  if (static_cast<std::ptrdiff_t>(s - r) == send_minus_recv) return;
  throw ValueError(std::string(collective) +
                   ": the send and receive buffers overlap other than in the in-place form (see "
                   "seam/communicator.h)");
}

}  // namespace seam::collectives
