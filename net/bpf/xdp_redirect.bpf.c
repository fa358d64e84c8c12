// signet's XDP program (the af_xdp backend; built at build time with clang -target bpf and
// embedded in signet::net). Redirects the IPv4/UDP frames addressed to a feed line into that
// line's AF_XDP socket on the receiving queue, and passes everything else (ARP, other
// addresses and ports, IP fragments, anything it cannot parse) to the kernel's stack.
//
//   signet_lines    hash: {destination address, destination port} -> 1 for each line; an
//                   address of 0 matches any address (a line bound to "*:port")
//   signet_sockets  XSKMAP: RX queue -> the AF_XDP socket serving that queue (one per queue,
//                   shared by the interface's lines; the backend sorts frames to lines)
//
// A frame for a line on a queue without a socket falls back to the kernel (the redirect's
// default action XDP_PASS), where the line's ordinary UDP socket receives it.
#include "xdp_redirect.h"

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __type(key, struct signet_xdp_destination);
    __type(value, __u32);
    __uint(max_entries, SIGNET_XDP_MAX_LINES);
} signet_lines SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __type(key, __u32);
    __type(value, __u32);
    __uint(max_entries, SIGNET_XDP_MAX_QUEUES);
} signet_sockets SEC(".maps");

struct vlan_header {
    __be16 tci;
    __be16 protocol;
};

SEC("xdp")
int signet_redirect(struct xdp_md* context) {
    void* data = (void*)(long)context->data;
    void* end = (void*)(long)context->data_end;
    struct ethhdr* ethernet = data;
    if ((void*)(ethernet + 1) > end) {
        return XDP_PASS;
    }
    __be16 protocol = ethernet->h_proto;
    void* network = ethernet + 1;
    if (protocol == bpf_htons(ETH_P_8021Q) || protocol == bpf_htons(ETH_P_8021AD)) {
        struct vlan_header* vlan = network;
        if ((void*)(vlan + 1) > end) {
            return XDP_PASS;
        }
        protocol = vlan->protocol;
        network = vlan + 1;
    }
    if (protocol != bpf_htons(ETH_P_IP)) {
        return XDP_PASS;
    }
    struct iphdr* ip = network;
    if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5) {
        return XDP_PASS;
    }
    if (ip->frag_off & bpf_htons(0x3fff)) { // more fragments, or an offset: the kernel reassembles
        return XDP_PASS;
    }
    struct udphdr* udp = (void*)ip + ip->ihl * 4;
    if ((void*)(udp + 1) > end) {
        return XDP_PASS;
    }
    struct signet_xdp_destination key = {.address = ip->daddr, .port = udp->dest, .unused = 0};
    if (!bpf_map_lookup_elem(&signet_lines, &key)) {
        key.address = 0;
        if (!bpf_map_lookup_elem(&signet_lines, &key)) {
            return XDP_PASS;
        }
    }
    return bpf_redirect_map(&signet_sockets, context->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
