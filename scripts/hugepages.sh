#!/usr/bin/env bash
# Hugepages for rocemud (docs/daemon.md, "Hugepages").
#   scripts/hugepages.sh reserve   as root: raise vm.nr_hugepages to the
#                                  target below (never lowers it) and mount
#                                  hugetlbfs at /dev/hugepages if no mount of
#                                  the default size exists. Idempotent.
#   scripts/hugepages.sh release   vm.nr_hugepages 0 and unmount
#                                  /dev/hugepages (the state before reserve).
#   scripts/hugepages.sh status    the pool and the mounts.
# Where the kernel refuses (not root, a read-only /proc/sys in a container)
# reserve says so in one line and exits 0: eal.hugepages: auto then runs
# every daemon with --no-huge.
#
# The target: ROCEMU_HUGEPAGES pages if set (0 skips), else enough for
# kDaemons daemons at the default eal.memory_mb (config/config.h) at once,
# capped at an eighth of MemTotal. kDaemons = 12: the default suites run
# two tests at a time (scripts/test.sh, --num-processes = 2 cores), a test
# starts at most about four daemons (net_incast starts three), which is 8,
# and a developer's own pair or a soak on the same machine makes 12. A daemon
# that finds the pool short falls back to --no-huge by itself.
set -euo pipefail

readonly kDaemons=12
readonly kMemoryMb=256  # eal.memory_mb's default
readonly kMountPoint=/dev/hugepages

meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

page_kib=$(meminfo Hugepagesize)
page_kib=${page_kib:-0}

default_mounted() {
  # A hugetlbfs mount without pagesize= serves the default size.
  awk -v kib="$page_kib" '$3 == "hugetlbfs" {
      size = kib
      n = split($4, o, ",")
      for (i = 1; i <= n; i++)
        if (o[i] ~ /^pagesize=/) {
          v = substr(o[i], 10); u = substr(v, length(v)); v = v + 0
          size = u == "G" ? v * 1048576 : u == "M" ? v * 1024 : v
        }
      if (size == kib) found = 1
    } END { exit !found }' /proc/mounts
}

target_pages() {
  if [[ -n "${ROCEMU_HUGEPAGES:-}" ]]; then
    echo "$ROCEMU_HUGEPAGES"
    return
  fi
  local want=$((kDaemons * kMemoryMb * 1024 / page_kib))
  local cap=$(($(meminfo MemTotal) / 8 / page_kib))
  echo $((want < cap ? want : cap))
}

reserve() {
  if ((page_kib == 0)); then
    echo "hugepages: this kernel has none; daemons use --no-huge"
    return 0
  fi
  local target have
  target=$(target_pages)
  have=$(cat /proc/sys/vm/nr_hugepages)
  if ((target == 0)); then
    echo "hugepages: ROCEMU_HUGEPAGES=0, none reserved"
    return 0
  fi
  if ((have < target)); then
    if ! { echo "$target" >/proc/sys/vm/nr_hugepages; } 2>/dev/null; then
      echo "hugepages: cannot reserve (not root, or /proc/sys read-only);" \
        "daemons use --no-huge"
      return 0
    fi
    have=$(cat /proc/sys/vm/nr_hugepages)
    # Fragmented memory may give fewer: what there is is still used.
    ((have < target)) &&
      echo "hugepages: the kernel gave $have of $target pages"
  fi
  if ! default_mounted; then
    # Not needed by rocemud (--in-memory maps hugetlb memfds), but DPDK
    # tools without --in-memory look for one.
    mkdir -p "$kMountPoint" 2>/dev/null &&
      mount -t hugetlbfs -o "pagesize=${page_kib}K" nodev "$kMountPoint" \
        2>/dev/null ||
      echo "hugepages: cannot mount hugetlbfs at $kMountPoint (not needed by rocemud)"
  fi
  echo "hugepages: $have x $((page_kib / 1024)) MiB reserved" \
    "($(meminfo HugePages_Free) free)"
}

release() {
  if mountpoint -q "$kMountPoint" &&
    [[ $(findmnt -n -o FSTYPE "$kMountPoint") == hugetlbfs ]]; then
    umount "$kMountPoint"
  fi
  echo 0 >/proc/sys/vm/nr_hugepages
  echo "hugepages: released ($(meminfo HugePages_Total) left in use)"
}

status() {
  grep -E '^(HugePages_|Hugepagesize)' /proc/meminfo
  grep hugetlbfs /proc/mounts || echo "no hugetlbfs mounted"
}

case ${1:-} in
  reserve) reserve ;;
  release) release ;;
  status) status ;;
  *) echo "usage: $0 reserve|release|status" >&2; exit 2 ;;
esac
