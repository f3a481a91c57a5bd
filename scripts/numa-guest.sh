#!/usr/bin/env bash
# numa-guest.sh: runs a command inside a KVM guest that has several NUMA nodes, for the
# memory-tier tests and benchmarks (issue 11), which need page migration between nodes
# that a one-node host cannot do.
#
# Contract
#   scripts/numa-guest.sh [--nodes=N] [--mem-per-node=SIZE] [--cpus=N] [--timeout=S]
#                         [--share=DIR] [--accel=tcg|kvm] -- COMMAND...
# - Boots Debian's kernel (linux-image-amd64's, extracted, never installed) with N NUMA
#   nodes (default 2) of SIZE memory each (default 2G; qemu's size syntax) and --cpus CPUs
#   (default 2, spread over the nodes; a node may have none). --accel=tcg (default):
#   qemu's multi-threaded software emulation, several times slower than the host; kvm:
#   hardware virtualization, where it works. On this project's machines /dev/kvm is the
#   PVM backend (the kvm_pvm module: KVM for nested hosts without VMX), which runs only
#   guest kernels built for PVM (virt-pvm/linux); a stock Debian kernel hangs right
#   after the BIOS, so tcg is the default and --accel=kvm on such a host stops with
#   that reason instead of hanging.
# - The guest sees the host's root file system read-only (9p) with a fresh tmpfs on /tmp,
#   and DIR (default: the current directory) read-write at the same path, so the build
#   there can be run as is. COMMAND runs as root in a shell in the current directory
#   (which must be inside DIR to be writable), HOME=/tmp; its output (stdout and stderr)
#   streams to this script's stdout.
# - Exits with COMMAND's exit status; 124 if the guest did not finish within --timeout
#   seconds (default 1800; qemu is killed); 2 on a bad command line; 3 if the guest could
#   not be prepared or booted (the reason on stderr).
# - First run: installs qemu-system-x86 and busybox-static with apt-get if missing and
#   downloads the kernel package into /var/cache/vmstore-guest (about 70 MB); later runs
#   reuse it. Paths with spaces are not supported.
set -euo pipefail

nodes=2
mem=2G
cpus=2
timeout_s=1800
share=$PWD
accel=tcg
usage() {
  echo "usage: $0 [--nodes=N] [--mem-per-node=SIZE] [--cpus=N] [--timeout=S] [--share=DIR] [--accel=tcg|kvm] -- COMMAND..." >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nodes=*) nodes=${1#*=} ;;
    --mem-per-node=*) mem=${1#*=} ;;
    --cpus=*) cpus=${1#*=} ;;
    --timeout=*) timeout_s=${1#*=} ;;
    --share=*) share=${1#*=} ;;
    --accel=*) accel=${1#*=} ;;
    --) shift; break ;;
    *) usage ;;
  esac
  shift
