#include "emulator/replay/pcap_io.h"

#include "absl/strings/str_cat.h"

namespace rocemu::replay {

namespace {
constexpr int kSnapLen = 65535;
}  // namespace

PcapReader::~PcapReader() {
  if (pcap_ != nullptr) pcap_close(pcap_);
}

absl::Status PcapReader::Open(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_ = pcap_open_offline_with_tstamp_precision(
      path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (pcap_ == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": ", err));
  }
  if (pcap_datalink(pcap_) != DLT_EN10MB) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not an Ethernet capture (link type ",
                     pcap_datalink(pcap_), ")"));
  }
  path_ = path;
  return absl::OkStatus();
}

bool PcapReader::Next(PcapFrame* out, absl::Status* error) {
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  const int r = pcap_next_ex(pcap_, &hdr, &data);
  if (r == 1) {
    out->bytes = {data, hdr->caplen};
    out->orig_len = hdr->len;
    // With nanosecond precision requested, tv_usec holds nanoseconds.
    out->time_ns = static_cast<uint64_t>(hdr->ts.tv_sec) * 1'000'000'000 +
                   static_cast<uint64_t>(hdr->ts.tv_usec);
    return true;
  }
  if (r == PCAP_ERROR) {
    *error = absl::DataLossError(absl::StrCat(path_, ": ", pcap_geterr(pcap_)));
  }
  return false;
}

PcapNsWriter::~PcapNsWriter() { (void)Close(); }

absl::Status PcapNsWriter::Open(const std::string& path) {
  pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kSnapLen,
                                               PCAP_TSTAMP_PRECISION_NANO);
  if (pcap_ == nullptr) return absl::InternalError("pcap_open_dead failed");
  dumper_ = pcap_dump_open(pcap_, path.c_str());
  if (dumper_ == nullptr) {
    absl::Status s = absl::PermissionDeniedError(
        absl::StrCat(path, ": ", pcap_geterr(pcap_)));
    pcap_close(pcap_);
    pcap_ = nullptr;
    return s;
  }
  path_ = path;
  return absl::OkStatus();
}

void PcapNsWriter::Write(std::span<const uint8_t> frame, uint64_t time_ns) {
  pcap_pkthdr hdr = {};
  hdr.ts.tv_sec = static_cast<time_t>(time_ns / 1'000'000'000);
  hdr.ts.tv_usec = static_cast<suseconds_t>(time_ns % 1'000'000'000);
  hdr.caplen = static_cast<uint32_t>(frame.size());
  hdr.len = hdr.caplen;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
}

absl::Status PcapNsWriter::Close() {
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

}  // namespace rocemu::replay
