#include "ns3/rnic_host.h"

#include <array>

namespace rocemu::ns3sim {

namespace {

// One transmit and one receive buffer for all hosts (single-threaded run).
uint8_t* Scratch(int which) {
  static std::array<std::array<uint8_t, RnicHost::kMaxFrame>, 2> buffers;
  return buffers[which].data();
}

}  // namespace

NS_OBJECT_ENSURE_REGISTERED(RnicHost);

ns3::TypeId RnicHost::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("rocemu::RnicHost")
                               .SetParent<FrameNode>()
                               .SetGroupName("Rocemu");
  return tid;
}

RnicHost::RnicHost(const nic::RnicConfig& config) : rnic_(config) {}

RnicHost::~RnicHost() = default;

ns3::Ptr<ns3::Packet> RnicHost::PullFrame(uint16_t port, nic::TimeNs now) {
  nic::TxFrame tx{Scratch(0), kMaxFrame, 0, 0};
  if (rnic_.Transmit(port, std::span(&tx, 1), now) == 0 || tx.len == 0 ||
      tx.len > kMaxFrame) {
    return nullptr;
  }
  return ns3::Create<ns3::Packet>(tx.data, tx.len);
}

void RnicHost::ReceiveFrame(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                            nic::TimeNs now) {
  const uint32_t len = frame->GetSize();
  if (len > kMaxFrame) {
    ++rx_oversize_;
    return;
  }
  uint8_t* buf = Scratch(1);
  frame->CopyData(buf, len);
  const nic::RxFrame rx{buf, len, false};
  rnic_.Receive(port, std::span(&rx, 1), now);
}

}  // namespace rocemu::ns3sim
