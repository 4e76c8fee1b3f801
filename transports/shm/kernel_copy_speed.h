// How fast the kernel's cross-process copy (process_vm_readv) is on this machine, relative to a
// user-space memcpy: it pins and maps the source page by page, which costs several times
// memcpy's time on some hosts and little on others. Single-copy schedules pay off only where it
// is cheap.
#pragma once

namespace seam::shm {

/// process_vm_readv's bandwidth over memcpy's for a 256 KiB cache-resident buffer read from this
/// very process, best of a few tries (measured once per process).
/// 0 when process_vm_readv is not permitted.
double kernel_copy_speed_ratio();

/// The ratio from which the kernel's copy counts as fast: between the hosts where the copies
/// through shared memory won and those where single-copy did, with room below the latter, whose
/// probe reads lower while other work runs.
inline constexpr double kFastKernelCopyRatio = 0.35;

/// Whether the kernel's copy is fast enough for single-copy transfers to pay off (at least
/// kFastKernelCopyRatio).
bool kernel_copy_is_fast();

}  // namespace seam::shm
