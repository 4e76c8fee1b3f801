// The driver's spin budget (spin_budget.h): grows after sleeps that ended soon, shrinks back
// after long ones where ranks share cores (and only there), never below the setting, never
// spins when the setting is zero.
#include <doctest/doctest.h>

#include "runtime/comm/spin_budget.h"

namespace seam::test {

using namespace std::chrono_literals;
using comm::SpinBudget;

TEST_CASE("a wait that slept but lasted no longer than the longest spin doubles the spin, up to 1 ms") {
  SpinBudget spin(50us);
  CHECK(spin.current() == 50us);
  spin.after_sleep(150us, false);  // 200 us in all: a 100 us spin would have covered it
  CHECK(spin.current() == 100us);
  for (int i = 0; i < 3; ++i) spin.after_sleep(10us, i == 1);
  CHECK(spin.current() == 800us);
  spin.after_sleep(200us, true);  // exactly the longest spin
  CHECK(spin.current() == SpinBudget::kMaxSpin);
}

TEST_CASE("where ranks share cores, a wait longer than the longest spin halves the spin back") {
  SpinBudget spin(50us);
  for (int i = 0; i < 5; ++i) spin.after_sleep(10us, true);
  REQUIRE(spin.current() == SpinBudget::kMaxSpin);
  spin.after_sleep(10us, true);  // slept even after spinning 1 ms
  CHECK(spin.current() == 500us);
  spin.after_sleep(600us, true);  // 1.1 ms in all: no spin up to 1 ms would have covered it
  CHECK(spin.current() == 250us);
  for (int i = 0; i < 10; ++i) spin.after_sleep(5ms, true);
  CHECK(spin.current() == 50us);
}

TEST_CASE("where each rank has a core, a long wait leaves the spin as it has grown") {
  SpinBudget spin(50us);
  spin.after_sleep(5ms, false);
  CHECK(spin.current() == 50us);
  for (int i = 0; i < 5; ++i) spin.after_sleep(10us, false);
  REQUIRE(spin.current() == SpinBudget::kMaxSpin);
  spin.after_sleep(10us, false);  // slept even after spinning 1 ms
  CHECK(spin.current() == SpinBudget::kMaxSpin);
  for (int i = 0; i < 10; ++i) spin.after_sleep(5ms, false);
  CHECK(spin.current() == SpinBudget::kMaxSpin);
}

TEST_CASE("a setting of zero never spins; one above the ceiling stays") {
  SpinBudget none(0us);
  none.after_sleep(10us, false);
  CHECK(none.current() == 0us);
  SpinBudget long_spin(5000us);
  long_spin.after_sleep(10us, true);
  CHECK(long_spin.current() == 5000us);
  long_spin.after_sleep(50ms, true);
  CHECK(long_spin.current() == 5000us);
}

}  // namespace seam::test
