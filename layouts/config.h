// Seam's configuration: every SEAM_* environment variable is read here, once, and nowhere else.
// seam_info prints it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace seam {

/// Process-wide settings from the environment (defaults in brackets).
struct Config {
  std::string log_level = "warn";  ///< SEAM_LOG_LEVEL: trace|debug|info|warn|error|off [warn]
  std::string transport;           ///< SEAM_TRANSPORT: "", "shm" or "ucx" ("" = automatic)
  int64_t timeout_ms = 60000;      ///< SEAM_TIMEOUT_MS: deadline of every collective and wait [60000]
  int64_t spin_us = 50;            ///< SEAM_SPIN_US: initial busy-poll before blocking on an event (adapts, see comm/spin_budget.h) [50]
  std::string algorithm;           ///< SEAM_ALGO: force one algorithm by name for every collective
  size_t small_msg_bytes = 0;      ///< SEAM_SMALL_MSG_BYTES: latency/bandwidth threshold (0 = built-in)
  size_t chunk_bytes = 0;          ///< SEAM_CHUNK_BYTES: pipeline chunk (0 = built-in)
  // TCP-store bootstrap, for engines that start their own ranks.
  std::string store_addr;  ///< SEAM_STORE_ADDR: host:port served by rank 0
  int rank = -1;           ///< SEAM_RANK
  int world_size = -1;     ///< SEAM_WORLD_SIZE
  std::string job_token;   ///< SEAM_JOB_TOKEN: shared secret every peer must present
  std::string hostname;    ///< SEAM_HOSTNAME: host identity for "same host" decisions [gethostname()]
  size_t shm_ring_bytes = size_t(1) << 20;  ///< SEAM_SHM_RING_BYTES: shm ring per ordered pair [1 MiB]
  /// SEAM_SHM_CMA_BYTES: p2p messages from this size are read straight from the sender (CMA);
  /// 0 = never; -1 = automatic [from 256 KiB where the kernel's copy proves fast at start-up]
  int64_t shm_cma_bytes = -1;
  /// SEAM_SHM_SINGLE_COPY_BYTES: shared-memory collectives of this size and more read the peers'
  /// user buffers directly (process_vm_readv) instead of through the shared slots; 0 = never;
  /// -1 = automatic [from 1 MiB where the kernel's copy proves fast enough at start-up]
  int64_t shm_single_copy_bytes = -1;
  /// SEAM_SHM_SCHEDULE: one shared-memory schedule for every call on plain buffers, for diagnosis
  /// and tests: "slots" (reduce-scatters: each rank folds its own block), "slots-whole"
  /// (all-reduces; the others take the slots), "slots-balanced" (reduce-scatters: each rank folds
  /// an even share of all blocks; the others take the slots), "single-copy" (where the ranks
  /// may read each other's memory, else the slots) or "slots-eager" (broadcasts of three ranks
  /// or more up to 16 KiB through the root's slot without a wait for every rank; the others
  /// take the slots); any value keeps those broadcasts off messages; "" = tuned [""]. It takes
  /// precedence over SEAM_SHM_SINGLE_COPY_BYTES.
  std::string shm_schedule;
  /// SEAM_HELPER_THREADS: threads per process that take parts of the copies and folds of large
  /// shared-memory calls; -1 = automatic [one less than the cores per local rank, at most 3;
  /// none where ranks share cores]
  int helper_threads = -1;
  /// SEAM_REDUCE_ISA: the most capable instruction set the reduction kernels may use: generic,
  /// avx2, avx512 or avx512bf16 (a cap: a CPU without it uses the best it has), to compare sets
  /// or keep off AVX-512; "" = the best this CPU has [""]
  std::string reduce_isa;
  /// SEAM_CUDA_ALGO: one device all-reduce algorithm for every call, "one_shot" or "two_shot";
  /// "" = the selection table [""]
  std::string cuda_algorithm;
  /// SEAM_CUDA_WORKSPACE_MB: each rank's peer-mapped device workspace; larger calls run in steps
  /// of it [32]
  int64_t cuda_workspace_mb = 32;
  /// SEAM_CUDA_PEER: "auto" (peer memory where every GPU reaches every other, else staging through
  /// host memory) or "off" (always stage) [auto]
  std::string cuda_peer = "auto";
  /// SEAM_CUDA_STAGED_CHUNK_KB: the largest chunk the staged path copies, reduces over the host
  /// transports and copies back as one step (smaller chunks overlap more, cost more per call);
  /// the same on every rank [4096]
  int64_t cuda_staged_chunk_kb = 4096;
  /// SEAM_CUDA_NORM: how the device add + RMSNorm kernels hold a row: "shared" (in shared memory)
  /// or "registers" (in registers where it fits, else in shared memory) [registers]
  std::string cuda_norm = "registers";
  /// SEAM_CUDA_NORM_PDL: 1 launches the device norm kernels as programmatic dependents of the
  /// kernel before them (their launch overlaps its tail; they wait for its memory); 0 plainly [1]
  int cuda_norm_pdl = 1;
  /// SEAM_CUDA_NORM_THREADS: threads a row for the register rows, 32 to 1024; 0 = by the call's
  /// rows (benchmarks sweep it) [0]
  int cuda_norm_threads = 0;
  // Set by the launcher, not by the user (read here so this stays the one place env is read).
  std::string pmix_namespace;  ///< PMIX_NAMESPACE: non-empty when started by a PMIx server (mpirun)

  /// Reads the environment (throws ValueError on a malformed value).
  static Config from_env();
  /// The process-wide instance (read on first use).
  static const Config& get();
  /// "NAME=value" lines for seam_info.
  std::vector<std::string> describe() const;
};

}  // namespace seam
