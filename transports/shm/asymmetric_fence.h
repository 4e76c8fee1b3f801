// Asymmetric fences between the processes of a host (membarrier's GLOBAL_EXPEDITED, Linux
// 4.16). A rank that publishes a flag and then looks whether a peer sleeps would need a full
// fence (tens of cycles, and a wait for its stores to drain) on every publication; the rank that
// goes to sleep is on the slow path anyway. So the sleeper issues the heavy fence, which runs a
// full barrier on every running thread of every registered process, and publishers only keep
// the compiler from reordering: either the sleeper's look after its fence sees the flag, or the
// publisher's look sees the sleeper's mark (liburcu and folly's asymmetric fences use the same
// pairing within one process).
#pragma once

#include <atomic>

namespace seam::shm {

/// Registers this process for the heavy side; false where the kernel or a seccomp filter refuses
/// (every local rank must succeed for any to rely on it).
bool register_asymmetric_fence();
/// The heavy side; false if the system call failed.
bool heavy_fence();
/// The light side: this thread's earlier stores are ordered before its later loads against any
/// peer's heavy_fence.
inline void light_fence() { std::atomic_signal_fence(std::memory_order_seq_cst); }

}  // namespace seam::shm
