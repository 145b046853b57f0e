// A pcapng writer (draft-ietf-opsawg-pcapng) that carries what the RNIC
// knows about each frame: direction and packet id (epb_flags,
// epb_packetid), a verdict (epb_verdict, hardware type: the DropReason
// code, nic/drop_reason.h) and a comment in words (opt_comment). libpcap
// writes no pcapng and DPDK 22.11's rte_pcapng no comments or verdicts, so
// this one is ours: one section, one Ethernet interface with nanosecond
// timestamps, one Enhanced Packet Block per frame, little-endian. Buffered
// stdio: no syscall per frame. Rotation as PcapWriter does it: past
// `rotate_bytes` the file becomes <path>.1, .2, ... and a new <path> is
// started (each file a complete section). No DPDK here: the daemon, the
// replay and the tests share it.
#ifndef ROCEMU_EMULATOR_CAPTURE_PCAPNG_WRITER_H_
#define ROCEMU_EMULATOR_CAPTURE_PCAPNG_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace rocemu::capture {

// epb_flags bits 0-1 (the draft numbers bits from the least significant:
// inbound is the value 1, outbound 2; Wireshark's
// frame.packet_flags_direction shows them so).
enum class Direction : uint8_t { kUnknown = 0, kInbound = 1, kOutbound = 2 };

struct FrameMeta {
  Direction direction = Direction::kUnknown;
  uint64_t packet_id = 0;    // 0: no epb_packetid
  uint16_t verdict = 0;      // 0: no epb_verdict; else the hardware verdict
  std::string_view comment;  // empty: no opt_comment
};

// The epb_verdict value of a hardware verdict `code`: the type octet 0
// and the code as two big-endian octets (frame.verdict.hw == 00:0c).
inline constexpr size_t kVerdictBytes = 3;

class PcapngWriter {
 public:
  PcapngWriter() = default;
  ~PcapngWriter() { (void)Close(); }
  PcapngWriter(const PcapngWriter&) = delete;
  PcapngWriter& operator=(const PcapngWriter&) = delete;

  // `interface_name` goes into the interface's if_name (e.g. the port).
  absl::Status Open(const std::string& path, uint32_t snaplen,
                    uint64_t rotate_bytes = 0,
                    std::string_view interface_name = {});
  // A capture in memory: Close() leaves the file's bytes in *sink (a
  // flight recorder's dump sent over the control socket).
  absl::Status OpenMemory(std::string* sink, uint32_t snaplen = 65535,
                          std::string_view interface_name = {});
  // SIGHUP: as PcapWriter::Reopen.
  absl::Status Reopen();
  // Flushes and closes; a write that failed on the way is reported.
  absl::Status Close();
  // Hands what is buffered to the kernel, so that a reader of the file
  // (tshark -r while the daemon runs) sees whole blocks.
  void Flush() {
    if (file_ != nullptr && std::fflush(file_) != 0) ++errors_;
  }
  bool is_open() const { return file_ != nullptr; }

  // `time_ns`: nanoseconds since the epoch (or virtual time). `orig_len`:
  // the frame's length on the wire when `frame` is a truncated copy (0:
  // frame.size()). Frames above the snap length are truncated. Write
  // errors and rotation failures are counted, never fatal.
  void Write(std::span<const uint8_t> frame, uint64_t time_ns,
             const FrameMeta& meta = {}, uint32_t orig_len = 0);

  const std::string& path() const { return path_; }
  uint64_t frames() const { return frames_; }
  uint32_t rotations() const { return rotations_; }
  uint64_t errors() const { return errors_; }

 private:
  absl::Status OpenFile();
  void WriteHeaders();
  void Rotate();
  void Put(const void* p, size_t n);

  std::string path_;
  std::string interface_;
  uint32_t snaplen_ = 65535;
  uint64_t rotate_bytes_ = 0;
  std::FILE* file_ = nullptr;
  // OpenMemory: open_memstream's buffer, copied to *sink_ on Close.
  std::string* sink_ = nullptr;
  char* mem_ = nullptr;
  size_t mem_size_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t frames_ = 0;
  uint32_t rotations_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace rocemu::capture

#endif  // ROCEMU_EMULATOR_CAPTURE_PCAPNG_WRITER_H_
