// What an RNIC must do to a frame besides moving it through the PMD, for
// rocemu-bench-pktio's --work rnic (the bound scripts/bench_perf.sh judges
// goodput against). The sender writes a real RoCEv2 RDMA WRITE frame: the
// headers from a path template, as a connected QP does, the payload copied
// out of a large "memory region" it walks through, and the ICRC. The
// receiver checks the ICRC and copies the payload into a region of its own.
// Nothing else an RNIC does (parsing beyond the opcode, keys, PSNs, ACKs,
// completions) is here.
#ifndef ROCEMU_EMULATOR_PORT_BENCH_RNIC_WORK_H_
#define ROCEMU_EMULATOR_PORT_BENCH_RNIC_WORK_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "protocol/ethernet.h"
#include "protocol/frame.h"
#include "protocol/net_header_template.h"

namespace rocemu::emulator {

class RnicFrameWork {
 public:
  // Frames of `frame_size` bytes (without FCS) over IPv4: RDMA WRITE ONLY
  // (with a RETH) or, with `middle`, WRITE MIDDLE. Each side's region is
  // `mr_bytes` of malloc'd memory, touched here so that no page faults in
  // the measured window; it is walked a payload at a time and wraps.
  static absl::StatusOr<RnicFrameWork> Create(uint32_t frame_size, bool middle,
                                              size_t mr_bytes,
                                              const protocol::MacAddr& src,
                                              const protocol::MacAddr& dst);

  // Sender: one frame into out[0, frame_size). Returns its length.
  size_t Build(std::span<uint8_t> out);

  // Receiver: false (and counted) for a frame that is not a whole IPv4
  // RoCEv2 frame or whose ICRC does not match; nothing of it is placed.
  bool Receive(std::span<const uint8_t> frame);

  size_t payload_len() const { return payload_len_; }
  uint64_t icrc_errors() const { return icrc_errors_; }
  uint64_t malformed() const { return malformed_; }
  uint64_t placed_bytes() const { return placed_bytes_; }

 private:
  RnicFrameWork() = default;
  std::span<uint8_t> NextSlice(size_t len);

  protocol::NetHeaderTemplate net_;
  protocol::TransportHeaders hdr_;
  size_t payload_len_ = 0;
  std::vector<uint8_t> mr_;
  size_t at_ = 0;
  uint64_t icrc_errors_ = 0;
  uint64_t malformed_ = 0;
  uint64_t placed_bytes_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_BENCH_RNIC_WORK_H_
