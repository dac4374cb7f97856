// Ranks of different libtorch generations in one group: found out and
// refused with a status naming both versions, within the caller's timeout.
//
// Measured with Debian's 1.13.1 and PyPI's 2.15.0 (Python on both sides):
//   - TCPStore: a 2.15 client on a 1.13 server is reset and retries until
//     its timeout; a 1.13 client on a 2.15 server is never answered and
//     blocks for ever (no socket timeout in 1.13). probe_store_wire tells the
//     two servers apart before libtorch's client connects.
//   - Gloo's rendezvous keys: torch.distributed 1.13 puts rank r's address
//     at "<group>/0/<r>" of the group's store (after its host name at
//     "<group>/0/rank_<r>"), 2.x at "<group>//cpu//0/<r>" (its PrefixStores
//     "<group>/" then "cpu/", each joined with '/'). Over
//     a store both can reach (a FileStore) each waits for the other's key
//     under its own layout until Gloo's timeout. check_group_versions looks
//     for either layout, and for the version key ctorch ranks write.
#include "dist_internal.h"
#include "dist_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace ctorch {
namespace dist {
namespace {

// libtorch 2.x's first two queries on every connection (TCPStoreBackend.hpp):
// VALIDATE (query 0) with this magic number, then PING (query 13) with a
// nonce the server sends back. Little-endian, as libtorch writes them.
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kQueryValidate = 0, kQueryPing = 13;
// A 1.x server reads query 0 as SET and the next 8 bytes (magic, PING's
// query byte, 3 nonce bytes) as the key's length: the nonce's third byte
// has its top bit set, so that length exceeds what any std::vector can
// hold, the server's allocation throws at once and it closes the
// connection (it catches every error of a client, and serves the others
// on). Without that bit it would wait for a key of gigabytes.
constexpr uint32_t kNonce = 0x7FC0A5A5;

int millis_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// One non-blocking connect to any address of host:port; the socket, or -1
// with `err` set.
int connect_once(const std::string &host, int port, Clock::time_point deadline, std::string &err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    err = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    return -1;
  }
  int found = -1;
  for (addrinfo *a = res; a && found < 0; a = a->ai_next) {
    Fd s;
    s.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s.fd < 0) {
      err = std::strerror(errno);
      continue;
    }
    if (::connect(s.fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        err = std::strerror(errno);
        continue;
      }
      pollfd p{s.fd, POLLOUT, 0};
      if (::poll(&p, 1, millis_left(deadline)) != 1) {
        err = "connect timed out";
        continue;
      }
      int so = 0;
      socklen_t len = sizeof so;
      ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &so, &len);
      if (so != 0) {
        err = std::strerror(so);
        continue;
      }
    }
    found = s.fd;
    s.fd = -1;
  }
  ::freeaddrinfo(res);
  return found;
}

enum class Answer { Validated, Closed, Other, Silent };

Answer ask(int fd, Clock::time_point deadline) {
  uint8_t msg[10];
  msg[0] = kQueryValidate;
  for (int k = 0; k < 4; ++k) msg[1 + k] = static_cast<uint8_t>(kValidationMagic >> (8 * k));
  msg[5] = kQueryPing;
  for (int k = 0; k < 4; ++k) msg[6 + k] = static_cast<uint8_t>(kNonce >> (8 * k));
  size_t sent = 0;
  while (sent < sizeof msg) {
    ssize_t n = ::send(fd, msg + sent, sizeof msg - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, millis_left(deadline)) != 1) return Answer::Silent;
      continue;
    }
    return Answer::Closed;
  }
  uint8_t got[4];
  size_t have = 0;
  while (have < sizeof got) {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, millis_left(deadline));
    if (r == 0) return Answer::Silent;
    if (r < 0) {
      if (errno == EINTR) continue;
      return Answer::Silent;
    }
    ssize_t n = ::recv(fd, got + have, sizeof got - have, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return have ? Answer::Other : Answer::Closed;
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return Answer::Other;
    }
    have += static_cast<size_t>(n);
  }
  uint32_t echo = 0;
  for (int k = 0; k < 4; ++k) echo |= static_cast<uint32_t>(got[k]) << (8 * k);
  return echo == kNonce ? Answer::Validated : Answer::Other;
}

// "1, 3"
std::string rank_list(const std::vector<int> &ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// Whether a Gloo rank announced itself under `key` ("<prefix>/<rank>"):
// libtorch 1.13's Gloo first sets "<prefix>/rank_<rank>" (its host name) and
// waits for every rank's before it sets its address; 2.15's sets the
// address only.
bool gloo_rank_seen(c10d::Store &store, const std::string &key) {
  size_t slash = key.rfind('/');
  return store.check({key.substr(0, slash + 1) + "rank_" + key.substr(slash + 1)}) || store.check({key});
}

// Gloo keys of 1.x's layout or 2.x's, this rank's first.
const char *other_generation() { return compat::kGlooKeysPerDevice ? "1.x" : "2.x"; }

}  // namespace

