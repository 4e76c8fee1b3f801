// How long a waiting rank busy-polls before it sleeps on its transport. Sleeping is cheap for
// the machine but costs the wake-up: in a VM a halted vCPU is slow to resume, so a rank that
// slept while its peers were only a few microseconds late came back late itself, its peers
// outwaited their spin and slept in turn, and small collectives settled at the wake-up's cost
// rather than their own. So the budget starts at SEAM_SPIN_US and doubles after each wait that
// slept but would have ended within the longest spin (a longer spin would have covered it), up to
// that spin: kMaxSpinNoneSpare where each rank has a core of its own and none is to spare (the
// cores the local ranks may run on, the union of their affinities, are as many as the ranks),
// kMaxSpin elsewhere. Where each rank has a core, the budget keeps what it has grown to: halving it
// let late wake-ups sustain themselves, each sleep making a peer's wait outlast the spin, which
// shortened the next spins.
//
// Where no core is to spare, a spin delays no peer and a sleep can cost more than the wait (a
// late wake-up makes the peer sleep too), so the budget may grow to kMaxSpinNoneSpare. Where cores
// are to spare for helper threads, a longer spin only slows large calls, so it stops at kMaxSpin.
// Ranks bound one to a core leave none to spare.
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
