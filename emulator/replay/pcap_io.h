// Nanosecond pcap files through libpcap: a reader that hands out each frame
// with its capture time in nanoseconds (microsecond files are scaled by
// libpcap); the writer is tools::PcapFileWriter opened with
// PcapPrecision::kNano, whose timestamps are the virtual clock's.
#ifndef ROCEMU_EMULATOR_REPLAY_PCAP_IO_H_
#define ROCEMU_EMULATOR_REPLAY_PCAP_IO_H_

#include <pcap/pcap.h>

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "emulator/tools/pcap_file_writer.h"

namespace rocemu::replay {

struct PcapFrame {
  std::span<const uint8_t> bytes;  // valid until the next Next()
  uint64_t time_ns = 0;
  uint32_t orig_len = 0;  // > bytes.size() when the capture truncated it
};

class PcapReader {
 public:
  PcapReader() = default;
  PcapReader(const PcapReader&) = delete;
  PcapReader& operator=(const PcapReader&) = delete;
  ~PcapReader();

  // Fails unless the file is a readable Ethernet capture.
  absl::Status Open(const std::string& path);
  // false at the end of the file; *error set on a read error.
  bool Next(PcapFrame* out, absl::Status* error);

 private:
  pcap_t* pcap_ = nullptr;
  std::string path_;
};

// The replay's captures are nanosecond pcap files, one writer for every tool.
using tools::PcapFileWriter;
using tools::PcapPrecision;

}  // namespace rocemu::replay

#endif  // ROCEMU_EMULATOR_REPLAY_PCAP_IO_H_
