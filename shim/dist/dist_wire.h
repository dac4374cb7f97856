// Private to the dist*.cpp files: what ranks of another libtorch generation
// look like to this one, so that a group mixing libtorch 1.x and 2.x fails
// with a status naming both versions instead of hanging (see dist_wire.cpp).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace ctorch {
namespace dist {

// The TCPStore wire protocols. libtorch 2.x clients open every connection
// with a validation handshake (a VALIDATE query carrying a magic number,
// then a PING); libtorch 1.x servers know neither query, and 2.x servers
// ignore everything an unvalidated client sends. Each side waits for an
// answer the other never gives: a 1.13 client on a 2.x server blocks for
// ever (1.13 puts no timeout on its socket reads).
enum class StoreWire { Unvalidated /* libtorch 1.x */, Validated /* libtorch 2.x */ };

const char *wire_name(StoreWire w);

// Connects to the TCPStore server at host:port (retrying while it refuses,
// as libtorch's client does) and asks which protocol it speaks, within
// `timeout`. Throws StatusError(RUNTIME) when no server answers in time.
StoreWire probe_store_wire(const std::string &host, int port, std::chrono::milliseconds timeout);

// Before a group's backend connects: records this rank's libtorch version
// under the group's store and waits, within `timeout`, until every other
// rank showed what it is: a ctorch rank by its version key, a
// torch.distributed rank by the Gloo address key it writes first thing (at
// a place that depends on the libtorch generation: see gloo_rank_key_*).
// A rank of another version, or one that never shows, is a StatusError
// (RUNTIME) naming both versions, not a Gloo rendezvous waiting for ever.
void check_group_versions(c10d::Store &store, int group, int rank, int size, std::chrono::milliseconds timeout);

// Where torch.distributed's Gloo rank `rank` of process group number
// `group` announces its address, relative to the store the group was made
// on (verified on a FileStore: see docs/distributed.md).
std::string gloo_rank_key_1x(int group, int rank);  // "<group>/0/<rank>"
std::string gloo_rank_key_2x(int group, int rank);  // "<group>//cpu//0/<rank>"

// "libtorch 2.15.0": the version this ctorch was built against.
std::string this_libtorch();

}  // namespace dist
}  // namespace ctorch
