// How long a waiting rank busy-polls before it sleeps on its transport. Sleeping is cheap for
// the machine but costs the wake-up: on the GPU host's VM a halted vCPU took 100-250 us to
// resume, so a rank that slept while its peers were only a few microseconds late came back
// late itself, its peers outwaited their spin and slept in turn, and 1 KiB collectives settled
// at 150-250 us instead of 5 (8 ranks, every rank one core). So the budget starts at
// SEAM_SPIN_US and doubles after each wait that slept but would have ended within the longest
// spin (a longer spin would have covered it), up to that spin: kMaxSpinNoneSpare where each
// rank has a core of its own and none is to spare (the cores the local ranks may run on, the
// union of their affinities, are as many as the ranks), kMaxSpin elsewhere. Where each rank has
// a core, the budget keeps what it has grown to: halving it let late wake-ups sustain
// themselves, each sleep making a peer's wait outlast the spin, which shortened the next spins
// (GPU host, 8 ranks, float all-reduce: in a noisy period, 10 alternations, 4 MiB median 1.5 ms
// against 3.2 with halving, though with heavy rows of its own, up to 10 ms; in 12 calm ones,
// medians even and the slowest 4 MiB row 1.4 ms against 4.2).
//
// Where no core is to spare, a spin delays no peer, and a sleep can cost more than the wait: on
// the 2-vCPU Sapphire Rapids dev VM (2 ranks), while its host ran other guests, waits that
// slept lasted past the 1 ms ceiling (so the budget stayed near 50 us), each late wake-up made
// the peer's wait long enough to sleep too, and the host's steal of the VM's time was 15-55%
// while the collectives ran, against 0-6% with a longer spin.
// 2 ranks, bf16 all-gather, three runs each (bench/raw/dev-spr-spin-setting-s23.txt):
// SEAM_SPIN_US=50, 4 MiB 507-3140 us, 16 MiB 3.1-12.4 ms, 0.05-3.4 sleeps a call; a 10 ms spin
// 495-687 us and 3.1-3.4 ms, no sleeps. With its host's steal at 0-3%, 10 ms still won there
// (float all-reduce 16 MiB 3.8 ms against 4.7, with 0.08 sleeps a call against 0.60; 1 MiB
// 110 us against 143, neither sleeping; bench/raw/dev-spr-spin-steal-gated-ab-s24.txt).
// Where cores are to spare (for helper threads), the budget grows up to 1 ms, as before 10 ms
// was tried: on the GPU host's 16-vCPU Xeon, 2 and 8 ranks, unbound, 10 ms made no row faster
// beyond noise, and 2-rank float reduce-scatters of 16 MiB took 546-645 us instead of 366-430
// in 8 runs of 13, against 2 of 13 with 1 ms (medians 581 and 394 us, their timed calls
// sleeping 0.00-0.05 times a call either way; three device calls, bench/raw/xeon-s23d-spin-ab.txt,
// xeon-s24a-spin-ab.txt, xeon-s24b-spin-gate-and-table.txt). How the spin acted there, outside the
// timed calls, was not measured. Ranks bound one to a core (Open MPI's default at 2 ranks) leave
// none to spare and get the 10 ms spin; not measured on the Xeon.
//
// Where ranks outnumber cores, or a peer ran on this core during the wait (Engine::drive), a
// wait that outlasted kMaxSpin (the peers were really busy, maybe on this core) halves the
// budget back toward the setting.
//
// SEAM_SPIN_US=0 never spins. A spin yields the core at every turn while a peer last ran on it,
// and never to other tasks (Engine::drive).
#pragma once

#include <algorithm>
#include <chrono>

namespace seam::comm {

/// Where a waiting rank runs.
enum class WaiterCore {
  /// The ranks on this machine outnumber the cores they may run on (the union of their
  /// affinities), or this core runs other tasks.
  shared,
  /// A core of its own, and those cores outnumber the ranks (helper threads may use the rest).
  own_with_spare,
  /// A core of its own, and those cores are as many as the ranks.
  own_none_spare,
};

class SpinBudget {
 public:
  /// The longest spin, except on WaiterCore::own_none_spare.
  static constexpr std::chrono::microseconds kMaxSpin{1000};
  /// The longest spin on WaiterCore::own_none_spare.
  static constexpr std::chrono::microseconds kMaxSpinNoneSpare{10000};

  explicit SpinBudget(std::chrono::microseconds setting)
      : setting_(setting), current_(setting) {}
  /// How long to busy-poll now.
  std::chrono::microseconds current() const { return current_; }
  /// After a wait that slept: `slept` from the first sleep to the wait's end (the wait lasted
  /// the spin and that), on `core`.
  void after_sleep(std::chrono::nanoseconds slept, WaiterCore core) {
    if (setting_.count() == 0) return;
    const auto longest = core == WaiterCore::own_none_spare ? kMaxSpinNoneSpare : kMaxSpin;
    if (current_ + slept <= longest)
      current_ = std::max(setting_, std::min(current_ * 2, longest));
    else if (core == WaiterCore::shared)
      current_ = std::max(setting_, current_ / 2);
  }

 private:
  std::chrono::microseconds setting_, current_;
};

}  // namespace seam::comm
