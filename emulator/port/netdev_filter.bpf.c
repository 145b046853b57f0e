// The kernel side of a netdev port (docs/daemon.md, "On a host's own
// NIC"): which frames of the interface are the RNIC's. Built with
// `clang -target bpf` into an object rocemud carries inside itself
// (netdev_filter_object.h); two programs share one map of the RNIC's
// destination addresses, which the daemon keeps equal to the interface's
// addresses (and the RNIC's multicast groups):
//
//   rocemu_xdp  (netdev_mode af_xdp) RoCEv2 frames (UDP 4791 to one of
//               those addresses) and MAC Control frames (PFC/PAUSE) go to
//               the AF_XDP socket of the queue they arrived on, everything
//               else to the kernel, untouched. With no socket on that queue
//               (the daemon exited or was killed) bpf_redirect_map falls
//               back to XDP_PASS: nothing is ever stolen from the kernel.
//               The DPDK af_xdp PMD finds the socket map by its name,
//               xsks_map.
//   rocemu_tc   (netdev_mode af_packet) at tc ingress, which runs after
//               the packet taps: the daemon's af_packet socket has its copy
//               of a RoCEv2 frame by then, and the kernel's is dropped here
//               so that its UDP layer never answers one with ICMP port
//               unreachable. Other frames continue to the next filter.
//
// Only untagged IPv4/IPv6 frames whose UDP header follows the IP header
// directly (no IPv4 options, no IPv6 extension headers, not a fragment):
// RoCEv2 frames are all of that form; anything else is the kernel's.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

// After the kernel headers, whose types they use.
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define ROCEV2_PORT 4791
#define ETH_P_MAC_CONTROL 0x8808
#define IP_FRAGMENT_MASK 0x3FFF  // MF and the fragment offset

// A destination: an IPv6 address, or IPv4 as ::ffff:a.b.c.d.
struct rocemu_dst {
  __u8 addr[16];
};

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, struct rocemu_dst);
  __type(value, __u8);
} rocemu_dsts SEC(".maps");

enum verdict { KERNEL, RNIC };

static __always_inline enum verdict Classify(void* data, void* end) {
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return KERNEL;
  if (eth->h_proto == bpf_htons(ETH_P_MAC_CONTROL)) return RNIC;
  struct rocemu_dst dst = {};
  struct udphdr* udp;
  if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end) return KERNEL;
    if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
        (ip->frag_off & bpf_htons(IP_FRAGMENT_MASK)) != 0) {
      return KERNEL;
    }
    dst.addr[10] = 0xFF;
    dst.addr[11] = 0xFF;
    __builtin_memcpy(&dst.addr[12], &ip->daddr, 4);
    udp = (void*)(ip + 1);
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > end) return KERNEL;
    if (ip6->nexthdr != IPPROTO_UDP) return KERNEL;
    __builtin_memcpy(dst.addr, &ip6->daddr, 16);
    udp = (void*)(ip6 + 1);
  } else {
    return KERNEL;
  }
  if ((void*)(udp + 1) > end) return KERNEL;
  if (udp->dest != bpf_htons(ROCEV2_PORT)) return KERNEL;
  return bpf_map_lookup_elem(&rocemu_dsts, &dst) != NULL ? RNIC : KERNEL;
}

SEC("xdp")
int rocemu_xdp(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  if (Classify(data, end) != RNIC) return XDP_PASS;
  // The low bits of the flags are the action when the queue has no socket.
  return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

// Ethernet, IPv6 and UDP: the most Classify reads.
#define HEADERS_LEN (14 + 40 + 8)

SEC("tc")
int rocemu_tc(struct __sk_buff* skb) {
  // Headers beyond the skb's linear part (an af_packet sender's frames
  // arrive with only the Ethernet header linear) are pulled in first.
  if ((long)skb->data_end - (long)skb->data < HEADERS_LEN &&
      skb->len > (__u32)((long)skb->data_end - (long)skb->data)) {
    bpf_skb_pull_data(skb, skb->len < HEADERS_LEN ? skb->len : HEADERS_LEN);
  }
  void* data = (void*)(long)skb->data;
  void* end = (void*)(long)skb->data_end;
  if (Classify(data, end) != RNIC) return TC_ACT_UNSPEC;
  // MAC Control frames are the kernel's too (it drops them itself).
  if ((void*)((struct ethhdr*)data + 1) <= end &&
      ((struct ethhdr*)data)->h_proto == bpf_htons(ETH_P_MAC_CONTROL)) {
    return TC_ACT_UNSPEC;
  }
  return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
