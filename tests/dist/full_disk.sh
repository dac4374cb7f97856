#!/bin/sh
# A FileStore on a file system that fills up (tests/dist/dist_peer.c, fill):
# freeing it must not abort the process (c10d's ~FileStore throws from a
# noexcept destructor when it cannot append: seen in CI), and with room
# in the file's last block it must still record its exit. The file system is
# a 256 KiB tmpfs in a private mount namespace (unshare -m): root only, else
# the test says why and skips.
# Usage: full_disk.sh DIST_PEER
peer=$1
command -v unshare >/dev/null 2>&1 || { echo "skipped: no unshare (util-linux)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skipped: mounting a small tmpfs needs root (unshare -m)"; exit 77; }
d=$(mktemp -d)
trap 'rmdir "$d" 2>/dev/null' EXIT
rc=0
for mode in full room; do
  unshare -m sh -c "mount -t tmpfs -o size=256k ctorch_full_disk '$d' || exit 77; exec '$peer' fill '$d/store' $mode"
  r=$?
  if [ $r = 77 ]; then echo "skipped: cannot mount a tmpfs in a private mount namespace here"; exit 77; fi
  [ $r = 0 ] || { echo "FAIL: fill $mode exited with $r"; rc=1; }
done
exit $rc
