#include "protocol/opcode.h"

#include <set>
#include <string_view>

#include "gtest/gtest.h"
#include "protocol/headers.h"

namespace rocemu::protocol {
namespace {

// GetOpcodeInfo is usable in constant expressions.
static_assert(GetOpcodeInfo(kRcRdmaWriteOnlyWithImmediate).header_len ==
              12 + 16 + 4);
static_assert(GetOpcodeInfo(kRcAtomicAcknowledge).header_len == 12 + 4 + 8);
static_assert(GetOpcodeInfo(kUdSendOnly).header_len == 12 + 8);

TEST(OpcodeTest, NamesAreUniqueAndOnlyDefinedHaveThem) {
  std::set<std::string_view> names;
  int defined = 0;
  for (int code = 0; code < 256; ++code) {
    const OpcodeInfo& info = GetOpcodeInfo(static_cast<uint8_t>(code));
    EXPECT_EQ(info.defined, !info.name.empty()) << code;
    if (!info.defined) {
      EXPECT_FALSE(info.supported) << code;
      EXPECT_EQ(info.engine, Engine::kNone) << code;
      continue;
    }
    ++defined;
    names.insert(info.name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(defined));
  // RC 25 (23 + FLUSH, ATOMIC_WRITE), UC 12, RD 22, UD 2, CNP 1, XRC 23.
  EXPECT_EQ(defined, 85);
}

TEST(OpcodeTest, EnginesAndKinds) {
  EXPECT_EQ(GetOpcodeInfo(kRcSendFirst).engine, Engine::kResponder);
  EXPECT_EQ(GetOpcodeInfo(kRcRdmaReadRequest).kind, OpKind::kRequest);
  EXPECT_EQ(GetOpcodeInfo(kRcRdmaReadResponseMiddle).engine,
            Engine::kCompleter);
  EXPECT_EQ(GetOpcodeInfo(kRcRdmaReadResponseMiddle).kind,
            OpKind::kReadResponse);
  EXPECT_EQ(GetOpcodeInfo(kRcAcknowledge).kind, OpKind::kAck);
  EXPECT_EQ(GetOpcodeInfo(kRcAtomicAcknowledge).operation,
            Operation::kAtomicAcknowledge);
  EXPECT_EQ(GetOpcodeInfo(kCnp).kind, OpKind::kCnp);
  EXPECT_EQ(GetOpcodeInfo(kUdSendOnlyWithImmediate).service, ServiceType::kUd);
  EXPECT_TRUE(GetOpcodeInfo(kUdSendOnlyWithImmediate).HasImmediate());
  EXPECT_TRUE(GetOpcodeInfo(kRcSendOnlyWithInvalidate).HasInvalidate());
  EXPECT_TRUE(GetOpcodeInfo(kRcSendOnly).IsFirst());
  EXPECT_TRUE(GetOpcodeInfo(kRcSendOnly).IsLast());
  EXPECT_FALSE(GetOpcodeInfo(kRcSendMiddle).IsFirst());
  EXPECT_FALSE(GetOpcodeInfo(kRcRdmaReadRequest).payload);
  EXPECT_EQ(GetOpcodeInfo(kRcFlush).engine, Engine::kResponder);
  EXPECT_EQ(GetOpcodeInfo(kRcFlush).header_len, kBthLen + kFethLen + kRethLen);
  EXPECT_FALSE(GetOpcodeInfo(kRcFlush).payload);
  EXPECT_EQ(GetOpcodeInfo(kRcAtomicWrite).kind, OpKind::kRequest);
  EXPECT_EQ(GetOpcodeInfo(kRcAtomicWrite).header_len, kBthLen + kRethLen);
  EXPECT_TRUE(GetOpcodeInfo(kRcAtomicWrite).payload);
  EXPECT_TRUE(GetOpcodeInfo(kRdSendFirst).defined);
  EXPECT_FALSE(GetOpcodeInfo(kRdSendFirst).supported);
  EXPECT_FALSE(GetOpcodeInfo(0x80).defined);
  EXPECT_FALSE(GetOpcodeInfo(0xFF).defined);
  // XRC: requests to the responder with an XRCETH, responses without.
  EXPECT_EQ(GetOpcodeInfo(kXrcSendFirst).engine, Engine::kResponder);
  EXPECT_TRUE(GetOpcodeInfo(kXrcSendFirst).Has(kExtXrceth));
  EXPECT_EQ(GetOpcodeInfo(kXrcRdmaReadRequest).header_len,
            kBthLen + kXrcethLen + kRethLen);
  EXPECT_EQ(GetOpcodeInfo(kXrcAcknowledge).engine, Engine::kCompleter);
  EXPECT_FALSE(GetOpcodeInfo(kXrcAcknowledge).Has(kExtXrceth));
  EXPECT_EQ(GetOpcodeInfo(kXrcCmpSwap).operation, Operation::kCompareSwap);
  EXPECT_TRUE(GetOpcodeInfo(kXrcSendOnlyWithInvalidate).HasInvalidate());
  EXPECT_FALSE(GetOpcodeInfo(0xB5).defined);
  EXPECT_FALSE(GetOpcodeInfo(0xBC).defined);  // no XRC FLUSH
}

}  // namespace
}  // namespace rocemu::protocol

namespace rocemu::protocol {
namespace {

TEST(HeadersTest, AethSyndromeAndTables) {
  const Aeth nak{.syndrome = Aeth::Nak(NakCode::kRemoteAccessError)};
  EXPECT_EQ(nak.syndrome, 0x62);
  EXPECT_EQ(nak.type(), AethType::kNak);
  EXPECT_EQ(nak.value(), 2);
  const Aeth rnr{.syndrome = Aeth::RnrNak(14)};
  EXPECT_EQ(rnr.type(), AethType::kRnrNak);
  EXPECT_EQ(RnrNakTimerMicros(rnr.value()), 1280u);
  EXPECT_EQ(RnrNakTimerMicros(0), 655360u);
  EXPECT_EQ(RnrNakTimerMicros(1), 10u);
  EXPECT_EQ(RnrNakTimerMicros(31), 491520u);
  EXPECT_EQ(Aeth{}.type(), AethType::kAck);
  EXPECT_EQ(Aeth{}.value(), kAethCreditInvalid);
  EXPECT_EQ(AethCreditCode(0), 0);
  EXPECT_EQ(AethCreditCode(5), 4);  // 4 is the largest count <= 5
  EXPECT_EQ(AethCreditCode(6), 5);
  EXPECT_EQ(AethCreditCode(1000000), 30);
  for (uint8_t c = 1; c < 31; ++c) {
    EXPECT_LT(kAethCreditCount[c - 1], kAethCreditCount[c]);
    EXPECT_EQ(AethCreditCode(kAethCreditCount[c]), c);
  }
}

}  // namespace
}  // namespace rocemu::protocol