done
[[ $# -gt 0 ]] || usage
[[ $nodes =~ ^[1-8]$ ]] || { echo "$0: --nodes must be 1 to 8" >&2; exit 2; }
[[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "$0: --cpus must be a positive number" >&2; exit 2; }
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || { echo "$0: --timeout must be a positive number of seconds" >&2; exit 2; }
[[ $mem =~ ^[1-9][0-9]*[MG]$ ]] || { echo "$0: --mem-per-node must look like 512M or 2G" >&2; exit 2; }
share=$(cd "$share" && pwd)
cwd=$PWD
case "$cwd/" in "$share"/*) ;; *) echo "$0: the current directory $cwd is not inside --share=$share" >&2; exit 2 ;; esac
[[ "$share$cwd" != *" "* ]] || { echo "$0: paths with spaces are not supported" >&2; exit 2; }
command="$*"

fail() { echo "numa-guest: $*" >&2; exit 3; }

# --- what the guest needs, once ---------------------------------------------------------
cache=/var/cache/vmstore-guest
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[[ -x /bin/busybox ]] || need+=(busybox-static)
if [[ ${#need[@]} -gt 0 ]]; then
  echo "numa-guest: installing ${need[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 ||
    fail "could not install ${need[*]}"
fi
if [[ $accel == kvm ]]; then
  [[ -r /dev/kvm ]] || fail "/dev/kvm is not available (try --accel=tcg)"
  if [[ -d /sys/module/kvm_pvm && ! -d /sys/module/kvm_intel && ! -d /sys/module/kvm_amd ]]; then
    fail "/dev/kvm here is the PVM backend (kvm_pvm), which boots only PVM guest kernels, not Debian's (try --accel=tcg)"
  fi
  machine=(-machine q35,accel=kvm -cpu host,-arch-capabilities)
elif [[ $accel == tcg ]]; then
  machine=(-machine q35 -accel tcg,thread=multi -cpu max)
else
  echo "$0: --accel must be tcg or kvm" >&2
  exit 2
fi
mkdir -p "$cache"
kernel_pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[[ -n $kernel_pkg ]] || fail "cannot tell which kernel package linux-image-amd64 depends on (apt-get update?)"
kver=${kernel_pkg#linux-image-}
root=$cache/$kver
if [[ ! -f $root/boot/vmlinuz-$kver ]]; then
  echo "numa-guest: downloading $kernel_pkg" >&2
  (cd "$cache" && rm -f "$kernel_pkg"_*.deb && apt-get download "$kernel_pkg" >&2) || fail "could not download $kernel_pkg"
  rm -rf "$root.tmp" && dpkg-deb -x "$cache/$kernel_pkg"_*.deb "$root.tmp" && mv "$root.tmp" "$root" ||
    fail "could not extract $kernel_pkg"
  rm -f "$cache/$kernel_pkg"_*.deb
fi

# The initramfs: busybox, the modules that mount the host over virtio-9p, and /init.
initrd=$cache/initrd-$kver.gz
script_sum=$(sha256sum "$0" | cut -c1-16)
if [[ ! -f $initrd || ! -f $initrd.$script_sum ]]; then
  work=$(mktemp -d)
  mkdir -p "$work"/{bin,dev,proc,sys,newroot,lib/modules}
  cp /bin/busybox "$work/bin/busybox"
  mods=(drivers/virtio/virtio.ko drivers/virtio/virtio_ring.ko drivers/virtio/virtio_pci_legacy_dev.ko
        drivers/virtio/virtio_pci_modern_dev.ko drivers/virtio/virtio_pci.ko fs/netfs/netfs.ko
        fs/fscache/fscache.ko net/9p/9pnet.ko net/9p/9pnet_virtio.ko fs/9p/9p.ko)
  for m in "${mods[@]}"; do
    src=$root/lib/modules/$kver/kernel/$m
    [[ -f $src ]] || { [[ -f $src.xz ]] && src=$src.xz; } || true
    [[ -f $src ]] || continue  # built in, or not needed by this kernel
    cp "$src" "$work/lib/modules/"
  done
  cat > "$work/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
  [ -f /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko 2>/dev/null
done
arg() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" /proc/cmdline; }
share=$(arg vmsshare); cwd=$(arg vmscwd)
say() { echo "$*" > /dev/ttyS0; }
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot /newroot; then
  say "VMSTORE-GUEST: cannot mount the host's root"; poweroff -f
fi
mount -t proc proc /newroot/proc
mount -t sysfs sys /newroot/sys
mount -t devtmpfs dev /newroot/dev
mkdir -p /newroot/dev/shm 2>/dev/null; mount -t tmpfs shm /newroot/dev/shm
mount -t tmpfs tmp /newroot/tmp
mount -t tmpfs run /newroot/run
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 share "/newroot$share"; then
  say "VMSTORE-GUEST: cannot mount $share"; poweroff -f
fi
state="$share/.numa-guest"
chroot /newroot /bin/sh -c "cd '$cwd' && HOME=/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh '$state/cmd.sh'" \
  > "/newroot$state/out.log" 2>&1
echo $? > "/newroot$state/rc"
sync
poweroff -f
INIT
  chmod +x "$work/init"
  (cd "$work" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 > "$initrd.tmp") || fail "could not build the initramfs"
  mv "$initrd.tmp" "$initrd"
  rm -f "$initrd".*[!z] 2>/dev/null || true
  touch "$initrd.$script_sum"
  rm -rf "$work"
fi

# --- boot ---------------------------------------------------------------------------------
state=$share/.numa-guest
rm -rf "$state" && mkdir -p "$state"
printf '%s\n' "$command" > "$state/cmd.sh"
: > "$state/out.log"
numa=()
for ((n = 0; n < nodes; n++)); do
  numa+=(-object "memory-backend-ram,id=m$n,size=$mem")
  node_cpus=()
  for ((c = n; c < cpus; c += nodes)); do node_cpus+=("cpus=$c"); done
  spec="node,nodeid=$n,memdev=m$n"
  for c in "${node_cpus[@]}"; do spec+=",$c"; done
  numa+=(-numa "$spec")
done
per_node_mb=${mem%[MG]}
[[ $mem == *G ]] && per_node_mb=$(( per_node_mb * 1024 ))
total_mb=$(( nodes * per_node_mb ))
kvm_log=$state/console.log
tail -n +1 -f "$state/out.log" &
tail_pid=$!
set +e
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 \
  "${machine[@]}" -smp "$cpus" -m "${total_mb}M" "${numa[@]}" \
  -kernel "$root/boot/vmlinuz-$kver" -initrd "$initrd" \
  -append "console=ttyS0 panic=-1 vmsshare=$share vmscwd=$cwd" \
  -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
  -virtfs "local,path=$share,mount_tag=share,security_model=none,multidevs=remap" \
  -display none -monitor none -serial "file:$kvm_log" -no-reboot < /dev/null
qemu_rc=$?
set -e
sleep 0.5
kill "$tail_pid" 2>/dev/null || true
wait "$tail_pid" 2>/dev/null || true
if [[ $qemu_rc -eq 124 || $qemu_rc -eq 137 ]]; then
  echo "numa-guest: the guest did not finish within $timeout_s s" >&2
  exit 124
fi
if [[ ! -f $state/rc ]]; then
  echo "numa-guest: the guest ended without running the command (qemu exit $qemu_rc); its console:" >&2
  tail -n 30 "$kvm_log" >&2 || true
  exit 3
fi
exit "$(cat "$state/rc")"
