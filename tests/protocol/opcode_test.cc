#include "protocol/opcode.h"

#include <set>
#include <string_view>

#include "gtest/gtest.h"

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
  // RC 25 (23 + FLUSH, ATOMIC_WRITE), UC 12, RD 22, UD 2, CNP 1.
  EXPECT_EQ(defined, 62);
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
  EXPECT_TRUE(GetOpcodeInfo(kRdSendFirst).defined);
  EXPECT_FALSE(GetOpcodeInfo(kRdSendFirst).supported);
  EXPECT_FALSE(GetOpcodeInfo(0x80).defined);
  EXPECT_FALSE(GetOpcodeInfo(0xFF).defined);
}

}  // namespace
}  // namespace rocemu::protocol
