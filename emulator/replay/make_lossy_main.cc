// replay-make-lossy: writes the input of the captures/replay/rc_lossy case,
// the frames an RC requester (10.0.0.2, QPN 0x2a) sends to the RNIC under
// test (10.0.0.1, QPN 0x11) over a lossy, reordering link: a lost WRITE
// packet and the go-back-N retransmission after the RNIC's sequence NAK, a
// duplicate READ request (its response was lost), a duplicate SEND, an
// atomic overtaken by the WRITE before it and then repeated, a frame with a
// corrupted ICRC and one frame for another host. Built with the protocol
// builder so every other frame is valid; the timestamps are fixed, so the
// file is the same on every run.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "emulator/replay/pcap_io.h"
#include "protocol/frame.h"

ABSL_FLAG(std::string, out, "", "the pcap to write");

namespace rocemu::replay {
namespace {

using protocol::FrameSpec;

constexpr uint32_t kRnicQpn = 0x11;
constexpr uint32_t kRkey = 0x1a7;
constexpr uint64_t kVa = 0x7f3a00001000;
constexpr uint64_t kT0 = 1'700'000'000'000'000'000;  // 2023-11-14, in ns

class Gen {
 public:
  explicit Gen(PcapFileWriter* out) : out_(out) {}

  // One frame `us` microseconds after t0. `payload_len` bytes of a pattern
  // seeded by the PSN, so each packet's payload is recognisable.
  void Frame(uint64_t us, uint8_t opcode, uint32_t psn, bool ack_req,
             size_t payload_len, const protocol::TransportHeaders& ext = {},
             bool corrupt = false, bool other_host = false) {
    FrameSpec spec;
    spec.net.src_mac = {0x02, 0, 0, 0, 0, 0x02};
    const uint8_t host = other_host ? 3 : 1;
    spec.net.dst_mac = {0x02, 0, 0, 0, 0, host};
    spec.net.src_ip = protocol::Ipv4Mapped(10, 0, 0, 2);
    spec.net.dst_ip = protocol::Ipv4Mapped(10, 0, 0, host);
    spec.net.dscp = 26;
    spec.net.ecn = 0b10;
    spec.net.udp_src_port = 0xC0DE;
    spec.net.ip_id = static_cast<uint16_t>(ip_id_++);
    spec.hdr = ext;
    spec.hdr.bth.opcode = opcode;
    spec.hdr.bth.dest_qp = kRnicQpn;
    spec.hdr.bth.psn = psn;
    spec.hdr.bth.ack_req = ack_req;
    std::vector<uint8_t> payload(payload_len);
    for (size_t i = 0; i < payload_len; ++i) {
      payload[i] = static_cast<uint8_t>(psn * 31 + i);
    }
    std::vector<uint8_t> buf(9216);
    protocol::BuildError err;
    const size_t n = protocol::BuildRoceFrame(spec, payload, buf, &err);
    if (n == 0) {
      std::fprintf(stderr, "replay-make-lossy: build failed for PSN 0x%x\n",
                   psn);
      std::exit(1);
    }
    buf.resize(n);
    if (corrupt) buf[n - 1] ^= 0x5A;  // the ICRC's last byte
    out_->Write(buf, kT0 + us * 1000);
  }

  static protocol::TransportHeaders Reth(uint64_t offset, uint32_t len) {
    protocol::TransportHeaders h;
    h.reth = {kVa + offset, kRkey, len};
    return h;
  }

 private:
  PcapFileWriter* out_;
  uint32_t ip_id_ = 1;
};

int Main(const std::string& path) {
  PcapFileWriter out;
  if (absl::Status s = out.Open(path, PcapPrecision::kNano); !s.ok()) {
    std::fprintf(stderr, "replay-make-lossy: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  using namespace protocol;  // NOLINT: opcode names
  Gen g(&out);
  // A 3000-byte WRITE at offset 0 in three packets; the LAST is lost.
  g.Frame(10, kRcRdmaWriteFirst, 0x100, false, 1024, Gen::Reth(0, 3000));
  g.Frame(11, kRcRdmaWriteMiddle, 0x101, false, 1024);
  // 0x102 WRITE_LAST lost. The next SEND is out of sequence: one NAK.
  g.Frame(12, kRcSendOnly, 0x103, true, 100);
  // A READ behind the gap: dropped without a second NAK.
  g.Frame(13, kRcRdmaReadRequest, 0x104, true, 0, Gen::Reth(4096, 2048));
  // A frame on the link for another host: not the RNIC's.
  g.Frame(14, kRcSendOnly, 0x500, true, 16, {}, false, /*other_host=*/true);
  // Go-back-N from 0x102 after the NAK.
  g.Frame(40, kRcRdmaWriteLast, 0x102, true, 3000 - 2048);
  g.Frame(41, kRcSendOnly, 0x103, true, 100);
  g.Frame(42, kRcRdmaReadRequest, 0x104, true, 0, Gen::Reth(4096, 2048));
  // The READ responses were lost on the way back: the requester times out
  // and asks again; the RNIC re-executes the READ.
  g.Frame(600, kRcRdmaReadRequest, 0x104, true, 0, Gen::Reth(4096, 2048));
  // A duplicate SEND (its ACK was lost): ACKed again, not delivered twice.
  g.Frame(601, kRcSendOnly, 0x103, true, 100);
  // FETCH_ADD 0x107 overtakes WRITE_ONLY 0x106 (reordering): NAK 0x106.
  protocol::TransportHeaders fa;
  fa.atomic = {kVa + 8192, kRkey, 5, 0};
  g.Frame(700, kRcFetchAdd, 0x107, true, 0, fa);
  g.Frame(701, kRcRdmaWriteOnly, 0x106, true, 64, Gen::Reth(12288, 64));
  g.Frame(702, kRcFetchAdd, 0x107, true, 0, fa);
  // The atomic again (its ACK was lost): answered from the responder
  // resource, the memory is added to once.
  g.Frame(900, kRcFetchAdd, 0x107, true, 0, fa);
  // A SEND with a corrupted ICRC is dropped and counted; the good copy
  // follows.
  protocol::TransportHeaders imm;
  imm.imm = 0xC0FFEE01;
  g.Frame(1000, kRcSendOnlyWithImmediate, 0x108, true, 200, imm,
          /*corrupt=*/true);
  g.Frame(1001, kRcSendOnlyWithImmediate, 0x108, true, 200, imm);
  if (absl::Status s = out.Close(); !s.ok()) {
    std::fprintf(stderr, "replay-make-lossy: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace rocemu::replay

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::fprintf(stderr, "usage: replay-make-lossy --out FILE.pcap\n");
    return 2;
  }
  return rocemu::replay::Main(out);
}
