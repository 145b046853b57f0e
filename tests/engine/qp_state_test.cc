#include "nic/qp_state.h"

#include <gtest/gtest.h>

namespace rocemu::nic {
namespace {

using namespace qp_attr;  // NOLINT

TEST(QpStateTest, ResetToInitRequiresPortPkeyAccessForRc) {
  EXPECT_TRUE(CheckQpTransition(QpType::kRc, QpState::kReset, QpState::kInit,
                                kState | kPkeyIndex | kPort | kAccessFlags,
                                QpState::kReset)
                  .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kReset, QpState::kInit,
                                 kState | kPkeyIndex | kPort, QpState::kReset)
                   .ok());
  // UD takes a Q_Key instead of access flags.
  EXPECT_TRUE(CheckQpTransition(QpType::kUd, QpState::kReset, QpState::kInit,
                                kState | kPkeyIndex | kPort | kQkey,
                                QpState::kReset)
                  .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kUd, QpState::kReset, QpState::kInit,
                                 kState | kPkeyIndex | kPort | kAccessFlags,
                                 QpState::kReset)
                   .ok());
}

TEST(QpStateTest, InitToRtrRcNeedsResponderAttributes) {
  const QpAttrMask uc = kState | kAv | kPathMtu | kDestQpn | kRqPsn;
  EXPECT_TRUE(CheckQpTransition(QpType::kUc, QpState::kInit, QpState::kRtr, uc,
                                QpState::kReset)
                  .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kInit, QpState::kRtr, uc,
                                 QpState::kReset)
                   .ok());
  EXPECT_TRUE(CheckQpTransition(QpType::kRc, QpState::kInit, QpState::kRtr,
                                uc | kMaxDestRdAtomic | kMinRnrTimer,
                                QpState::kReset)
                  .ok());
  // The send-side attributes belong to RTR -> RTS.
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kInit, QpState::kRtr,
                                 uc | kMaxDestRdAtomic | kMinRnrTimer | kSqPsn,
                                 QpState::kReset)
                   .ok());
}

TEST(QpStateTest, RtrToRtsAndCurStateCheck) {
  const QpAttrMask rc =
      kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic;
  EXPECT_TRUE(CheckQpTransition(QpType::kRc, QpState::kRtr, QpState::kRts, rc,
                                QpState::kReset)
                  .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kRtr, QpState::kRts,
                                 rc | kCurState, QpState::kInit)
                   .ok());
  EXPECT_TRUE(CheckQpTransition(QpType::kRc, QpState::kRtr, QpState::kRts,
                                rc | kCurState, QpState::kRtr)
                  .ok());
  EXPECT_TRUE(CheckQpTransition(QpType::kUd, QpState::kRtr, QpState::kRts,
                                kState | kSqPsn, QpState::kReset)
                  .ok());
}

TEST(QpStateTest, TransitionsThatDoNotExist) {
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kReset, QpState::kRtr,
                                 kState, QpState::kReset)
                   .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kInit, QpState::kRts,
                                 kState, QpState::kReset)
                   .ok());
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kErr, QpState::kRts,
                                 kState, QpState::kReset)
                   .ok());
  // RC never sits in SQE; UC and UD leave it to RTS.
  EXPECT_FALSE(CheckQpTransition(QpType::kRc, QpState::kSqe, QpState::kRts,
                                 kState, QpState::kReset)
                   .ok());
  EXPECT_TRUE(CheckQpTransition(QpType::kUd, QpState::kSqe, QpState::kRts,
                                kState, QpState::kReset)
                  .ok());
  // Every state may go to ERR and RESET.
  for (int s = 0; s < kNumQpStates; ++s) {
    EXPECT_TRUE(CheckQpTransition(QpType::kRc, static_cast<QpState>(s),
                                  QpState::kErr, kState, QpState::kReset)
                    .ok());
    EXPECT_TRUE(CheckQpTransition(QpType::kUc, static_cast<QpState>(s),
                                  QpState::kReset, kState, QpState::kReset)
                    .ok());
  }
}

TEST(QpStateTest, TimersFollowTheSpecTables) {
  EXPECT_EQ(LocalAckTimeoutNs(0), 0u);
  EXPECT_EQ(LocalAckTimeoutNs(1), 8192u);
  EXPECT_EQ(LocalAckTimeoutNs(14), 4096ull << 14);
  EXPECT_EQ(RnrTimerNs(1), 10000u);       // 0.01 ms
  EXPECT_EQ(RnrTimerNs(0), 655360000u);   // 655.36 ms
  EXPECT_EQ(RnrTimerNs(31), 491520000u);  // 491.52 ms
  EXPECT_EQ(RnrTimerNs(14), 1280000u);    // 1.28 ms
  EXPECT_EQ(PathMtuBytes(PathMtu::kMtu4096), 4096u);
  EXPECT_EQ(PathMtuBytes(PathMtu::kMtu256), 256u);
}

}  // namespace
}  // namespace rocemu::nic
