// The device path's one selection table: which all-reduce algorithm for a call's size and ranks,
// and how many thread blocks a kernel takes. SEAM_CUDA_ALGO overrides the algorithm.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/cuda/collectives.h"

namespace seam::device {

/// One-shot reads every peer's whole input (one meeting less); two-shot moves 2(n-1)/n of it per
/// rank. `override_name` is SEAM_CUDA_ALGO ("" = the table).
kernels::cuda::DeviceAlgo select_all_reduce(size_t bytes, int ranks, const std::string& override_name);

/// Thread blocks for a step moving `bytes` per rank: enough to keep the copy engines of the SMs
/// busy, never more than `max_blocks` (every rank's blocks must be resident together).
int blocks_for(size_t bytes, int max_blocks);

/// "one_shot" / "two_shot".
const char* algo_name(kernels::cuda::DeviceAlgo a);

}  // namespace seam::device
