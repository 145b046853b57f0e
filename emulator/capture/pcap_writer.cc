#include "emulator/capture/pcap_writer.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace rocemu::emulator {

absl::Status PcapWriter::Open(const std::string& path, uint32_t snaplen,
                              uint64_t rotate_bytes) {
  Close();
  path_ = path;
  snaplen_ = snaplen;
  rotate_bytes_ = rotate_bytes;
  return OpenFile();
}

absl::Status PcapWriter::OpenFile() {
  if (dead_ == nullptr) {
    dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, snaplen_,
                                                 PCAP_TSTAMP_PRECISION_NANO);
    if (dead_ == nullptr) return absl::InternalError("pcap_open_dead failed");
  }
  dumper_ = pcap_dump_open(dead_, path_.c_str());
  if (dumper_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot write capture ", path_, ": ", pcap_geterr(dead_)));
  }
  file_bytes_ = 24;  // pcap file header
  return absl::OkStatus();
}

absl::Status PcapWriter::Reopen() {
  if (dumper_ == nullptr) return absl::OkStatus();
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  // If nobody moved the file away, keep it as the next rotation rather
  // than truncating it.
  if (access(path_.c_str(), F_OK) == 0) {
    ++rotations_;
    std::string rotated = absl::StrCat(path_, ".", rotations_);
    if (std::rename(path_.c_str(), rotated.c_str()) != 0) ++errors_;
  }
  return OpenFile();
}

void PcapWriter::Close() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);
  if (dead_ != nullptr) pcap_close(dead_);
  dumper_ = nullptr;
  dead_ = nullptr;
}

void PcapWriter::Rotate() {
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  ++rotations_;
  std::string rotated = absl::StrCat(path_, ".", rotations_);
  if (std::rename(path_.c_str(), rotated.c_str()) != 0 || !OpenFile().ok()) {
    ++errors_;
  }
}

void PcapWriter::Write(std::span<const uint8_t> frame, uint64_t wall_ns) {
  if (dumper_ == nullptr) return;
  pcap_pkthdr hdr;
  hdr.ts.tv_sec = static_cast<time_t>(wall_ns / 1'000'000'000);
  // With nanosecond precision libpcap stores tv_usec as nanoseconds.
  hdr.ts.tv_usec = static_cast<suseconds_t>(wall_ns % 1'000'000'000);
  hdr.len = static_cast<bpf_u_int32>(frame.size());
  hdr.caplen = static_cast<bpf_u_int32>(frame.size() < snaplen_ ? frame.size()
                                                                : snaplen_);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
  ++frames_;
  file_bytes_ += 16 + hdr.caplen;
  if (rotate_bytes_ != 0 && file_bytes_ >= rotate_bytes_) Rotate();
}

}  // namespace rocemu::emulator
