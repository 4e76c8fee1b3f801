#include <cstdint>
#include "runtime/collectives/shm/common.h"

#include <algorithm>
#include <atomic>

#include "kernels/reduce/cache_size.h"
#include "runtime/collectives/schedules.h"

namespace seam::collectives {
namespace {

// Where signature_of packs the variant (three bits); the count lies below.
constexpr int kVariantShift = 51;

// ShmVariant + 1 of the last call (0: none yet); read by another thread at most, for display.
std::atomic<uint8_t> last_schedule{0};

}  // namespace

void note_schedule(CallSignature signature) {
  last_schedule.store(static_cast<uint8_t>(variant_of(signature)) + 1, std::memory_order_relaxed);
}

std::string_view last_shm_schedule() {
  const uint8_t last = last_schedule.load(std::memory_order_relaxed);
  return last ? shm_variant_name(static_cast<ShmVariant>(last - 1)) : std::string_view();
}

std::string_view shm_variant_name(ShmVariant variant) {
  static constexpr std::string_view names[] = {"slots", "single-copy", "slots-whole", "zero-copy",
                                                  "slots-balanced", "slots-eager",
                                                  "single-copy-balanced"};
  return names[static_cast<int>(variant)];
}

CallSignature signature_of(Collective c, DType dtype, ReduceOp op, size_t total,
                           ShmVariant variant) {
  return {(static_cast<uint64_t>(c) << 60) | (static_cast<uint64_t>(dtype) << 56) |
          (static_cast<uint64_t>(op) << 54) | (static_cast<uint64_t>(variant) << kVariantShift) |
          (total & ((uint64_t{1} << kVariantShift) - 1))};
}

ShmVariant variant_of(CallSignature signature) {
  return static_cast<ShmVariant>(signature.word >> kVariantShift & 7);
}

CallSignature signature_of(Collective c, DType dtype, ReduceOp op, std::span<const size_t> counts,
                           ShmVariant variant) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the counts
  for (size_t count : counts) {
    hash ^= count;
    hash *= 0x100000001b3ull;
  }
  return signature_of(c, dtype, op, hash, variant);
}

/// The most last-level cache store_for counts on. Inside VMs sysfs reports the host's whole
/// L3, which other guests share; counting it whole would keep results in cache past where
/// streaming them is faster. The cap applies on bare metal too, though it was only timed in VMs.
constexpr size_t kCountedCacheBytes = size_t{32} << 20;

namespace {

/// store_for's rule with `cache` bytes of last-level cache (counted up to kCountedCacheBytes).
kernels::Store store_counting(size_t cache, size_t bytes, int ranks, bool destination_cached) {
  const bool overflows =
      bytes * static_cast<size_t>(ranks) > 2 * std::min(cache, kCountedCacheBytes);
  return !destination_cached && overflows ? kernels::Store::streaming : kernels::Store::cached;
}

}  // namespace

kernels::Store store_for(size_t bytes, int ranks, bool destination_cached) {
  return store_counting(kernels::last_level_cache_bytes(), bytes, ranks, destination_cached);
}

kernels::Store copy_store_for(size_t bytes, int ranks, bool destination_cached) {
  // Calls that stay cached whatever the probe finds do not run it (small calls never pay for it).
  const size_t least = std::min(kernels::last_level_cache_bytes(), kernels::kCopyProbeBytes);
  if (store_counting(least, bytes, ranks, destination_cached) == kernels::Store::cached)
    return kernels::Store::cached;
  return store_counting(kernels::usable_last_level_cache_bytes(), bytes, ranks, destination_cached);
}

void BufferExchange::wake_if_complete(bool results) {
  // any_asleep's fence also orders this rank's flag before its look at the others' flags.
  if (!region_.any_asleep()) return;
  if (all_published(results).blocking_peer() == -1) region_.wake_if_sleeping();
}

void BufferExchange::announce(uint64_t first_word, uint64_t second_word) {
  region_.publish_words(g_.rank(), round_, signature_, first_word, second_word);
}

PublishedAwaiter BufferExchange::peers_ready() {
  wake_if_complete(false);
  return all_published(false);
}

void BufferExchange::wake_sleepers() {
  if (region_.any_asleep()) region_.wake_if_sleeping();
}

PublishedAwaiter BufferExchange::rank_ready(int rank) {
  wake_if_complete(false);
  return rank_published(g_, region_, rank, round_, signature_, collective_);
}

void BufferExchange::announce_done() { region_.publish_result(g_.rank(), round_); }

PublishedAwaiter BufferExchange::peers_done() {
  wake_if_complete(true);
  return all_published(true);
}

PublishedAwaiter BufferExchange::all_published(bool results) const {
  return results ? peers_published_results(g_, region_, round_)
                 : peers_published(g_, region_, round_, signature_, collective_);
}

comm::Task BufferExchange::finish(std::exception_ptr failure) {
  if (failure)
    region_.publish_failure(g_.rank(), round_);
  else
    announce_done();
  co_await peers_done();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace seam::collectives
