// Daemon-side verbs over the control socket, for tests until the
// application library (verbs/) lands: the daemon allocates and registers
// buffers, creates CQs, QPs and AHs, connects QPs (resolving the peer's MAC
// through the port's neighbour cache), posts work requests, polls CQs and
// reads buffers back (hex or CRC-32). Enabled only by control.test_hooks.
// Everything runs on the poll loop's thread between bursts (control path).
//
// Requests are one-line JSON objects: {"cmd":"reg_mr","port":"p0",
// "len":65536,"seed":7} -> {"ok":true,"key":..,"addr":..}. Errors are
// {"error":"..."}; a destination whose MAC is not yet known answers
// {"error":"...","retry":true} after sending an ARP request / neighbour
// solicitation, and the caller asks again. docs/daemon.md lists the
// commands and fields.
#ifndef ROCEMU_EMULATOR_CONTROL_TEST_HOOKS_H_
#define ROCEMU_EMULATOR_CONTROL_TEST_HOOKS_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "emulator/control/control_request.h"
#include "emulator/port/rnic_port.h"

namespace rocemu::emulator {

// The byte at `index` of a buffer filled with seed `seed`: byte (index % 8)
// of splitmix64(seed + index / 8), little-endian. Tests can recompute it.
uint8_t PatternByte(uint64_t seed, uint64_t index);
void FillPattern(uint64_t seed, uint8_t* data, uint64_t len);

class TestHooks {
 public:
  static constexpr uint64_t kMaxBufferBytes = 1ull << 30;  // all MRs together

  // `ports[i]` and `names[i]` belong to daemon port i; they must outlive
  // the hooks.
  TestHooks(std::vector<RnicPort*> ports, std::vector<std::string> names);

  // Whether `cmd` is one of the hooks' commands.
  static bool Handles(std::string_view cmd);
  std::string Handle(std::string_view cmd, const ControlRequest& request);

 private:
  // A hook's answer, printed by Handle().
  using Reply = nlohmann::ordered_json;
  struct Buffer {
    std::unique_ptr<uint64_t[]> words;  // 8-byte aligned for atomics
    uint64_t len = 0;
    uint8_t* data() { return reinterpret_cast<uint8_t*>(words.get()); }
  };
  struct PortState {
    RnicPort* port = nullptr;
    nic::PdHandle pd = nic::kInvalidHandle;
    absl::flat_hash_map<uint32_t, Buffer> buffers;  // by MR key
    absl::flat_hash_set<uint32_t> qps, cqs;         // created here
  };
  absl::StatusOr<uint64_t> OwnQp(const PortState& p, const ControlRequest& req);
  // `key`'s CQ (absent: `fallback`, or an error without one) if the hooks
  // created it.
  absl::StatusOr<uint64_t> OwnCq(const PortState& p, const ControlRequest& req,
                                 std::string_view key,
                                 std::optional<uint64_t> fallback);

  absl::StatusOr<PortState*> Port(const ControlRequest& request);
  absl::StatusOr<Reply> Dispatch(std::string_view cmd,
                                 const ControlRequest& request);
  absl::StatusOr<Reply> RegMr(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> DeregMr(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> CreateCq(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> CreateQp(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> ModifyQp(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> Connect(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> QueryQp(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> DestroyQp(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> CreateAh(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> PostSend(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> PostRecv(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> PollCq(PortState& p, const ControlRequest& req);
  absl::StatusOr<Reply> MrRead(PortState& p, const ControlRequest& req,
                               bool digest);

  std::vector<PortState> ports_;
  std::vector<std::string> names_;
  uint64_t buffer_bytes_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CONTROL_TEST_HOOKS_H_
