// How long a waiting rank busy-polls before it sleeps on its transport. Sleeping is cheap for
// the machine but costs the wake-up: on the GPU host's VM a halted vCPU took 100-250 us to
// resume, so a rank that slept while its peers were only a few microseconds late came back
// late itself, its peers outwaited their spin and slept in turn, and 1 KiB collectives settled
// at 150-250 us instead of 5 (8 ranks, every rank one core). So the budget starts at
// SEAM_SPIN_US and doubles after each wait that slept but lasted no longer than kMaxSpin in
// all (a longer spin would have covered it), up to kMaxSpin.
//
// Where ranks outnumber cores, or yields found this core shared (Engine::drive), a wait that
// lasted longer (the peers were really busy, maybe on this core) halves it back toward the
// setting. Where each rank has a core, a spin delays no peer, so the budget keeps what it has
// grown to. Halving there let late wake-ups sustain themselves, each sleep making a peer's
// wait outlast kMaxSpin, which shortened the next spins. GPU host, 8 ranks, float all-reduce:
// in a noisy period, 10 alternations, 4 MiB median 1.5 ms against 3.2 with halving (though
// with heavy rows of its own, up to 10 ms); in 12 calm ones, medians even and the slowest 4 MiB
// row 1.4 ms against 4.2.
//
// SEAM_SPIN_US=0 never spins. The part beyond the setting yields the core at every turn
// (Engine::drive), so ranks that share cores do not hold them; the setting's part yields every
// 5 us, and at every turn for a while once yields let other tasks run.
#pragma once

#include <algorithm>
#include <chrono>

namespace seam::comm {

class SpinBudget {
 public:
  static constexpr std::chrono::microseconds kMaxSpin{1000};

  explicit SpinBudget(std::chrono::microseconds setting)
      : setting_(setting), current_(setting) {}
  /// How long to busy-poll now.
  std::chrono::microseconds current() const { return current_; }
  /// SEAM_SPIN_US: the part of the spin that polls, yielding the core only every few
  /// microseconds (Engine::drive).
  std::chrono::microseconds setting() const { return setting_; }
  /// After a wait that slept: `slept` from the first sleep to the wait's end (the wait lasted
  /// the spin and that); `cores_shared`: the ranks on this machine outnumber its cores, or
  /// this rank's core runs other tasks.
  void after_sleep(std::chrono::nanoseconds slept, bool cores_shared) {
    if (setting_.count() == 0) return;
    const auto ceiling = std::max(setting_, kMaxSpin);
    if (current_ + slept <= kMaxSpin)
      current_ = std::min(current_ * 2, ceiling);
    else if (cores_shared)
      current_ = std::max(setting_, current_ / 2);
  }

 private:
  std::chrono::microseconds setting_, current_;
};

}  // namespace seam::comm
