// Writes Ethernet frames to a classic pcap file through libpcap, with
// microsecond timestamps (what every reader takes) or nanosecond ones (the
// replay's virtual clock, to the nanosecond).
#ifndef ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_
#define ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_

#include <pcap/pcap.h>

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"

namespace rocemu::tools {

enum class PcapPrecision { kMicro, kNano };

class PcapFileWriter {
 public:
  PcapFileWriter() = default;
  PcapFileWriter(const PcapFileWriter&) = delete;
  PcapFileWriter& operator=(const PcapFileWriter&) = delete;
  ~PcapFileWriter();

  absl::Status Open(const std::string& path,
                    PcapPrecision precision = PcapPrecision::kMicro);
  // `time_ns`: nanoseconds since the epoch (a microsecond file keeps the
  // microseconds).
  void Write(std::span<const uint8_t> frame, uint64_t time_ns);
  // Flushes and closes; a write that failed on the way is reported here.
  absl::Status Close();

 private:
  pcap_t* pcap_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
  PcapPrecision precision_ = PcapPrecision::kMicro;
  std::string path_;
};

}  // namespace rocemu::tools

#endif  // ROCEMU_EMULATOR_TOOLS_PCAP_FILE_WRITER_H_