const char *wire_name(StoreWire w) {
  return w == StoreWire::Validated ? "libtorch 2.x's (with its validation handshake)"
                                   : "libtorch 1.x's (without the validation handshake 2.x added)";
}

std::string this_libtorch() { return std::string("libtorch ") + CTORCH_TORCH_VERSION_STRING; }

StoreWire probe_store_wire(const std::string &host, int port, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string where = "the TCPStore server at " + host + ":" + std::to_string(port);
  std::string err = "no attempt";
  milliseconds backoff(50);
  for (;;) {
    Fd s;
    s.fd = connect_once(host, port, deadline, err);
    if (s.fd >= 0) {
      switch (ask(s.fd, deadline)) {
        case Answer::Validated: return StoreWire::Validated;
        case Answer::Closed: return StoreWire::Unvalidated;
        case Answer::Other:
          fail(CTORCH_RUNTIME, where + " answered libtorch's connection handshake with bytes no TCPStore "
               "sends (is it a TCPStore?)");
        case Answer::Silent:
          fail(CTORCH_RUNTIME, where + " accepted a connection but did not answer within " +
               std::to_string(timeout.count()) + " ms");
      }
    }
    if (Clock::now() >= deadline)
      fail(CTORCH_RUNTIME, "could not connect to " + where + " within " + std::to_string(timeout.count()) +
           " ms: " + err);
    std::this_thread::sleep_for(std::min(backoff, milliseconds(millis_left(deadline) + 1)));
    backoff = std::min(backoff * 2, milliseconds(1000));
  }
}

std::string gloo_rank_key_1x(int group, int rank) {
  return std::to_string(group) + "/0/" + std::to_string(rank);
}
std::string gloo_rank_key_2x(int group, int rank) {
  return std::to_string(group) + "//cpu//0/" + std::to_string(rank);
}

void check_group_versions(c10d::Store &store, int group, int rank, int size, milliseconds timeout) {
  if (size <= 1) return;
  const std::string mine = CTORCH_TORCH_VERSION_STRING;
  const std::string vkey = "ctorch_libtorch_version/" + std::to_string(group) + "/";
  const bool two = compat::kGlooKeysPerDevice;
  store.set(vkey + std::to_string(rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  std::vector<int> pending;
  for (int r = 0; r < size; ++r)
    if (r != rank) pending.push_back(r);
  const auto deadline = Clock::now() + timeout;
  milliseconds pause(2);
  for (;;) {
    std::vector<int> still;
    for (int r : pending) {
      const std::string peer = vkey + std::to_string(r);
      if (store.check({peer})) {
        std::vector<uint8_t> v = store.get(peer);
        std::string theirs(v.begin(), v.end());
        if (theirs != mine)
          fail(CTORCH_RUNTIME, "rank " + std::to_string(r) + " is a ctorch built against libtorch " + theirs +
               ", this rank (" + std::to_string(rank) + ") is built against " + this_libtorch() +
               ": every rank of a group must run the same PyTorch version");
        continue;
      }
      if (gloo_rank_seen(store, two ? gloo_rank_key_2x(group, r) : gloo_rank_key_1x(group, r))) continue;
      if (gloo_rank_seen(store, two ? gloo_rank_key_1x(group, r) : gloo_rank_key_2x(group, r)))
        fail(CTORCH_RUNTIME, "rank " + std::to_string(r) + " is a torch.distributed rank of PyTorch " +
             other_generation() + " (its Gloo address key is where libtorch " + other_generation() +
             " puts it), this rank (" + std::to_string(rank) + ") is built against " + this_libtorch() +
             ": every rank of a group must run the same PyTorch version");
      still.push_back(r);
    }
    pending.swap(still);
    if (pending.empty()) return;
    if (Clock::now() >= deadline)
      fail(CTORCH_RUNTIME, "timed out after " + std::to_string(timeout.count()) + " ms waiting for rank(s) " +
           rank_list(pending) + " of " + std::to_string(size) + " to join group " + std::to_string(group) +
           " (this rank: " + std::to_string(rank) + ", " + this_libtorch() + "). A rank that runs another "
           "PyTorch version cannot join: TCPStore's wire protocol and Gloo's store keys differ between "
           "libtorch 1.x and 2.x");
    std::this_thread::sleep_for(std::min(pause, milliseconds(std::max(1, millis_left(deadline)))));
    pause = std::min(pause * 2, milliseconds(100));
  }
}

}  // namespace dist
}  // namespace ctorch
