// What the C API's opaque handles hold, and the argument checks every entry point shares.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "seam/dtype.h"
#include "seam/errors.h"
#include "seam/communicator.h"
#include "seam/work.h"
#include "runtime/capi/status.h"
#include "seam/seam.h"

namespace seam::device {
class DeviceCommunicator;  // only built with CUDA; held here without its header
}

struct seam_comm {
  std::shared_ptr<seam::comm::Communicator> host;
  std::shared_ptr<seam::device::DeviceCommunicator> device;  ///< set by seam_comm_device_init
};

struct seam_work {
  seam::comm::Work work;
};

namespace seam::capi {

/// comm, or a ValueError naming the function when it is NULL.
inline seam_comm& need(seam_comm_t comm, const char* function) {
  if (!comm) throw ValueError(std::string(function) + ": comm is NULL");
  return *comm;
}

/// The C enum as Seam's, or the error the C++ API gives for a value outside it.
inline DType to_dtype(seam_dtype_t dtype, const char* function) {
  if (static_cast<unsigned>(dtype) > static_cast<unsigned>(DType::fp8_e4m3))
    throw TypeError(std::string(function) + ": dtype " + std::to_string(static_cast<long>(dtype)) +
                    " is not a seam_dtype_t");
  return static_cast<DType>(dtype);
}
inline ReduceOp to_op(seam_reduce_op_t op, const char* function) {
  if (static_cast<unsigned>(op) > static_cast<unsigned>(ReduceOp::min))
    throw ValueError(std::string(function) + ": op " + std::to_string(static_cast<long>(op)) +
                     " is not a seam_reduce_op_t");
  return static_cast<ReduceOp>(op);
}

/// counts[0..comm size): the C API passes the per-rank counts without their length.
inline std::span<const size_t> rank_counts(const seam_comm& comm, const size_t* counts, const char* function) {
  if (!counts) throw ValueError(std::string(function) + ": counts is NULL");
  return {counts, static_cast<size_t>(comm.host->size())};
}

/// Hands a started operation to the caller: a handle in *out, or, with out NULL, waits for it.
void hand_over(comm::Work work, seam_work_t* out);

/// A collective entry point: *out is NULL unless start() (which returns the Work) succeeded.
template <class Start>
seam_status_t start_collective(const char* function, seam_work_t* out, Start&& start) noexcept {
  if (out) *out = nullptr;
  return guarded(function, [&] { hand_over(start(), out); });
}

}  // namespace seam::capi
