// The MPI library as the baseline every row is compared with: initialised only when mpirun
// launched the process (so the same binaries also run as plain processes under the TCP store).
#pragma once

#include "tools/perf/perf_collective.h"

namespace seam::perf {

/// True when mpirun started this process (Open MPI's or PMIx's environment is set).
bool launched_by_mpirun();

/// MPI_Init / MPI_Finalize around the run, when launched by mpirun.
class MpiBaseline {
 public:
  MpiBaseline(int* argc, char*** argv);
  ~MpiBaseline();
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;
  bool active() const { return active_; }
  /// MPI's type and op for a row. MPI has no bfloat16 or half reductions: those get
  /// user-defined ops on MPI_UINT16_T (FP32 accumulation), as an engine using MPI would write.
  MpiArgs args(DType dtype, ReduceOp op);

 private:
  bool active_ = false;
  MPI_Op half_ops_[2][3] = {};  // [bf16, f16][sum, max, min], created on first use
};

}  // namespace seam::perf
