// The loopback device of a sandbox's network namespace. Its only traffic is between the
// program and the egress proxy's listeners (and whatever the program serves itself), so it
// is set up for bulk transfer: segments of up to kLoopbackSegmentBytes ("BIG TCP", Linux 6.3+
// for IPv4) instead of the 64 KiB the kernel starts every device with. Both ends of a
// relayed connection's sandbox side then move 8 times fewer packets; docs/egress.md has the
// figures. The host's own loopback is never touched.
#pragma once

namespace airlock::sandbox {

// The largest loopback segment the kernel accepts (its tso_max_size for lo).
inline constexpr unsigned kLoopbackSegmentBytes = 524280;

struct LoopbackResult {
  int err = 0;                 // 0, or the errno of the failing step
  const char* step = nullptr;  // the failing step, for the setup error
  bool big_segments = false;   // the kernel took the larger segment size
};

// Brings `lo` up in the calling thread's network namespace, with large segments where the
// kernel takes them (older kernels: plain up). Needs CAP_NET_ADMIN over the namespace.
// Makes only syscalls and uses only the stack: the sandbox child calls it.
LoopbackResult bring_up_loopback();

}  // namespace airlock::sandbox
