// Writes frames to a pcap file with nanosecond timestamps (libpcap), rotating
// by size: when a file passes the limit it is renamed <path>.1, .2, ... and a
// new <path> is started. Reopen() (SIGHUP) starts a new file: one that
// external rotation moved away is left alone, one still in place is kept as
// the next <path>.N.
#ifndef ROCEMU_EMULATOR_CAPTURE_PCAP_WRITER_H_
#define ROCEMU_EMULATOR_CAPTURE_PCAP_WRITER_H_

#include <pcap/pcap.h>

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace rocemu::emulator {

class PcapWriter {
 public:
  PcapWriter() = default;
  ~PcapWriter() { Close(); }
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  absl::Status Open(const std::string& path, uint32_t snaplen,
                    uint64_t rotate_bytes);
  absl::Status Reopen();
  void Close();
  bool is_open() const { return dumper_ != nullptr; }
  // Hands what is buffered to the kernel (readers see whole records).
  void Flush() {
    if (dumper_ != nullptr && pcap_dump_flush(dumper_) != 0) ++errors_;
  }

  // `wall_ns` is nanoseconds since the Unix epoch. Rotation errors close the
  // writer and are counted; the data path never fails.
  void Write(std::span<const uint8_t> frame, uint64_t wall_ns);

  const std::string& path() const { return path_; }
  uint64_t frames() const { return frames_; }
  uint32_t rotations() const { return rotations_; }
  uint64_t errors() const { return errors_; }

 private:
  absl::Status OpenFile();
  void Rotate();

  std::string path_;
  uint32_t snaplen_ = 65535;
  uint64_t rotate_bytes_ = 0;
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
  uint64_t file_bytes_ = 0;
  uint64_t frames_ = 0;
  uint32_t rotations_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CAPTURE_PCAP_WRITER_H_
