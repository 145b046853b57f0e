// The public captures in ../shared/captures-public (rxe, ConnectX-4 Lx, scapy)
// parse with every ICRC valid and re-encode byte for byte.
#include <pcap/pcap.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/frame.h"

namespace rocemu::protocol {
namespace {

std::vector<std::vector<uint8_t>> ReadPcap(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline(path.c_str(), err);
  EXPECT_NE(p, nullptr) << path << ": " << err;
  std::vector<std::vector<uint8_t>> frames;
  if (p == nullptr) return frames;
  EXPECT_EQ(pcap_datalink(p), DLT_EN10MB);
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(p, &h, &data) == 1) {
    EXPECT_EQ(h->caplen, h->len) << "truncated capture";
    frames.emplace_back(data, data + h->caplen);
  }
  pcap_close(p);
  return frames;
}

std::string CapturesDir() {
  const char* dir = std::getenv("ROCEMU_CAPTURES_DIR");
  return dir != nullptr ? dir : "../shared/captures-public";
}

struct Expect {
  const char* file;
  int roce;
  int arp;
};

TEST(CaptureTest, PublicCapturesParseAndReencode) {
  const Expect files[] = {
      {"montybeatnik-rdma-roce-lab_softroce_read-write-ecn.pcap", 12, 0},
      {"montybeatnik-rdma-roce-lab_softroce_test.pcap", 12, 4},
      {"scapy-uts_connectx4lx_cnp.pcap", 1, 0},
      {"scapy-uts_uc_send_only_example.pcap", 1, 0},
  };
  for (const Expect& e : files) {
    SCOPED_TRACE(e.file);
    const auto frames = ReadPcap(CapturesDir() + "/" + e.file);
    int roce = 0, arp = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      SCOPED_TRACE("frame " + std::to_string(i + 1));
      const std::vector<uint8_t>& f = frames[i];
      ParsedFrame p;
      ASSERT_EQ(ParseFrame(f, &p), ParseError::kOk);
      if (p.kind == FrameKind::kArp) {
        ++arp;
        continue;
      }
      ASSERT_EQ(p.kind, FrameKind::kRoce);
      ++roce;
      std::vector<uint8_t> again(f.size() + 16);
      BuildError err;
      const size_t n =
          BuildRoceFrame(SpecFromParsed(p), p.payload, again, &err);
      ASSERT_EQ(err, BuildError::kOk);
      again.resize(n);
      EXPECT_EQ(again, f);
    }
    EXPECT_EQ(roce, e.roce);
    EXPECT_EQ(arp, e.arp);
  }
}

TEST(CaptureTest, ConnectX4LxCnpFields) {
  const auto frames =
      ReadPcap(CapturesDir() + "/scapy-uts_connectx4lx_cnp.pcap");
  ASSERT_EQ(frames.size(), 1u);
  ParsedFrame p;
  ASSERT_EQ(ParseFrame(frames[0], &p), ParseError::kOk);
  EXPECT_EQ(p.hdr.bth.opcode, kCnp);
  EXPECT_TRUE(p.hdr.bth.becn);
  EXPECT_EQ(p.hdr.bth.pkey, 0xFFFF);
  EXPECT_EQ(p.hdr.bth.dest_qp, 0x118u);
  EXPECT_EQ(p.net.dscp, 48);
  EXPECT_EQ(p.net.ecn, 2);
  EXPECT_EQ(p.net.udp_src_port, 0);
  EXPECT_EQ(p.icrc, 0x2a00fd82u);  // bytes 82 fd 00 2a
  // BuildCnp produces the same bytes from the same net headers.
  std::vector<uint8_t> out(frames[0].size());
  EXPECT_EQ(BuildCnp(p.net, 0x118, 0xFFFF, out), out.size());
  EXPECT_EQ(out, frames[0]);
}

}  // namespace
}  // namespace rocemu::protocol
