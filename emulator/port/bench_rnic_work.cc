#include "emulator/port/bench_rnic_work.h"

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "protocol/icrc.h"
#include "protocol/opcode.h"
#include "protocol/wire.h"

namespace rocemu::emulator {

namespace p = rocemu::protocol;

namespace {

// Eth + IPv4 + UDP, the only headers the bench frames carry below the BTH.
constexpr size_t kNetLen =
    p::kEthHeaderLen + p::kIpv4HeaderLen + p::kUdpHeaderLen;
constexpr uint8_t kIpProtoUdp = 17;

}  // namespace

absl::StatusOr<RnicFrameWork> RnicFrameWork::Create(uint32_t frame_size,
                                                    bool middle,
                                                    size_t mr_bytes,
                                                    const p::MacAddr& src,
                                                    const p::MacAddr& dst) {
  const uint8_t opcode = middle ? p::kRcRdmaWriteMiddle : p::kRcRdmaWriteOnly;
  const size_t fixed =
      kNetLen + p::GetOpcodeInfo(opcode).header_len + p::kIcrcLen;
  // A payload is padded to 4 bytes, so only such frame sizes are exact.
  if (frame_size < fixed || (frame_size - fixed) % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", middle ? "WRITE MIDDLE" : "WRITE ONLY", " frame has ", fixed,
        " bytes of headers and ICRC and a payload of a multiple of 4 bytes; ",
        frame_size, " does not fit"));
  }
  RnicFrameWork w;
  w.payload_len_ = frame_size - fixed;
  if (mr_bytes < w.payload_len_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the region (", mr_bytes, " bytes) is smaller than a payload"));
  }
  p::NetHeaders net;
  net.src_mac = src;
  net.dst_mac = dst;
  net.src_ip = p::Ipv4Mapped(10, 37, 0, 1);
  net.dst_ip = p::Ipv4Mapped(10, 37, 0, 2);
  w.net_ = p::NetHeaderTemplate(net);
  w.hdr_.bth.opcode = opcode;
  w.hdr_.bth.dest_qp = 0x11;
  w.hdr_.reth = {.va = 0, .rkey = 0x100, .dma_len = 0};
  // Filled with a pattern rather than left zero: every page is resident
  // before the window opens, and the CRC does not see a run of zeros.
  w.mr_.resize(mr_bytes);
  for (size_t i = 0; i < mr_bytes; i += 64) {
    w.mr_[i] = static_cast<uint8_t>(i >> 6);
  }
  return w;
}

std::span<uint8_t> RnicFrameWork::NextSlice(size_t len) {
  if (at_ + len > mr_.size()) at_ = 0;
  const std::span<uint8_t> s(mr_.data() + at_, len);
  at_ += len;
  return s;
}

size_t RnicFrameWork::Build(std::span<uint8_t> out) {
  hdr_.bth.psn = (hdr_.bth.psn + 1) & p::kPsnMask;
  const std::span<uint8_t> src = NextSlice(payload_len_);
  hdr_.reth.va = static_cast<uint64_t>(src.data() - mr_.data());
  hdr_.reth.dma_len = static_cast<uint32_t>(payload_len_);
  p::RoceFrameWriter writer;
  if (writer.Begin(net_, hdr_, payload_len_, out) != p::BuildError::kOk) {
    return 0;
  }
  std::memcpy(writer.payload().data(), src.data(), payload_len_);
  return writer.Finish();
}

bool RnicFrameWork::Receive(std::span<const uint8_t> frame) {
  const uint8_t* f = frame.data();
  if (frame.size() < kNetLen + p::kBthLen + p::kIcrcLen ||
      p::LoadBe16(f + 12) != p::kEtherTypeIpv4 ||
      f[p::kEthHeaderLen + 9] != kIpProtoUdp) {
    ++malformed_;
    return false;
  }
  const uint8_t* bth = f + kNetLen;
  const p::OpcodeInfo& info = p::GetOpcodeInfo(bth[0]);
  const size_t pad = (bth[1] >> 4) & 3;
  const size_t offset = kNetLen + info.header_len;
  if (!info.defined || frame.size() < offset + pad + p::kIcrcLen) {
    ++malformed_;
    return false;
  }
  // The whole frame is checked before a byte of it is placed: a RETH
  // corrupted on the wire can still pass the R_Key and bounds checks and
  // would then write somewhere else, so the receiver cannot fold the ICRC
  // into the copy as the sender may (protocol/icrc_copy.h).
  if (!p::VerifyIcrc(frame.subspan(p::kEthHeaderLen), /*ipv6=*/false)) {
    ++icrc_errors_;
    return false;
  }
  const size_t len = frame.size() - offset - pad - p::kIcrcLen;
  if (len > mr_.size()) {
    ++malformed_;
    return false;
  }
  std::memcpy(NextSlice(len).data(), f + offset, len);
  placed_bytes_ += len;
  return true;
}

}  // namespace rocemu::emulator
