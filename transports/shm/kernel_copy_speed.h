// How fast the kernel's cross-process copy (process_vm_readv) is on this machine, relative to a
// user-space memcpy: it pins and maps the source page by page, which costs 2-4x memcpy's time
// on some hosts and little on others. Single-copy schedules pay off only where it is cheap.
#pragma once

namespace seam::shm {

/// process_vm_readv's bandwidth over memcpy's for a 256 KiB cache-resident buffer read from this
/// very process, best of a few tries (measured once per process, about half a millisecond).
/// 0 when process_vm_readv is not permitted.
double kernel_copy_speed_ratio();

/// The ratio from which the kernel's copy counts as fast: between the hosts measured on either
/// side. 0.25-0.28 on the 2-vCPU EPYC, where the copies through shared memory were 1.3-2x faster
/// from 1 MiB; 0.45-0.53 on the 16-core Xeon, where single-copy was up to 1.3x faster; 0.43-0.53
/// on the 2-vCPU Sapphire Rapids when idle and 0.40-0.44 in the perf binaries, where single-copy
/// was 1.4-2x faster at 1 MiB (forced, all-gather 60-88 us against 117-134, all-reduce 148-197
/// against 280-306): at 0.4, a run that measured under it fell back on the slots.
inline constexpr double kFastKernelCopyRatio = 0.35;

/// Whether the kernel's copy is fast enough for single-copy transfers to pay off (at least
/// kFastKernelCopyRatio).
bool kernel_copy_is_fast();

}  // namespace seam::shm
