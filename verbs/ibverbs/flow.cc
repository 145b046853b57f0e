// ibv_create_flow / ibv_destroy_flow (verbs_context slots): a flow
// attribute and its specs (ETH, IPV4, IPV4_EXT, IPV6, TCP, UDP) folded into
// the RNIC's match key (nic/flow_table.h) and sent to the daemon. Anything
// else (tunnels, inner headers, actions, egress or DONT_TRAP rules, another
// port) is EOPNOTSUPP or EINVAL, as a provider without it answers.
#include <cerrno>
#include <cstring>
#include <new>

#include "nic/flow_table.h"
#include "verbs/ibverbs/dropin.h"

namespace rocemu::ibverbs {
namespace {

namespace key = nic::flow_key;

// A spec's value and mask over `len` bytes at key offset `off`: the value
// is kept under its mask only (the bits a mask leaves out are not
// compared, whatever the value says).
void Put(rocemu_flow_rule* r, uint32_t off, const void* val, const void* mask,
         size_t len) {
  const auto* v = static_cast<const uint8_t*>(val);
  const auto* m = static_cast<const uint8_t*>(mask);
  for (size_t i = 0; i < len; ++i) {
    r->mask[off + i] |= m[i];
    r->value[off + i] =
        static_cast<uint8_t>((r->value[off + i] & ~m[i]) | (v[i] & m[i]));
  }
}

template <typename Spec>
bool Fits(const ibv_flow_spec* s) {
  return s->hdr.size >= sizeof(Spec);
}

// One spec into the rule; an errno on refusal.
int AddSpec(const ibv_flow_spec* s, rocemu_flow_rule* r) {
  switch (static_cast<int>(s->hdr.type)) {
    case IBV_FLOW_SPEC_ETH: {
      if (!Fits<ibv_flow_spec_eth>(s)) return EINVAL;
      const ibv_flow_spec_eth& e = s->eth;
      r->layers |= nic::flow_layer::kEth;
      Put(r, key::kDstMac, e.val.dst_mac, e.mask.dst_mac, 6);
      Put(r, key::kSrcMac, e.val.src_mac, e.mask.src_mac, 6);
      Put(r, key::kEtherType, &e.val.ether_type, &e.mask.ether_type, 2);
      Put(r, key::kVlanTag, &e.val.vlan_tag, &e.mask.vlan_tag, 2);
      if (e.mask.vlan_tag != 0) r->layers |= nic::flow_layer::kVlan;
      return 0;
    }
    case IBV_FLOW_SPEC_IPV4: {
      if (!Fits<ibv_flow_spec_ipv4>(s)) return EINVAL;
      const ibv_flow_spec_ipv4& e = s->ipv4;
      r->layers |= nic::flow_layer::kIpv4;
      Put(r, key::kSrcIp, &e.val.src_ip, &e.mask.src_ip, 4);
      Put(r, key::kDstIp, &e.val.dst_ip, &e.mask.dst_ip, 4);
      return 0;
    }
    case IBV_FLOW_SPEC_IPV4_EXT: {
      if (!Fits<ibv_flow_spec_ipv4_ext>(s)) return EINVAL;
      const ibv_flow_spec_ipv4_ext& e = s->ipv4_ext;
      r->layers |= nic::flow_layer::kIpv4;
      Put(r, key::kSrcIp, &e.val.src_ip, &e.mask.src_ip, 4);
      Put(r, key::kDstIp, &e.val.dst_ip, &e.mask.dst_ip, 4);
      Put(r, key::kIpProto, &e.val.proto, &e.mask.proto, 1);
      Put(r, key::kTos, &e.val.tos, &e.mask.tos, 1);
      Put(r, key::kTtl, &e.val.ttl, &e.mask.ttl, 1);
      Put(r, key::kIpFlags, &e.val.flags, &e.mask.flags, 1);
      return 0;
    }
    case IBV_FLOW_SPEC_IPV6: {
      if (!Fits<ibv_flow_spec_ipv6>(s)) return EINVAL;
      const ibv_flow_spec_ipv6& e = s->ipv6;
      r->layers |= nic::flow_layer::kIpv6;
      Put(r, key::kSrcIp, e.val.src_ip, e.mask.src_ip, 16);
      Put(r, key::kDstIp, e.val.dst_ip, e.mask.dst_ip, 16);
      Put(r, key::kFlowLabel, &e.val.flow_label, &e.mask.flow_label, 4);
      Put(r, key::kIpProto, &e.val.next_hdr, &e.mask.next_hdr, 1);
      Put(r, key::kTos, &e.val.traffic_class, &e.mask.traffic_class, 1);
      Put(r, key::kTtl, &e.val.hop_limit, &e.mask.hop_limit, 1);
      return 0;
    }
    case IBV_FLOW_SPEC_TCP:
    case IBV_FLOW_SPEC_UDP: {
      if (!Fits<ibv_flow_spec_tcp_udp>(s)) return EINVAL;
      const ibv_flow_spec_tcp_udp& e = s->tcp_udp;
      r->layers |= s->hdr.type == IBV_FLOW_SPEC_TCP ? nic::flow_layer::kTcp
                                                    : nic::flow_layer::kUdp;
      Put(r, key::kSrcPort, &e.val.src_port, &e.mask.src_port, 2);
      Put(r, key::kDstPort, &e.val.dst_port, &e.mask.dst_port, 2);
      return 0;
    }
    default:
      return EOPNOTSUPP;
  }
}

ibv_flow* CreateFlow(ibv_qp* qp, ibv_flow_attr* attr) {
  QpImpl* q = Qp(qp);
  if (Dead(q->ctx)) return FailNull<ibv_flow>(EIO);
  if (attr == nullptr || attr->comp_mask != 0) {
    return FailNull<ibv_flow>(EINVAL);
  }
  if (attr->flags != 0) return FailNull<ibv_flow>(EOPNOTSUPP);
  if (attr->port != 1) return FailNull<ibv_flow>(EINVAL);
  if (attr->type > IBV_FLOW_ATTR_SNIFFER) return FailNull<ibv_flow>(EINVAL);
  rocemu_flow_rule rule{};
  rule.type = static_cast<uint8_t>(attr->type);
  rule.priority = attr->priority;
  // The specs follow the attribute, each sized by its header (attr->size
  // is not theirs: pyverbs and libibverbs set it to the attribute's own).
  const auto* p = reinterpret_cast<const uint8_t*>(attr + 1);
  for (uint8_t i = 0; i < attr->num_of_specs; ++i) {
    const auto* s = reinterpret_cast<const ibv_flow_spec*>(p);
    const uint16_t size = s->hdr.size;
    if (size < sizeof(s->hdr) || size > sizeof(ibv_flow_spec)) {
      return FailNull<ibv_flow>(EINVAL);
    }
    if (const int err = AddSpec(s, &rule); err != 0) {
      return FailNull<ibv_flow>(err);
    }
    p += size;
  }
  uint32_t handle = 0;
  if (const int err = rocemu_create_flow(q->rq, &rule, &handle); err != 0) {
    return FailNull<ibv_flow>(err);
  }
  auto* f = new (std::nothrow) ibv_flow{};
  if (f == nullptr) {
    (void)rocemu_destroy_flow(q->ctx->rc, handle);
    return FailNull<ibv_flow>(ENOMEM);
  }
  f->context = qp->context;
  f->handle = handle;
  return f;
}

int DestroyFlow(ibv_flow* flow) {
  CtxImpl* ctx = Ctx(flow->context);
  const int err = rocemu_destroy_flow(ctx->rc, flow->handle);
  if (err != 0) return err;
  delete flow;
  return 0;
}

}  // namespace

void FillFlowOps(CtxImpl* ctx) {
  ctx->vctx.ibv_create_flow = CreateFlow;
  ctx->vctx.ibv_destroy_flow = DestroyFlow;
}

}  // namespace rocemu::ibverbs
