// The driver's spin budget (spin_budget.h): grows after sleeps that ended soon, up to 10 ms where
// each rank has a core and none is to spare and 1 ms elsewhere, shrinks back after long ones where
// ranks share cores (and only there), never below the setting, never spins when the setting is
// zero.
#include <doctest/doctest.h>

#include "runtime/comm/spin_budget.h"

namespace seam::test {

using namespace std::chrono_literals;
using comm::SpinBudget;
using comm::WaiterCore;

TEST_CASE("where cores are shared, a wait that slept but ended within 1 ms doubles the spin") {
  SpinBudget spin(50us);
  CHECK(spin.current() == 50us);
  // 200 us in all: a 100 us spin would have covered it.
  spin.after_sleep(150us, WaiterCore::shared);
  CHECK(spin.current() == 100us);
  for (int i = 0; i < 3; ++i) spin.after_sleep(10us, WaiterCore::shared);
  CHECK(spin.current() == 800us);
  spin.after_sleep(200us, WaiterCore::shared);  // exactly the longest spin
  CHECK(spin.current() == SpinBudget::kMaxSpin);
}

TEST_CASE("where no core is to spare, the spin grows up to 10 ms, over late wake-ups too") {
  SpinBudget spin(50us);
  // A halted vCPU that came back late: a 3.05 ms spin would do.
  spin.after_sleep(3ms, WaiterCore::own_none_spare);
  CHECK(spin.current() == 100us);
  for (int i = 0; i < 6; ++i) spin.after_sleep(2ms, WaiterCore::own_none_spare);
  CHECK(spin.current() == 6400us);
  spin.after_sleep(10us, WaiterCore::own_none_spare);
  CHECK(spin.current() == SpinBudget::kMaxSpinNoneSpare);
  spin.after_sleep(10us, WaiterCore::own_none_spare);
  CHECK(spin.current() == SpinBudget::kMaxSpinNoneSpare);
}

TEST_CASE("where each rank has a core and cores are to spare, the spin grows up to 1 ms") {
  SpinBudget spin(50us);
  // 3.05 ms: past the longest spin, which would not cover it.
  spin.after_sleep(3ms, WaiterCore::own_with_spare);
  CHECK(spin.current() == 50us);
  for (int i = 0; i < 4; ++i) spin.after_sleep(10us, WaiterCore::own_with_spare);
  CHECK(spin.current() == 800us);
  spin.after_sleep(10us, WaiterCore::own_with_spare);
  CHECK(spin.current() == SpinBudget::kMaxSpin);
  spin.after_sleep(10us, WaiterCore::own_with_spare);
  CHECK(spin.current() == SpinBudget::kMaxSpin);
  // A long wait: kept, where shared cores would halve it.
  spin.after_sleep(50ms, WaiterCore::own_with_spare);
  CHECK(spin.current() == SpinBudget::kMaxSpin);
}

TEST_CASE("where ranks share cores, a wait longer than the longest spin halves the spin back") {
  SpinBudget spin(50us);
  for (int i = 0; i < 5; ++i) spin.after_sleep(10us, WaiterCore::shared);
  REQUIRE(spin.current() == SpinBudget::kMaxSpin);
  spin.after_sleep(10us, WaiterCore::shared);  // slept even after spinning 1 ms
  CHECK(spin.current() == 500us);
  // 1.1 ms in all: no spin up to 1 ms would have covered it.
  spin.after_sleep(600us, WaiterCore::shared);
  CHECK(spin.current() == 250us);
  for (int i = 0; i < 10; ++i) spin.after_sleep(5ms, WaiterCore::shared);
  CHECK(spin.current() == 50us);
}

TEST_CASE("where each rank has a core, a long wait leaves the spin as it has grown") {
  SpinBudget spin(50us);
  spin.after_sleep(50ms, WaiterCore::own_none_spare);
  CHECK(spin.current() == 50us);
  for (int i = 0; i < 5; ++i) spin.after_sleep(10us, WaiterCore::own_none_spare);
  REQUIRE(spin.current() == 1600us);
  for (int i = 0; i < 10; ++i) spin.after_sleep(50ms, WaiterCore::own_none_spare);
  CHECK(spin.current() == 1600us);
}

TEST_CASE("a spin grown on a core of its own halves back once the core is shared") {
  SpinBudget spin(50us);
  for (int i = 0; i < 8; ++i) spin.after_sleep(10us, WaiterCore::own_none_spare);
  REQUIRE(spin.current() == SpinBudget::kMaxSpinNoneSpare);
  spin.after_sleep(10us, WaiterCore::shared);  // a 10 ms spin is past the shared cores' longest
  CHECK(spin.current() == 5ms);
  for (int i = 0; i < 3; ++i) spin.after_sleep(10us, WaiterCore::shared);
  CHECK(spin.current() == 625us);
  spin.after_sleep(10us, WaiterCore::shared);  // within 1 ms in all again: grows, up to 1 ms
  CHECK(spin.current() == SpinBudget::kMaxSpin);
}

TEST_CASE("a setting of zero never spins; one above the ceiling stays") {
  SpinBudget none(0us);
  none.after_sleep(10us, WaiterCore::own_none_spare);
  CHECK(none.current() == 0us);
  SpinBudget long_spin(5000us);
  long_spin.after_sleep(10us, WaiterCore::shared);
  CHECK(long_spin.current() == 5000us);
  long_spin.after_sleep(50ms, WaiterCore::shared);
  CHECK(long_spin.current() == 5000us);
}

}  // namespace seam::test
