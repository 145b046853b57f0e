#include "emulator/replay/pcap_io.h"

#include "absl/strings/str_cat.h"

namespace rocemu::replay {

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

}  // namespace rocemu::replay
