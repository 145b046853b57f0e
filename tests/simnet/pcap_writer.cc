#include "tests/simnet/pcap_writer.h"

#include <pcap/pcap.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rocemu::simnet {

absl::StatusOr<std::unique_ptr<PcapWriter>> PcapWriter::Open(
    const std::string& path, uint32_t snaplen) {
  pcap_t* pcap = pcap_open_dead_with_tstamp_precision(
      DLT_EN10MB, static_cast<int>(snaplen), PCAP_TSTAMP_PRECISION_NANO);
  if (pcap == nullptr) return absl::InternalError("pcap_open_dead failed");
  pcap_dumper_t* dumper = pcap_dump_open(pcap, path.c_str());
  if (dumper == nullptr) {
    absl::Status status = absl::UnavailableError(
        absl::StrCat("pcap_dump_open(", path, "): ", pcap_geterr(pcap)));
    pcap_close(pcap);
    return status;
  }
  return std::unique_ptr<PcapWriter>(new PcapWriter(pcap, dumper, snaplen));
}

PcapWriter::~PcapWriter() {
  pcap_dump_close(dumper_);
  pcap_close(pcap_);
}

void PcapWriter::Write(nic::TimeNs t, std::span<const uint8_t> frame) {
  pcap_pkthdr hdr{};
  // With nanosecond precision libpcap stores nanoseconds in tv_usec.
  hdr.ts.tv_sec = static_cast<time_t>(t / 1000000000u);
  hdr.ts.tv_usec = static_cast<suseconds_t>(t % 1000000000u);
  hdr.len = static_cast<bpf_u_int32>(frame.size());
  hdr.caplen = std::min<bpf_u_int32>(hdr.len, snaplen_);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
  ++frames_;
}

void PcapWriter::Flush() { pcap_dump_flush(dumper_); }

}  // namespace rocemu::simnet
