// Cost per packet of the congestion algorithms, next to ceilings measured in
// the same run:
//   NpMarked/<flows>/<N us>  NotificationPoint::OnCeMarkedPacket over many
//                            flows in a scattered order, 1 ns apart; N = 0
//                            makes a CNP per mark; with N = 4 the 1024 flows
//                            (marked every 1.024 us) absorb most marks
//   RpBytesSent/<mode>       ReactionPoint::OnBytesSent (1 KiB frames, 100 ns
//                            apart: byte counter plus every timer due)
//   RpOnTime/<mode>          ReactionPoint::OnTime alone, same spacing
//   RpCnp/<mode>             ReactionPoint::OnCnp, 1 us apart
//   Pacer                    Pacer::SetRate + OnSent + NextSendTime
//   RnicCeToCnp/<N us>       the RNIC's receive side of a CE-marked RoCE
//                            frame: ParseFrame (ICRC on), CongestionControl::
//                            OnCeMarked, and the queued CNP built by
//                            TransmitCnps (N = 0: one CNP per frame)
//   RnicRequestSent          CongestionControl::OnRequestSent of a paced QP
//   Memcpy/<bytes>           memcpy of a frame (ceiling)
//   ParseVerify64            ParseFrame of a 64 B-payload RoCE frame with
//                            every check on (ceiling: what any received
//                            packet costs anyway)
// <mode>: 0 = nvidia (fixed point), 1 = paper (real arithmetic).
#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "nic/congestion_control.h"
#include "nic/counters.h"
#include "nic/qp.h"
#include "pfc_ecn/dcqcn_params.h"
#include "pfc_ecn/notification_point.h"
#include "pfc_ecn/pacer.h"
#include "pfc_ecn/reaction_point.h"
#include "protocol/frame.h"

