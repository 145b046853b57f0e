// When the poll loop looks at the control sockets: once per period while
// nobody asks, every pass within the window after a served request, at
// once after a wake-up; the loop does not sleep inside the window.
#include "emulator/control_cadence.h"

#include "gtest/gtest.h"

namespace rocemu::emulator {
namespace {

TEST(ControlCadenceTest, QuietLooksOncePerPeriod) {
  ControlCadence c;
  EXPECT_TRUE(c.Due(0));
  c.Looked(1'000, /*served=*/false);
  EXPECT_FALSE(c.Hot(1'000));
  EXPECT_FALSE(c.Due(1'000));
  EXPECT_FALSE(c.Due(1'000 + kSessionControlPeriod - 1));
  EXPECT_TRUE(c.Due(1'000 + kSessionControlPeriod));
}

TEST(ControlCadenceTest, AServedRequestMakesEveryPassLookForTheWindow) {
  ControlCadence c;
  const nic::TimeNs t0 = 5'000'000;
  c.Looked(t0, /*served=*/true);
  EXPECT_TRUE(c.Hot(t0));
  // The next pass, however soon, looks again.
  EXPECT_TRUE(c.Due(t0));
  // Looks that find nothing keep the cadence per pass until the window
  // that the served request opened ends...
  const nic::TimeNs late = t0 + kSessionControlHotWindow - 1;
  c.Looked(late, /*served=*/false);
  EXPECT_TRUE(c.Hot(late));
  EXPECT_TRUE(c.Due(late));
  // ...then the period applies again.
  const nic::TimeNs after = t0 + kSessionControlHotWindow;
  EXPECT_FALSE(c.Hot(after));
  c.Looked(after, /*served=*/false);
  EXPECT_FALSE(c.Due(after + 1));
  EXPECT_TRUE(c.Due(after + kSessionControlPeriod));
  // A request served late in the window extends it from that look.
  c.Looked(after + kSessionControlPeriod, /*served=*/true);
  EXPECT_TRUE(
      c.Hot(after + kSessionControlPeriod + kSessionControlHotWindow - 1));
}

TEST(ControlCadenceTest, AWakeUpLooksAtOnce) {
  ControlCadence c;
  c.Looked(10'000'000, /*served=*/false);
  EXPECT_FALSE(c.Due(10'000'001));
  c.Woken();
  EXPECT_TRUE(c.Due(10'000'001));
}

}  // namespace
}  // namespace rocemu::emulator
