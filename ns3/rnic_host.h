// A host: one nic::Rnic on one port. Frames the RNIC builds into the
// carrier's buffer (nic/frame_io.h) become ns3::Packets with one copy; a
// received packet is copied once into a contiguous buffer the RNIC borrows
// for the call. The scratch buffers are shared by every host: the
// simulation runs on one thread and the RNIC keeps no pointer into them.
#ifndef ROCEMU_NS3_RNIC_HOST_H_
#define ROCEMU_NS3_RNIC_HOST_H_

#include <cstdint>

#include "nic/rnic.h"
#include "ns3/frame_node.h"

namespace rocemu::ns3sim {

// The application on a host (verbs_app.h): told after every frame event
// and wake-up of its host, when completions may have been made.
class HostListener {
 public:
  virtual ~HostListener() = default;
  virtual void OnHostEvent(nic::TimeNs now) = 0;
};

class RnicHost : public FrameNode {
 public:
  static ns3::TypeId GetTypeId();
  explicit RnicHost(const nic::RnicConfig& config);
  ~RnicHost() override;

  nic::Rnic& rnic() { return rnic_; }
  const nic::Rnic& rnic() const { return rnic_; }
  void set_listener(HostListener* l) { listener_ = l; }

  ns3::Ptr<ns3::Packet> PullFrame(uint16_t port, nic::TimeNs now) override;
  void ReceiveFrame(uint16_t port, ns3::Ptr<ns3::Packet> frame,
                    nic::TimeNs now) override;
  nic::TimeNs NextEventTime() const override { return rnic_.NextEventTime(); }

  // Frames longer than this are dropped on receive (and counted).
  static constexpr uint32_t kMaxFrame = 10240;
  uint64_t rx_oversize() const { return rx_oversize_; }

 protected:
  void AfterEvent(nic::TimeNs now) override {
    if (listener_ != nullptr) listener_->OnHostEvent(now);
  }

 private:
  nic::Rnic rnic_;
  HostListener* listener_ = nullptr;
  uint64_t rx_oversize_ = 0;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_RNIC_HOST_H_
