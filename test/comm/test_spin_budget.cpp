// The driver's spin budget (spin_budget.h): grows after sleeps that ended soon, up to 10 ms where
// each rank has a core and none is to spare and 1 ms elsewhere, shrinks back after long ones where
// ranks share cores (and only there), never below the setting, never spins when the setting is
// zero.
#include <chrono>
#include <initializer_list>

#include <doctest/doctest.h>

#include "runtime/comm/spin_budget.h"

namespace seam::test {
namespace {

using namespace std::chrono_literals;
using comm::SpinBudget;
using comm::WaiterCore;
using us = std::chrono::microseconds;

constexpr WaiterCore shared = WaiterCore::shared;
constexpr WaiterCore none_spare = WaiterCore::own_none_spare;
constexpr WaiterCore with_spare = WaiterCore::own_with_spare;

/// `times` sleeps of `slept` on `core`, after which the budget must be `then`.
struct Step {
  us slept;
  WaiterCore core;
  int times;
  us then;
};

/// Runs the steps from a budget set to `setting`, checking the budget after each.
void check_steps(us setting, std::initializer_list<Step> steps) {
  SpinBudget spin(setting);
  CHECK(spin.current() == setting);
  int index = 0;
  for (const Step& s : steps) {
    for (int i = 0; i < s.times; ++i) spin.after_sleep(s.slept, s.core);
    INFO("step " << index++);
    CHECK(spin.current().count() == s.then.count());
  }
}

}  // namespace

TEST_CASE("where cores are shared, a wait that slept but ended within 1 ms doubles the spin") {
  check_steps(50us, {
                        {150us, shared, 1, 100us},  // ended soon after the spin: one twice as long covers it
                        {10us, shared, 3, 800us},
                        {200us, shared, 1, SpinBudget::kMaxSpin},  // exactly the longest spin
                    });
}

TEST_CASE("where no core is to spare, the spin grows up to 10 ms, over late wake-ups too") {
  check_steps(50us, {
                        {3ms, none_spare, 1, 100us},  // a halted vCPU back late: a spin under the ceiling covers it
                        {2ms, none_spare, 6, 6400us},
                        {10us, none_spare, 1, SpinBudget::kMaxSpinNoneSpare},
                        {10us, none_spare, 1, SpinBudget::kMaxSpinNoneSpare},
                    });
}

TEST_CASE("where each rank has a core and cores are to spare, the spin grows up to 1 ms") {
  check_steps(50us, {
                        {3ms, with_spare, 1, 50us},  // past the longest spin: no growth
                        {10us, with_spare, 4, 800us},
                        {10us, with_spare, 1, SpinBudget::kMaxSpin},
                        {10us, with_spare, 1, SpinBudget::kMaxSpin},
                        {50ms, with_spare, 1, SpinBudget::kMaxSpin},  // kept, where shared cores halve it
                    });
}

TEST_CASE("where ranks share cores, a wait longer than the longest spin halves the spin back") {
  check_steps(50us, {
                        {10us, shared, 5, SpinBudget::kMaxSpin},
                        {10us, shared, 1, 500us},   // slept even after the longest spin
                        {600us, shared, 1, 250us},  // past the longest spin: it halves
                        {5ms, shared, 10, 50us},
                    });
}

TEST_CASE("where each rank has a core, a long wait leaves the spin as it has grown") {
  check_steps(50us, {
                        {50ms, none_spare, 1, 50us},
                        {10us, none_spare, 5, 1600us},
                        {50ms, none_spare, 10, 1600us},
                    });
}

TEST_CASE("a spin grown on a core of its own halves back once the core is shared") {
  check_steps(50us, {
                        {10us, none_spare, 8, SpinBudget::kMaxSpinNoneSpare},
                        {10us, shared, 1, 5ms},  // a no-spare spin is past the shared cores' longest
                        {10us, shared, 3, 625us},
                        {10us, shared, 1, SpinBudget::kMaxSpin},  // within the shared cores' longest again: grows
                    });
}

TEST_CASE("a setting of zero never spins; one above the ceiling stays") {
  check_steps(0us, {{10us, none_spare, 1, 0us}});
  check_steps(5000us, {
                          {10us, shared, 1, 5000us},
                          {50ms, shared, 1, 5000us},
                      });
}

}  // namespace seam::test
