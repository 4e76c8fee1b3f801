// What a device collective's kernel needs to meet its peers: every rank's flag area mapped into
// this rank, this rank's barrier epochs (device memory, so a replayed CUDA graph continues the
// count instead of reusing a host-side value), and the communicator's abort word in host-mapped
// memory shared by all its ranks, which every wait watches and sets when it gives up.
#pragma once

#include <cstdint>

namespace seam::kernels::cuda {

inline constexpr int kMaxRanks = 8;
/// Most thread blocks of one collective kernel (each meets the same block index of every peer).
inline constexpr int kMaxBlocks = 132;

/// One rank's flag area, at the start of its peer-mapped workspace. flags[b][p]: the latest
/// barrier epoch that block b of rank p announced to this rank; signature[p]: the call rank p
/// made, written before block 0's first announcement of every call.
/// p2p_ready[p]: chunks rank p put in its workspace for this rank; p2p_taken[p]: chunks of this
/// rank's that rank p copied out; p2p_signature[p]: the send rank p made (kernels/cuda/p2p.h).
struct PeerFlags {
  uint32_t flags[kMaxBlocks][kMaxRanks];
  uint64_t signature[kMaxRanks];
  uint32_t p2p_ready[kMaxRanks];
  uint32_t p2p_taken[kMaxRanks];
  uint64_t p2p_signature[kMaxRanks];
};

/// The shared abort page: the abort word, then one gave-up word per rank (a kernel of that rank
/// stopped waiting, so its outputs are incomplete).
struct AbortPage {
  uint32_t word;
  uint32_t gave_up[kMaxRanks];
};

/// The abort word: 0 while healthy. Otherwise kind | reporter << 8 | subject << 16, ranks
/// stored + 1 (0: none), and kAbortSet so that it is never 0.
enum AbortKind : uint32_t { kAbortTimeout = 1, kAbortPeerDied = 2, kAbortMismatch = 3, kAbortUser = 4 };
inline constexpr uint32_t kAbortSet = 1u << 31;
#ifdef __CUDACC__
#define SEAM_HOST_DEVICE __host__ __device__
#else
#define SEAM_HOST_DEVICE
#endif
SEAM_HOST_DEVICE constexpr uint32_t abort_code(AbortKind kind, int reporter, int subject) {
  return kAbortSet | kind | static_cast<uint32_t>(reporter + 1) << 8 | static_cast<uint32_t>(subject + 1) << 16;
}
SEAM_HOST_DEVICE constexpr AbortKind abort_kind(uint32_t code) { return static_cast<AbortKind>(code & 0xFF); }
SEAM_HOST_DEVICE constexpr int abort_reporter(uint32_t code) { return static_cast<int>(code >> 8 & 0xFF) - 1; }
SEAM_HOST_DEVICE constexpr int abort_subject(uint32_t code) { return static_cast<int>(code >> 16 & 0xFF) - 1; }

struct PeerSync {
  PeerFlags* flags[kMaxRanks];      ///< every rank's flag area, mapped here
  uint32_t* epochs;                 ///< this rank's per-block barrier counts (kMaxBlocks)
  volatile uint32_t* abort_word;    ///< device pointer to the shared host-mapped abort word
  volatile uint32_t* gave_up;       ///< this rank's word beside it: set when one of its waits gave up
  uint64_t timeout_ns;              ///< a wait gives up after this long
  uint64_t signature;               ///< this call's collective, dtype, op and counts
  int rank;
  int size;
};

}  // namespace seam::kernels::cuda
