// Where congestion control plugs into the simulated switch: marking on
// dequeue (ECN) and pause generation from ingress occupancy (PFC). The plain
// threshold models here are stand-ins; pfc_ecn/'s RED and mlx5-style PFC
// models implement the same interfaces.
#ifndef ROCEMU_TESTS_SIMNET_SWITCH_HOOKS_H_
#define ROCEMU_TESTS_SIMNET_SWITCH_HOOKS_H_

#include <cstdint>

#include "nic/clock.h"
#include "tests/simnet/rng.h"

namespace rocemu::simnet {

struct DequeueContext {
  uint16_t port = 0;
  uint8_t priority = 0;
  uint64_t queue_bytes = 0;  // egress queue depth, the departing frame included
  uint32_t frame_len = 0;
  nic::TimeNs now = 0;
  Rng* rng = nullptr;  // the switch's seeded stream, for random marking
};

// Decides whether a departing ECN-capable frame gets CE. The switch does the
// rewrite (and counts it) only for ECT frames.
class EcnMarker {
 public:
  virtual ~EcnMarker() = default;
  virtual bool ShouldMark(const DequeueContext& ctx) = 0;
};

// Step marking (DCTCP style): CE whenever the queue holds at least K bytes.
class ThresholdEcnMarker final : public EcnMarker {
 public:
  explicit ThresholdEcnMarker(uint64_t k_bytes) : k_bytes_(k_bytes) {}
  bool ShouldMark(const DequeueContext& ctx) override {
    return ctx.queue_bytes >= k_bytes_;
  }

 private:
  uint64_t k_bytes_;
};

// RED-style marking as ConnectX/switch ECN profiles describe it: none below
// Kmin, probability rising linearly to Pmax at Kmax, every frame above Kmax.
class RedEcnMarker final : public EcnMarker {
 public:
  RedEcnMarker(uint64_t kmin_bytes, uint64_t kmax_bytes, double pmax)
      : kmin_(kmin_bytes),
        kmax_(kmax_bytes > kmin_bytes ? kmax_bytes : kmin_bytes + 1),
        pmax_(Probability(pmax)) {}
  bool ShouldMark(const DequeueContext& ctx) override {
    if (ctx.queue_bytes <= kmin_) return false;
    if (ctx.queue_bytes > kmax_) return true;
    // P(mark) = pmax * (q - kmin) / (kmax - kmin), in integers: draw u in
    // [0, kmax - kmin) and mark when u < (q - kmin) and a pmax draw holds.
    if (ctx.rng->Uniform(kmax_ - kmin_) >= ctx.queue_bytes - kmin_) {
      return false;
    }
    return ctx.rng->Bernoulli(pmax_);
  }

 private:
  uint64_t kmin_;
  uint64_t kmax_;
  Probability pmax_;
};

struct IngressContext {
  uint16_t port = 0;  // ingress port: where a pause frame would go
  uint8_t priority = 0;
  uint64_t ingress_bytes = 0;  // bytes buffered that arrived on port/priority
  bool xoff_sent = false;      // an XOFF is in force upstream
  nic::TimeNs now = 0;
};

enum class PfcAction : uint8_t { kNone, kXoff, kXon };

// Called whenever the ingress occupancy of (port, priority) changes.
class PfcPolicy {
 public:
  virtual ~PfcPolicy() = default;
  virtual PfcAction OnIngressChange(const IngressContext& ctx) = 0;
};

// XOFF at or above xoff_bytes, XON at or below xon_bytes (hysteresis).
class ThresholdPfcPolicy final : public PfcPolicy {
 public:
  ThresholdPfcPolicy(uint64_t xoff_bytes, uint64_t xon_bytes)
      : xoff_bytes_(xoff_bytes), xon_bytes_(xon_bytes) {}
  PfcAction OnIngressChange(const IngressContext& ctx) override {
    if (!ctx.xoff_sent && ctx.ingress_bytes >= xoff_bytes_) {
      return PfcAction::kXoff;
    }
    if (ctx.xoff_sent && ctx.ingress_bytes <= xon_bytes_)
      return PfcAction::kXon;
    return PfcAction::kNone;
  }

 private:
  uint64_t xoff_bytes_;
  uint64_t xon_bytes_;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_SWITCH_HOOKS_H_
