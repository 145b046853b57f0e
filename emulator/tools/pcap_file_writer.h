// Writes Ethernet frames to a classic pcap file through libpcap.
#ifndef ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_
#define ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_

#include <pcap/pcap.h>

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace rocemu::tools {

class PcapFileWriter {
 public:
  PcapFileWriter() = default;
  PcapFileWriter(const PcapFileWriter&) = delete;
  PcapFileWriter& operator=(const PcapFileWriter&) = delete;
  ~PcapFileWriter();

  absl::Status Open(const std::string& path);
  // `usec` is the timestamp in microseconds since the epoch.
  void Write(std::span<const uint8_t> frame, uint64_t usec);
  absl::Status Close();

 private:
  pcap_t* pcap_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
};

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_
