// One capture file as the daemon writes it: pcapng with each frame's
// direction, packet id, verdict and comment (capture.format: pcapng, the
// default), or classic nanosecond pcap through libpcap (format: pcap),
// which keeps the frames and drops the rest. Both rotate by size and
// reopen on SIGHUP.
#ifndef ROCEMU_EMULATOR_CAPTURE_CAPTURE_WRITER_H_
#define ROCEMU_EMULATOR_CAPTURE_CAPTURE_WRITER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "emulator/capture/pcap_writer.h"
#include "emulator/capture/pcapng_writer.h"

namespace rocemu::emulator {

class CaptureWriter {
 public:
  absl::Status Open(const std::string& path, uint32_t snaplen,
                    uint64_t rotate_bytes, bool pcapng,
                    std::string_view interface_name);
  absl::Status Reopen();
  void Close();
  bool is_open() const { return ng_.is_open() || pcap_.is_open(); }
  // Whether frames carry metadata (pcapng): the caller skips building it
  // otherwise.
  bool pcapng() const { return ng_.is_open(); }
  // `wall_ns`: nanoseconds since the Unix epoch.
  void Write(std::span<const uint8_t> frame, uint64_t wall_ns,
             const capture::FrameMeta& meta) {
    if (ng_.is_open()) {
      ng_.Write(frame, wall_ns, meta);
    } else {
      pcap_.Write(frame, wall_ns);
    }
  }
  uint64_t errors() const { return ng_.errors() + pcap_.errors(); }
  void Flush() {
    ng_.Flush();
    pcap_.Flush();
  }

 private:
  capture::PcapngWriter ng_;
  PcapWriter pcap_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CAPTURE_CAPTURE_WRITER_H_
