#include "pfc_ecn/red_marker.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"

namespace rocemu::pfc_ecn {
namespace {

// Empirical mark fraction over n decisions at a fixed depth must lie within
// 5 binomial standard deviations of p(depth).
void ExpectBinomial(const RedProfile& profile, uint64_t depth, int n,
                    double expected_p) {
  RedMarker m(profile, /*seed=*/42);
  ASSERT_DOUBLE_EQ(m.MarkProbability(depth), expected_p);
  int marks = 0;
  for (int i = 0; i < n; ++i) marks += m.ShouldMark(depth) ? 1 : 0;
  const double mean = n * expected_p;
  const double sigma = std::sqrt(n * expected_p * (1 - expected_p));
  EXPECT_NEAR(marks, mean, 5 * sigma)
      << "depth " << depth << " marks " << marks << "/" << n;
}

TEST(RedMarker, ProbabilityTestPointsOfReference) {
  RedMarker paper({.kmin_bytes = 5000, .kmax_bytes = 200000, .pmax = 0.01}, 1);
  EXPECT_DOUBLE_EQ(paper.MarkProbability(102500), 0.005);
  RedMarker hpcc({.kmin_bytes = 400000, .kmax_bytes = 1600000, .pmax = 0.2}, 1);
  EXPECT_DOUBLE_EQ(hpcc.MarkProbability(1000000), 0.1);
  RedMarker conweave({.kmin_bytes = 100000, .kmax_bytes = 400000, .pmax = 0.2},
                     1);
  EXPECT_DOUBLE_EQ(conweave.MarkProbability(250000), 0.1);
}

TEST(RedMarker, MarkFractionWithinBinomialBound) {
  ExpectBinomial({.kmin_bytes = 5000, .kmax_bytes = 200000, .pmax = 0.01},
                 102500, 200000, 0.005);
  ExpectBinomial({.kmin_bytes = 100000, .kmax_bytes = 400000, .pmax = 0.2},
                 250000, 100000, 0.1);
  ExpectBinomial({.kmin_bytes = 100000, .kmax_bytes = 400000, .pmax = 1.0},
                 325000, 50000, 0.75);
}

TEST(RedMarker, NeverBelowKminAlwaysAboveKmax) {
  RedMarker m({.kmin_bytes = 5000, .kmax_bytes = 200000, .pmax = 0.01}, 7);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_FALSE(m.ShouldMark(0));
    EXPECT_FALSE(m.ShouldMark(5000));
    EXPECT_TRUE(m.ShouldMark(200001));
    EXPECT_TRUE(m.ShouldMark(10'000'000));
  }
}

TEST(RedMarker, StepMarkingWhenKminEqualsKmax) {
  RedMarker m({.kmin_bytes = 30000, .kmax_bytes = 30000, .pmax = 1.0}, 7);
  EXPECT_FALSE(m.ShouldMark(30000));
  EXPECT_TRUE(m.ShouldMark(30001));
}

TEST(RedMarker, SameSeedSameDecisionsOtherSeedDiffers) {
  const RedProfile p{.kmin_bytes = 0, .kmax_bytes = 1000, .pmax = 0.5};
  RedMarker a(p, 99), b(p, 99), c(p, 100);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const bool x = a.ShouldMark(500);
    EXPECT_EQ(x, b.ShouldMark(500));
    differ += x != c.ShouldMark(500) ? 1 : 0;
  }
  EXPECT_GT(differ, 0);
}

TEST(RedProfile, Validation) {
  EXPECT_TRUE(RedProfile{}.Validate().ok());
  EXPECT_FALSE((RedProfile{.kmin_bytes = 2, .kmax_bytes = 1, .pmax = 0.1})
                   .Validate()
                   .ok());
  EXPECT_FALSE((RedProfile{.kmin_bytes = 1, .kmax_bytes = 2, .pmax = 1.5})
                   .Validate()
                   .ok());
}

TEST(SplitMix64, ReproducibleUnitInterval) {
  SplitMix64 a(0), b(0);
  for (int i = 0; i < 1000; ++i) {
    const double u = a.NextUnit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_EQ(u, b.NextUnit());
  }
}

}  // namespace
}  // namespace rocemu::pfc_ecn
