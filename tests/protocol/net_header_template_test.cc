#include "protocol/net_header_template.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/checksum.h"
#include "protocol/frame.h"
#include "protocol/opcode.h"
#include "tests/protocol/test_util.h"

namespace rocemu::protocol {
namespace {

using testing::TestNet;

TransportHeaders SendOnly(uint32_t psn) {
  TransportHeaders h;
  h.bth.opcode = Opcode::kRcSendOnly;
  h.bth.dest_qp = 0x123456;
  h.bth.psn = psn;
  return h;
}

// Builds a frame with `len` payload bytes through `t`; the buffer is exactly
// the frame plus 8 guard bytes.
std::vector<uint8_t> Build(const NetHeaderTemplate& t, const NetHeaders& net,
                           size_t len, uint32_t psn) {
  std::vector<uint8_t> frame(RoceFrameLength(net, Opcode::kRcSendOnly, len) + 8,
                             0xEE);
  RoceFrameWriter w;
  EXPECT_EQ(w.Begin(t, SendOnly(psn), len, frame), BuildError::kOk);
  for (size_t i = 0; i < len; ++i) w.payload()[i] = uint8_t(i * 7 + psn);
  const size_t n = w.Finish();
  EXPECT_EQ(n, frame.size() - 8);
  for (size_t i = n; i < frame.size(); ++i) {
    EXPECT_EQ(frame[i], 0xEE) << "wrote past the frame";
  }
  frame.resize(n);
  return frame;
}

// One template serves frames of every length, in any order: what is patched
// per frame (lengths, IPv4 checksum) never carries over from the last one.
TEST(NetHeaderTemplateTest, OneTemplateServesEveryLength) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      for (UdpChecksumMode mode :
           {UdpChecksumMode::kAuto, UdpChecksumMode::kZero,
            UdpChecksumMode::kCompute}) {
        NetHeaders net = TestNet(ipv6, vlan);
        net.udp_checksum = mode;
        const NetHeaderTemplate t(net);
        EXPECT_EQ(t.length(), NetHeadersLength(net));
        EXPECT_EQ(t.l3_offset(), vlan ? 18u : 14u);
        EXPECT_EQ(t.udp_checksum(),
                  mode == UdpChecksumMode::kCompute ||
                      (mode == UdpChecksumMode::kAuto && ipv6));
        uint32_t psn = 0;
        for (size_t len : {4096, 0, 1, 64, 3, 1024, 9000, 2, 65000, 63}) {
          SCOPED_TRACE("ipv6=" + std::to_string(ipv6) + " vlan=" +
                       std::to_string(vlan) + " len=" + std::to_string(len));
          const std::vector<uint8_t> frame = Build(t, net, len, ++psn);
          ParsedFrame p;
          ASSERT_EQ(ParseFrame(frame, &p), ParseError::kOk);
          // The parser reports the checksum mode as kZero or kCompute
          // from the field; the field is checked below.
          NetHeaders parsed_net = p.net;
          parsed_net.udp_checksum = net.udp_checksum;
          EXPECT_EQ(parsed_net, net);
          EXPECT_EQ(p.hdr.bth.psn, psn);
          EXPECT_EQ(p.payload.size(), len);
          EXPECT_EQ(p.udp_checksum != 0, t.udp_checksum());
          // The one-shot builder (a template per call) gives the same bytes.
          FrameSpec spec{net, SendOnly(psn)};
          std::vector<uint8_t> again(frame.size());
          EXPECT_EQ(BuildRoceFrame(spec, p.payload, again), frame.size());
          EXPECT_EQ(again, frame);
        }
      }
    }
  }
}

// The IPv4 checksum is the stored header sum plus the total length: check
// it the way a receiver does (the header sums to 0xFFFF) over headers
// whose sums sit anywhere in 16 bits, so that the end-around carry of the
// added length happens.
TEST(NetHeaderTemplateTest, Ipv4ChecksumCarries) {
  int carried = 0;
  for (uint32_t id = 0; id <= 0xFFFF; id += 97) {
    NetHeaders net = TestNet(false, false);
    net.ip_id = static_cast<uint16_t>(id);
    const NetHeaderTemplate t(net);
    for (size_t len : {0, 1000, 60000}) {
      const std::vector<uint8_t> frame = Build(t, net, len, 1);
      const std::span<const uint8_t> ip(frame.data() + kEthHeaderLen,
                                        kIpv4HeaderLen);
      ASSERT_EQ(OnesComplementSum(ip, 0), 0xFFFF) << "id " << id;
      std::vector<uint8_t> zeroed(ip.begin(), ip.end());
      zeroed[2] = zeroed[3] = zeroed[10] = zeroed[11] = 0;
      const uint32_t total = uint32_t{ip[2]} << 8 | ip[3];
      if (OnesComplementSum(zeroed, 0) + total > 0xFFFF) ++carried;
    }
  }
  EXPECT_GT(carried, 100);
}

}  // namespace
}  // namespace rocemu::protocol
