// Shared by the XDP program (xdp_redirect.bpf.c) and the af_xdp backend: the maps' layout.
#pragma once

#include <linux/types.h>

#define SIGNET_XDP_MAX_LINES 64  // lines (feed sockets) per interface
#define SIGNET_XDP_MAX_QUEUES 64 // RX queues per interface

/// Key of signet_lines, in network byte order; address 0 matches any address.
struct signet_xdp_destination {
    __u32 address;
    __u16 port;
    __u16 unused;
};
