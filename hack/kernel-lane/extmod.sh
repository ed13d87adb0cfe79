#!/usr/bin/env bash
# extmod.sh KDIR: builds the kernel modules Debian's kernel is configured
# without but the lane needs (hsr: HSR/PRP links; netdevsim: a simulated
# NIC with SR-IOV virtual functions and ethtool settings) from Debian's own
# linux-source-<major.minor>, against linux-headers-<kver> of the same
# package version as the cached kernel, and installs them into
# KDIR/root/lib/modules/<kver>/extra with a fresh modules.dep. Called by
# kernel.sh; the result is cached in KDIR (a stamp names the recipe), so a
# second run costs nothing. Debian does not enforce module signatures, so
# unsigned out-of-tree modules load (the kernel taints itself, no more).
set -euo pipefail
exec 1>&2
kdir=${1:?usage: extmod.sh KDIR}
lane=$(cd "$(dirname "$0")" && pwd)

log() { echo "kernel-lane: $*" >&2; }
die() { echo "kernel-lane: error: $*" >&2; exit 1; }

kver=$(cat "$kdir/kver")
# The kernel's package version is the cache entry's name after the last _.
kversion=${kdir##*_}
# Each module: its source directory in the tree, its Kconfig symbol.
mods=("net/hsr:HSR" "drivers/net/netdevsim:NETDEVSIM")
stamp=$( { declare -p mods; cat "$lane/extmod.sh"; } | sha256sum | cut -c1-16)
extra=$kdir/root/lib/modules/$kver/extra
if [[ "$(cat "$extra/.stamp" 2>/dev/null)" == "$stamp" ]]; then
	exit 0
fi
for tool in gcc make apt-get dpkg-deb depmod tar; do
	command -v "$tool" >/dev/null || die "$tool not found; run make setup"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/knm-extmod.XXXXXX")
trap 'rm -rf "$work"' EXIT
series=$(echo "$kver" | cut -d. -f1,2) # 6.1
headers=linux-headers-$kver
common=linux-headers-${kver%-*}-common # 6.1.0-56-common
kbuild=linux-kbuild-$series
source=linux-source-$series
log "building ${mods[*]} for $kver from $source $kversion"
(cd "$work" && apt-get download -q -o APT::Sandbox::User=root \
	"$headers=$kversion" "$common=$kversion" "$kbuild=$kversion" "$source=$kversion" >/dev/null) ||
	die "apt-get download of the headers and source $kversion failed"
root=$work/root
mkdir -p "$root"
for p in "$headers" "$common" "$kbuild"; do
	dpkg-deb -x "$work/${p}_"*.deb "$root"
done
hdir=$root/usr/src/$headers
# The flavour's Makefile includes the common tree by its absolute path.
echo "include $root/usr/src/$common/Makefile" >"$hdir/Makefile"
dpkg-deb --fsys-tarfile "$work/${source}_"*.deb | tar -xO "./usr/src/$source.tar.xz" >"$work/src.tar.xz"
paths=()
for m in "${mods[@]}"; do paths+=("$source/${m%%:*}"); done
tar -xJf "$work/src.tar.xz" -C "$work" "${paths[@]}"
rm -f "$work/src.tar.xz"

rm -rf "$extra.tmp" && mkdir -p "$extra.tmp"
for m in "${mods[@]}"; do
	dir=${m%%:*} sym=${m##*:}
	# CONFIG_X=m selects the objects in the directory's Makefile; the
	# define makes IS_ENABLED(CONFIG_X) true in the headers (the kernel's
	# autoconf.h says "not set", which would give e.g. if_hsr.h's stubs).
	make -s -C "$hdir" M="$work/$source/$dir" "CONFIG_$sym=m" KCFLAGS="-DCONFIG_${sym}_MODULE=1" -j"$(nproc)" modules
	cp "$work/$source/$dir"/*.ko "$extra.tmp/"
done
rm -rf "$extra"
mv "$extra.tmp" "$extra"
depmod -b "$kdir/root" "$kver"
echo "$stamp" >"$extra/.stamp"
log "built $(cd "$extra" && echo *.ko) into $extra"
