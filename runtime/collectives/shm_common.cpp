#include "runtime/collectives/shm_common.h"

#include <atomic>

#include "kernels/reduce/cache_size.h"
#include "runtime/collectives/schedules.h"

namespace seam::collectives {
namespace {

// Where signature_of packs the variant (three bits); the count lies below.
constexpr int kVariantShift = 51;
// A control step (from 1024): the ring carries no call signature (see Group::isend).
constexpr uint32_t kDoorbellStep = 0x7F1;
// A ring's byte means nothing; it is sent from and received into static storage, so a ring
// still in flight when an operation fails never touches a destroyed frame.
const char kRingToken = 0;
char ring_sink = 0;

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
                                                  "slots-balanced"};
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

CallSignature signature_of(Collective c, DType dtype, ReduceOp op, const std::vector<size_t>& counts,
                           ShmVariant variant) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a over the counts
  for (size_t count : counts) {
    hash ^= count;
    hash *= 0x100000001b3ull;
  }
  return signature_of(c, dtype, op, hash, variant);
}

std::vector<int> peers_from(int me, int n, bool with_me) {
  std::vector<int> order;
  for (int k = 1; k < n; ++k) order.push_back((me + k) % n);
  if (with_me) order.push_back(me);
  return order;
}

kernels::Store store_for(size_t bytes, int ranks, bool destination_cached) {
  const bool overflows = bytes * static_cast<size_t>(ranks) > 2 * kernels::last_level_cache_bytes();
  return !destination_cached && overflows ? kernels::Store::streaming : kernels::Store::cached;
}

void Doorbells::ring(uint64_t wake) {
  if (wake == 0) return;
  // Beyond 64 ranks the mask cannot name them: the region then asks the last rank to wake
  // everyone else (ShmRegion::arrive / woken).
  const bool everyone = g_.size() > 64;
  for (int p = 0; p < g_.size(); ++p)
    if (p != g_.rank() && (everyone || (wake >> p & 1)))
      sends_.push_back(g_.isend(p, kDoorbellStep, &kRingToken, 1));
}

void Doorbells::expect(const ShmRegion& region, uint64_t round, bool results) {
  if (region.woken(g_.rank(), round, results))
    receives_.push_back(post_receive(g_, region.last_to_publish(round, results), kDoorbellStep,
                                     &ring_sink, 1));
}

DoorbellsAwaiter Doorbells::drain() {
  DoorbellsAwaiter a;
  a.receives = received("shared-memory doorbell", std::move(receives_));
  a.sends = comm::all_of(std::move(sends_));
  return a;
}

void BufferExchange::announce(uint64_t first_word, uint64_t second_word) {
  doorbells_.ring(region_.publish_words(g_.rank(), round_, signature_, first_word, second_word,
                                        doorbells_.wake_all()));
}

RoundAwaiter BufferExchange::peers_ready() {
  RoundAwaiter a;
  static_cast<PublishedAwaiter&>(a) = peers_published(g_, region_, round_, signature_, collective_);
  a.doorbells = &doorbells_;
  return a;
}

void BufferExchange::announce_done() {
  doorbells_.ring(region_.publish_result(g_.rank(), round_, doorbells_.wake_all()));
}

RoundAwaiter BufferExchange::peers_done() {
  RoundAwaiter a;
  static_cast<PublishedAwaiter&>(a) = peers_published_results(g_, region_, round_);
  a.doorbells = &doorbells_;
  return a;
}

comm::Task BufferExchange::finish() {
  announce_done();
  co_await peers_done();
  co_await settle();
}

}  // namespace seam::collectives