namespace rocemu {
namespace {

using pfc_ecn::TimeNs;

void PerPacket(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_NpMarked(benchmark::State& state) {
  const uint32_t flows = static_cast<uint32_t>(state.range(0));
  pfc_ecn::NpParams params;
  params.np_min_time_between_cnps = static_cast<uint32_t>(state.range(1));
  pfc_ecn::NotificationPoint np(params, flows);
  // An odd stride visits every flow of a power-of-two table in a scattered
  // order, so consecutive marks hit different cache lines.
  const uint32_t mask = flows - 1;
  uint32_t flow = 0;
  TimeNs now = 0;
  for (auto _ : state) {
    now += 1;
    flow = (flow + 40503) & mask;
    const bool cnp = np.OnCeMarkedPacket(flow, now);
    benchmark::DoNotOptimize(cnp);
  }
  PerPacket(state);
  state.counters["cnp_per_mark"] =
      static_cast<double>(np.counters().np_cnp_sent) /
      static_cast<double>(np.counters().np_ecn_marked_roce_packets);
}

pfc_ecn::DcqcnParams ParamsOf(int64_t mode) {
  return mode == 0 ? pfc_ecn::DcqcnParams::Nvidia(100000)
                   : pfc_ecn::DcqcnParams::Paper(100000);
}

void BM_RpBytesSent(benchmark::State& state) {
  const pfc_ecn::DcqcnParams params = ParamsOf(state.range(0));
  pfc_ecn::ReactionPoint rp(&params);
  TimeNs now = 1000;
  rp.OnCnp(now);  // active: timers and byte counter run
  for (auto _ : state) {
    now += 100;
    rp.OnBytesSent(1024, now);
    benchmark::DoNotOptimize(rp.current_rate_mbps());
  }
  PerPacket(state);
  state.counters["rate_mbps"] = rp.current_rate_mbps();
}

void BM_RpOnTime(benchmark::State& state) {
  const pfc_ecn::DcqcnParams params = ParamsOf(state.range(0));
  pfc_ecn::ReactionPoint rp(&params);
  TimeNs now = 1000;
  rp.OnCnp(now);
  for (auto _ : state) {
    now += 100;
    rp.OnTime(now);
    benchmark::DoNotOptimize(rp.current_rate_mbps());
  }
  PerPacket(state);
}

void BM_RpCnp(benchmark::State& state) {
  const pfc_ecn::DcqcnParams params = ParamsOf(state.range(0));
  pfc_ecn::ReactionPoint rp(&params);
  TimeNs now = 1000;
  for (auto _ : state) {
    now += 1000;
    rp.OnCnp(now);
    benchmark::DoNotOptimize(rp.current_rate_mbps());
  }
  PerPacket(state);
  state.counters["rp_cnp_handled"] = static_cast<double>(rp.rp_cnp_handled());
}

void BM_Pacer(benchmark::State& state) {
  pfc_ecn::Pacer pacer(40ull * 1000 * 1000 * 1000);
  TimeNs now = 0;
  uint64_t i = 0;
  for (auto _ : state) {
    // The RP moves the rate now and then; most packets keep it.
    pacer.SetRate(((++i & 1023) == 0 ? 30ull : 40ull) * 1000 * 1000 * 1000);
    now = pacer.NextSendTime();
    pacer.OnSent(now, 1024);
    benchmark::DoNotOptimize(now);
  }
  PerPacket(state);
}

protocol::FrameSpec MarkedWriteSpec() {
  protocol::FrameSpec spec;
  spec.net.dst_mac = {0x02, 0, 0, 0, 0, 0x0B};
  spec.net.src_mac = {0x02, 0, 0, 0, 0, 0x0A};
  spec.net.src_ip = protocol::Ipv4Mapped(10, 0, 0, 1);
  spec.net.dst_ip = protocol::Ipv4Mapped(10, 0, 0, 2);
  spec.net.ecn = 0b11;  // CE
  spec.hdr.bth.opcode = protocol::kRcRdmaWriteMiddle;
  spec.hdr.bth.dest_qp = 0x12;
  spec.hdr.bth.psn = 100;
  return spec;
}

std::vector<uint8_t> Frame(const protocol::FrameSpec& spec, size_t payload) {
  const std::vector<uint8_t> data(payload, 0x5A);
  std::vector<uint8_t> frame(
      protocol::RoceFrameLength(spec.net, spec.hdr.bth.opcode, payload));
  frame.resize(protocol::BuildRoceFrame(spec, data, frame));
  return frame;
}

nic::QpInitAttr RcInit() {
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kRc;
  return init;
}

void BM_RnicCeToCnp(benchmark::State& state) {
  nic::CongestionConfig config;
  config.dcqcn.np.np_min_time_between_cnps =
      static_cast<uint32_t>(state.range(0));
  nic::CongestionControl cc(config);
  nic::Qp qp(0x12, 1, RcInit(), 1);
  cc.InitQp(qp);
  nic::DeviceCounters counters;
  const std::vector<uint8_t> frame = Frame(MarkedWriteSpec(), 1024);
  protocol::ParsedFrame parsed;
  std::vector<uint8_t> cnp_buf(128);
  nic::TxFrame tx{cnp_buf.data(), static_cast<uint32_t>(cnp_buf.size()), 0, 0};
  TimeNs now = 0;
  for (auto _ : state) {
    now += 100;
    if (protocol::ParseFrame(frame, &parsed) != protocol::ParseError::kOk ||
        parsed.net.ecn != 0b11) {
      state.SkipWithError("frame does not parse as CE-marked");
      break;
    }
    cc.OnCeMarked(qp, parsed, now, counters);
    if (cc.HasCnp()) {
      benchmark::DoNotOptimize(cc.TransmitCnps({&tx, 1}, counters));
    }
    benchmark::ClobberMemory();
  }
  PerPacket(state);
  state.counters["cnp_per_mark"] =
      static_cast<double>(counters.np_cnp_sent) /
      static_cast<double>(counters.np_ecn_marked_roce_packets);
}

void BM_RnicRequestSent(benchmark::State& state) {
  nic::CongestionConfig config;
  nic::CongestionControl cc(config);
  nic::Qp qp(0x12, 1, RcInit(), 1);
  cc.InitQp(qp);
  nic::DeviceCounters counters;
  TimeNs now = 1000;
  cc.OnCnp(qp, now, counters);  // paced from now on
  for (auto _ : state) {
    now += 100;
    cc.OnRequestSent(qp, 1086, now);
    benchmark::DoNotOptimize(qp.pace_until_);
  }
  PerPacket(state);
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> in(n, 0x5A), out(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(in.data());
    std::memcpy(out.data(), in.data(), n);
    benchmark::ClobberMemory();
  }
  PerPacket(state);
}

void BM_ParseVerify64(benchmark::State& state) {
  protocol::FrameSpec spec = MarkedWriteSpec();
  spec.net.ecn = 0b10;
  const std::vector<uint8_t> frame = Frame(spec, 64);
  protocol::ParsedFrame parsed;
  for (auto _ : state) {
    benchmark::DoNotOptimize(frame.data());
    const protocol::ParseError e = protocol::ParseFrame(frame, &parsed);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(parsed);
    if (e != protocol::ParseError::kOk) {
      state.SkipWithError("frame does not parse");
      break;
    }
  }
  PerPacket(state);
}

BENCHMARK(BM_NpMarked)->ArgsProduct({{1024, 65536}, {0, 4}});
BENCHMARK(BM_RpBytesSent)->Arg(0)->Arg(1);
BENCHMARK(BM_RpOnTime)->Arg(0)->Arg(1);
BENCHMARK(BM_RpCnp)->Arg(0)->Arg(1);
BENCHMARK(BM_Pacer);
BENCHMARK(BM_RnicCeToCnp)->Arg(0)->Arg(4);
BENCHMARK(BM_RnicRequestSent);
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(1024);
BENCHMARK(BM_ParseVerify64);

}  // namespace
}  // namespace rocemu

BENCHMARK_MAIN();
