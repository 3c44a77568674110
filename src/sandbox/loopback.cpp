#include "sandbox/loopback.hpp"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace airlock::sandbox {
namespace {

// Debian 12's kernel headers (6.1) predate the IPv4 attribute (6.3).
constexpr unsigned short kIflaGsoMaxSize = 41;      // IFLA_GSO_MAX_SIZE (IPv6, and IPv4 < 6.3)
constexpr unsigned short kIflaGsoIpv4MaxSize = 63;  // IFLA_GSO_IPV4_MAX_SIZE

struct LinkRequest {
  nlmsghdr header;
  ifinfomsg info;
  char attributes[64];
};

// Appends one attribute. memcpy, not casts: the bytes of a netlink message are only as
// aligned as NLMSG_ALIGN makes them.
void add_attribute(LinkRequest& req, unsigned short type, const void* data, unsigned short size) {
  char* at = reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.header.nlmsg_len);
  const rtattr attr{static_cast<unsigned short>(RTA_LENGTH(size)), type};
  std::memcpy(at, &attr, sizeof attr);
  std::memcpy(at + RTA_LENGTH(0), data, size);
  req.header.nlmsg_len = NLMSG_ALIGN(req.header.nlmsg_len) + RTA_ALIGN(attr.rta_len);
}

// One RTM_NEWLINK for "lo": up, and the segment sizes if `big`. Returns 0 or an errno.
int set_loopback(int sock, bool big, unsigned sequence) {
  LinkRequest req{};
  req.header.nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg));
  req.header.nlmsg_type = RTM_NEWLINK;
  req.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  req.header.nlmsg_seq = sequence;
  req.info.ifi_family = AF_UNSPEC;
  req.info.ifi_flags = IFF_UP;
  req.info.ifi_change = IFF_UP;
  add_attribute(req, IFLA_IFNAME, "lo", 3);
  if (big) {
    const std::uint32_t size = kLoopbackSegmentBytes;
    add_attribute(req, kIflaGsoMaxSize, &size, sizeof size);
    add_attribute(req, kIflaGsoIpv4MaxSize, &size, sizeof size);
  }
  ssize_t sent;
  do sent = ::send(sock, &req, req.header.nlmsg_len, 0);
  while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(req.header.nlmsg_len)) return sent < 0 ? errno : EIO;
  char answer[1024];
  for (;;) {
    ssize_t n = ::recv(sock, answer, sizeof answer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    const auto size = static_cast<std::size_t>(n);
    for (std::size_t offset = 0; offset + sizeof(nlmsghdr) <= size;) {
      nlmsghdr header;
      std::memcpy(&header, answer + offset, sizeof header);
      if (header.nlmsg_len < sizeof header || offset + header.nlmsg_len > size) return EIO;
      if (header.nlmsg_seq == sequence && header.nlmsg_type == NLMSG_ERROR) {
        if (header.nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return EIO;
        nlmsgerr error;
        std::memcpy(&error, answer + offset + NLMSG_HDRLEN, sizeof error);
        return -error.error;
      }
      offset += NLMSG_ALIGN(header.nlmsg_len);
    }
  }
}

}  // namespace

LoopbackResult bring_up_loopback() {
  LoopbackResult result;
  int sock = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (sock < 0) {
    result.err = errno;
    result.step = "netlink socket for loopback";
    return result;
  }
  // A kernel without large segments for lo refuses the sizes (EINVAL) and may have set the
  // flag already; bringing it up a second time is harmless.
  int err = set_loopback(sock, true, 1);
  if (err == 0) {
    result.big_segments = true;
  } else {
    err = set_loopback(sock, false, 2);
    if (err != 0) {
      result.err = err;
      result.step = "bringing up loopback (RTM_NEWLINK lo up)";
    }
  }
  ::close(sock);
  return result;
}

}  // namespace airlock::sandbox
