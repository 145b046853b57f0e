// Another program's XDP program (netdev_faults_test.py): on an interface
// that has it, rocemud must not replace it.
#include <linux/bpf.h>

// After the kernel headers, whose types it uses.
#include <bpf/bpf_helpers.h>

SEC("xdp")
int other_xdp(struct xdp_md* ctx) { return XDP_PASS; }

char LICENSE[] SEC("license") = "Dual BSD/GPL";
