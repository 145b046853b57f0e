// A replay case: the RNIC under test (addresses, P_Keys), its PDs, MRs,
// CQs and QPs as the capture's peer saw them (QPNs, R_Keys, VAs, PSNs), the
// work requests posted before the first frame, and which frames of the input
// pcap are received by the RNIC. Loaded from YAML with strict validation:
// every error is one line "FILE:LINE:COL: KEY: problem".
#ifndef ROCEMU_EMULATOR_REPLAY_REPLAY_CASE_H_
#define ROCEMU_EMULATOR_REPLAY_REPLAY_CASE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nic/access.h"
#include "nic/clock.h"
#include "nic/qp_attr.h"
#include "nic/work_request.h"
#include "protocol/frame.h"

namespace rocemu::replay {

// Initial content of a memory region.
enum class FillPattern : uint8_t {
  kZero,  // all 0 (what a fresh calloc'd buffer holds)
  kByte,  // every byte fill_byte
  kRamp,  // byte i is (i + fill_byte) & 0xFF
  kText,  // fill_text's bytes from offset 0, zeros after
};

struct MrSpec {
  std::string name;
  std::string pd;
  uint64_t va = 0;  // the I/O virtual address peers use (RETH VA)
  uint64_t length = 0;
  uint32_t rkey = 0;  // as seen in the capture; 0: whatever the RNIC gives
  nic::AccessFlags access = 0;
  FillPattern fill = FillPattern::kZero;
  uint8_t fill_byte = 0;
  std::string fill_text;
};

struct CqSpec {
  std::string name;
  uint32_t cqe = 256;
};

// One scatter entry: `length` bytes at `offset` into MR `mr`.
struct SgeSpec {
  std::string mr;
  uint64_t offset = 0;
  uint32_t length = 0;
};

struct RecvSpec {
  uint64_t wr_id = 0;
  std::vector<SgeSpec> sges;
};

struct SendSpec {
  uint64_t wr_id = 0;
  nic::WrOpcode opcode = nic::WrOpcode::kSend;
  bool signaled = true;
  bool solicited = false;
  std::vector<SgeSpec> sges;
  uint32_t imm_data = 0;
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  // Posted once the case has seen this many completions (all CQs, in
  // order): an application's "post the READ when the peer's SEND has
  // arrived". 0: posted at set-up.
  uint32_t after_completions = 0;
};

struct QpSpec {
  uint32_t qpn = 0;
  nic::QpType type = nic::QpType::kRc;
  std::string pd;
  std::string send_cq;
  std::string recv_cq;
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  nic::AccessFlags access = 0;  // remote rights granted by the QP
  uint16_t pkey_index = 0;
  uint32_t qkey = 0;  // UD
  // kInit: the QP waits for the Communication Manager (a `cm` listener
  // accepting on it) to take it to RTR and RTS.
  nic::QpState state = nic::QpState::kRts;
  nic::PathMtu path_mtu = nic::PathMtu::kMtu1024;
  uint32_t dest_qpn = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  protocol::MacAddr remote_mac{};
  protocol::IpAddr remote_ip{};
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint8_t max_rd_atomic = 16;
  uint8_t max_dest_rd_atomic = 16;
  uint8_t min_rnr_timer = 12;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  std::vector<RecvSpec> recvs;
  std::vector<SendSpec> sends;
};

// Which input frames the RNIC receives.
enum class Select : uint8_t {
  kDstIp,   // IP frames to the RNIC's address (others skipped)
  kDstMac,  // frames to the RNIC's MAC (or broadcast)
  kAll,     // every frame
};

// A listener of the RNIC's Communication Manager that accepts every
// connection request for `service_id` on QP `qpn` (the CM drives the QP),
// with these REP parameters.
struct CmListenSpec {
  uint64_t service_id = 0;
  uint32_t qpn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t rnr_retry_count = 7;
};

struct ReplayCase {
  std::string path;  // of the case file; the input pcap is relative to it
  std::string name;
  std::string description;
  // The RNIC.
  protocol::MacAddr mac{};
  protocol::IpAddr ip{};
  uint32_t active_mtu = 1024;
  std::vector<uint16_t> pkeys;  // table entries from index 0; empty: 0xFFFF
  std::vector<std::string> pds;
  std::vector<MrSpec> mrs;
  std::vector<CqSpec> cqs;
  std::vector<QpSpec> qps;
  std::vector<CmListenSpec> cm_listens;
  // Input.
  std::string input_pcap;  // resolved against the case file's directory
  Select select = Select::kDstIp;
  std::vector<uint32_t> frames;  // 1-based input frame numbers; empty: all
  // After the last input frame the RNIC runs until it is quiet, at most this
  // much virtual time (timers: retransmission, RNR wait).
  nic::TimeNs settle_ns = 1'000'000'000;
  // Output bound: a case that makes more frames than this fails.
  uint32_t max_output_frames = 100'000;
};

// Reads and validates a case file. InvalidArgument with one line
// "FILE:LINE:COL: KEY: problem" for any problem; NotFound for an unreadable
// file.
absl::StatusOr<ReplayCase> LoadReplayCase(const std::string& path);
// Same, from text (`source` names it in errors; the input pcap is resolved
// against `base_dir`).
absl::StatusOr<ReplayCase> ParseReplayCase(const std::string& text,
                                           const std::string& source,
                                           const std::string& base_dir);

}  // namespace rocemu::replay

#endif  // ROCEMU_EMULATOR_REPLAY_REPLAY_CASE_H_
