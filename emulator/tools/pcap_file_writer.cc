#include "emulator/tools/pcap_file_writer.h"

#include "absl/strings/str_cat.h"

namespace rocemu::tools {
namespace {

constexpr int kSnapLen = 65535;

}  // namespace

PcapFileWriter::~PcapFileWriter() { (void)Close(); }

absl::Status PcapFileWriter::Open(const std::string& path,
                                  PcapPrecision precision) {
  pcap_ = pcap_open_dead_with_tstamp_precision(
      DLT_EN10MB, kSnapLen,
      precision == PcapPrecision::kNano ? PCAP_TSTAMP_PRECISION_NANO
                                        : PCAP_TSTAMP_PRECISION_MICRO);
  if (pcap_ == nullptr) return absl::InternalError("pcap_open_dead failed");
  dumper_ = pcap_dump_open(pcap_, path.c_str());
  if (dumper_ == nullptr) {
    absl::Status s = absl::PermissionDeniedError(
        absl::StrCat("cannot write ", path, ": ", pcap_geterr(pcap_)));
    pcap_close(pcap_);
    pcap_ = nullptr;
    return s;
  }
  precision_ = precision;
  path_ = path;
  return absl::OkStatus();
}

void PcapFileWriter::Write(std::span<const uint8_t> frame, uint64_t time_ns) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(time_ns / 1'000'000'000);
  const uint64_t sub = time_ns % 1'000'000'000;
  // pcap_dump writes the field as it is; the file's header says its unit.
  hdr.ts.tv_usec = static_cast<suseconds_t>(
      precision_ == PcapPrecision::kNano ? sub : sub / 1000);
  hdr.caplen = static_cast<bpf_u_int32>(frame.size());
  hdr.len = hdr.caplen;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
}

absl::Status PcapFileWriter::Close() {
  absl::Status s;
  if (dumper_ != nullptr) {
    if (pcap_dump_flush(dumper_) != 0) {
      s = absl::DataLossError(absl::StrCat(path_, ": write failed"));
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
