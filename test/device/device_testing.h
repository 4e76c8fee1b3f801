// Shared by the device integration checks: the GPU this rank uses, deterministic data any rank can
// regenerate for any other rank, and the rank-order FP32 reference of a reduction.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "seam/communicator.h"
#include "seam/device_communicator.h"
#include "seam/dtype.h"

namespace seam::test::device {

/// Exit status CTest reads as "skipped" (SKIP_RETURN_CODE).
inline constexpr int kSkipped = 77;

/// This rank's GPU (local rank modulo the GPUs), or -1 when there is none.
inline int pick_gpu(int world_rank) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return -1;
  }
  int local = world_rank;
  for (const char* name : {"SEAM_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"})
    if (const char* v = std::getenv(name)) {
      local = std::atoi(v);
      break;
    }
  const int gpu = local % count;
  if (cudaSetDevice(gpu) != cudaSuccess) return -1;
  return gpu;
}

/// A value in (-2, 2) with a full mantissa, from (rank, index, seed).
inline float gen(int rank, size_t i, uint32_t seed) {
  uint64_t x = (static_cast<uint64_t>(seed) << 40) ^ (static_cast<uint64_t>(rank) << 32) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<float>(static_cast<int64_t>(x >> 11) - (int64_t{1} << 52)) / static_cast<float>(int64_t{1} << 51);
}

inline float load(DType t, const void* p, size_t i) {
  switch (t) {
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

inline void store(DType t, void* p, size_t i, float v) {
  switch (t) {
    case DType::bf16: static_cast<uint16_t*>(p)[i] = float_to_bf16(v); break;
    case DType::f16: static_cast<uint16_t*>(p)[i] = float_to_f16(v); break;
    default: static_cast<float*>(p)[i] = v;
  }
}

/// The element rank r contributes at i, as stored in dtype t.
inline float element(DType t, int rank, size_t i, uint32_t seed) {
  uint32_t bits[1];
  store(t, bits, 0, gen(rank, i, seed));
  return load(t, bits, 0);
}

/// op over ranks 0..n-1 in order, in FP32, of element(t, r, i).
inline float reduce_ref(DType t, ReduceOp op, int n, size_t i, uint32_t seed) {
  float acc = element(t, 0, i, seed);
  for (int r = 1; r < n; ++r) {
    const float v = element(t, r, i, seed);
    acc = op == ReduceOp::sum ? acc + v : op == ReduceOp::max ? (acc > v ? acc : v) : (acc < v ? acc : v);
  }
  return acc;
}

/// Bytes of host memory for count elements.
inline std::vector<unsigned char> host_bytes(DType t, size_t count) {
  return std::vector<unsigned char>(count * dtype_size(t) + 16);
}

#define SEAM_CUDA_OK(call)                                                                          \
  do {                                                                                              \
    const cudaError_t seam_e_ = (call);                                                             \
    if (seam_e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(seam_e_)); \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

/// Picks this rank's GPU; whether every rank of `world` has one (rank 0 says so when not).
inline bool gpu_on_every_rank(comm::Communicator& world) {
  int no_gpu = pick_gpu(world.rank()) < 0 ? 1 : 0, any_without = 0;
  world.all_reduce(&no_gpu, &any_without, 1, DType::i32, ReduceOp::max).wait();
  if (any_without && world.rank() == 0) std::printf("no CUDA device on some rank: device checks skipped\n");
  return any_without == 0;
}

/// 1 (and a FAIL line) when `expect` is given and the communicator took another path, else 0.
inline int check_path(const seam::device::DeviceCommunicator& dev, const std::string& expect) {
  if (expect.empty() || dev.path() == expect) return 0;
  std::fprintf(stderr, "FAIL rank %d: path %s, expected %s\n", dev.rank(), std::string(dev.path()).c_str(),
               expect.c_str());
  return 1;
}

/// The options the device checks share.
struct CheckOptions {
  bool large = false;       ///< --large: sizes past the staged path's chunk
  int cycles = 0;           ///< --cycles N: communicators made and dropped N times instead
  std::string expect_path;  ///< --expect-path peer|staged: the path the communicator must take
};

/// A device check's main: parses the shared options, skips (kSkipped) unless every rank has a
/// GPU, runs `check(world, stream, options)` (it returns its failures), sums the failures over the
/// world and prints `what` with the verdict on rank 0. Returns 0 passed, 1 failed, 2 on an error.
template <class Check>
int run_check(int argc, char** argv, const char* what, Check&& check) {
  CheckOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--large") options.large = true;
    if (a == "--cycles" && i + 1 < argc) options.cycles = std::atoi(argv[++i]);
    if (a == "--expect-path" && i + 1 < argc) options.expect_path = argv[++i];
  }
  try {
    std::shared_ptr<comm::Communicator> world = comm::Communicator::create_world();
    if (!gpu_on_every_rank(*world)) return kSkipped;
    cudaStream_t stream;
    SEAM_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    int failures = check(world, stream, options), total = 0;
    world->all_reduce(&failures, &total, 1, DType::i32, ReduceOp::sum).wait();
    if (world->rank() == 0)
      std::printf("%s at %d ranks: %s (%d failures)\n", what, world->size(), total ? "FAILED" : "passed", total);
    SEAM_CUDA_OK(cudaStreamDestroy(stream));
    return total ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", what, e.what());
    return 2;
  }
}

}  // namespace seam::test::device
