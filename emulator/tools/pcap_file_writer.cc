#include "emulator/tools/pcap_file_writer.h"

#include "absl/strings/str_cat.h"

namespace rocemu::tools {

PcapFileWriter::~PcapFileWriter() { (void)Close(); }

absl::Status PcapFileWriter::Open(const std::string& path) {
  pcap_ = pcap_open_dead(DLT_EN10MB, 65535);
  if (pcap_ == nullptr) return absl::InternalError("pcap_open_dead failed");
  dumper_ = pcap_dump_open(pcap_, path.c_str());
  if (dumper_ == nullptr) {
    absl::Status s = absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", pcap_geterr(pcap_)));
    pcap_close(pcap_);
    pcap_ = nullptr;
    return s;
  }
  return absl::OkStatus();
}

void PcapFileWriter::Write(std::span<const uint8_t> frame, uint64_t usec) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(usec / 1000000);
  hdr.ts.tv_usec = static_cast<suseconds_t>(usec % 1000000);
  hdr.caplen = static_cast<bpf_u_int32>(frame.size());
  hdr.len = hdr.caplen;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
}

absl::Status PcapFileWriter::Close() {
  absl::Status s;
  if (dumper_ != nullptr) {
    if (pcap_dump_flush(dumper_) != 0) {
      s = absl::InternalError("pcap_dump_flush failed");
    }
    pcap_dump_close(dumper_);
    dumper_ = nullptr;
  }
  if (pcap_ != nullptr) {
    pcap_close(pcap_);
    pcap_ = nullptr;
  }
  return s;
}

}  // namespace rocemu::tools
