#!/usr/bin/env bash
# Fetches Debian's kernel (the package linux-image-amd64 depends on) into
# the kernel lane's cache, .cache/kernel-lane/kernel/<package>_<version>/:
# vmlinuz, the vmlinux ELF inside it (booted through its PVH entry), kver,
# and root/lib/modules/KVER with a fresh modules.dep. The entry is reused
# while Debian's version is unchanged; an older one is deleted when a new
# one arrives. Prints the entry's directory as its last line of stdout
# (progress goes to stderr). Used by run.sh (make test-kernel) and by
# `knmstate lab up --kernel debian`, which boots the same kernel.
set -euo pipefail
# Everything but the answer goes to stderr.
exec 3>&1 1>&2
cd "$(dirname "$0")/../.."
repo=$PWD
cache=$repo/.cache/kernel-lane
# A complete entry (modules of extmod.sh included) is also kept outside the
# clone, next to Go's build cache, as hack/nm-ovs.sh keeps its build: a new
# clone copies it instead of downloading the kernel and building the
# modules again (100 s of every clean clone's make test).
shared=${KNMSTATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/knmstate}/kernel-lane

log() { echo "kernel-lane: $*" >&2; }
die() { echo "kernel-lane: error: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb depmod flock xz; do
	command -v "$tool" >/dev/null || die "$tool not found; run make setup"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/knm-kernel-fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

# kernel_package prints "NAME VERSION" of the linux-image-*-amd64 package
# the linux-image-amd64 metapackage currently depends on.
kernel_package() {
	local name version
	name=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-amd64$/ { print $2; exit }')
	[[ -n $name ]] || return 1
	version=$(apt-cache policy "$name" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')
	[[ -n $version && $version != "(none)" ]] || return 1
	echo "$name $version"
}

# download_kernel NAME VERSION: fetch the .deb into $work/deb; fails
# (without exiting) when apt cannot get it, so the caller can refresh.
download_kernel() {
	local name=$1 version=$2
	rm -rf "$work/deb" && mkdir -p "$work/deb"
	log "downloading $name $version"
	# The _apt sandbox user cannot write into a mktemp dir; we are root anyway.
	(cd "$work/deb" && apt-get download -q -o APT::Sandbox::User=root "$name=$version" >/dev/null)
}

# extract_kernel NAME DIR: unpack $work/deb/*.deb into DIR (DIR/vmlinuz,
# DIR/root/lib/modules/KVER with a fresh modules.dep, DIR/kver), atomically.
extract_kernel() {
	local name=$1 dir=$2 x=$work/extract moddir kver
	rm -rf "$x" "$dir.tmp"
	dpkg-deb -x "$work"/deb/*.deb "$x"
	# Debian 12 ships /lib/modules; later releases ship /usr/lib/modules.
	moddir=$(find "$x/lib/modules" "$x/usr/lib/modules" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -1 || true)
	[[ -n $moddir ]] || die "$name: no lib/modules in the package"
	kver=$(basename "$moddir")
	[[ -f $x/boot/vmlinuz-$kver ]] || die "$name: no boot/vmlinuz-$kver in the package"
	mkdir -p "$dir.tmp/root/lib/modules"
	mv "$x/boot/vmlinuz-$kver" "$dir.tmp/vmlinuz"
	mv "$moddir" "$dir.tmp/root/lib/modules/$kver"
	# The package does not ship modules.dep (its postinst makes it).
	depmod -b "$dir.tmp/root" "$kver"
	echo "$kver" >"$dir.tmp/kver"
	rm -rf "$work/deb" "$x" "$dir"
	mv "$dir.tmp" "$dir"
}

mkdir -p "$cache/kernel"
# One lane at a time fills the cache (two fresh clones never share it, but
# two runs in one work tree might).
exec 9>"$cache/.lock"
flock -w 900 9 || die "another kernel lane holds $cache/.lock"

pkg=$(kernel_package) || pkg=
if [[ -n $pkg && ! -f $cache/kernel/${pkg/ /_}/kver && -f $shared/${pkg/ /_}/kver ]]; then
	log "copying $pkg from $shared"
	rm -rf "$cache/kernel/${pkg/ /_}.tmp"
	cp -a "$shared/${pkg/ /_}" "$cache/kernel/${pkg/ /_}.tmp"
	mv "$cache/kernel/${pkg/ /_}.tmp" "$cache/kernel/${pkg/ /_}"
	find "$cache/kernel" -mindepth 1 -maxdepth 1 ! -path "$cache/kernel/${pkg/ /_}" -exec rm -rf {} +
fi
if [[ -n $pkg && ! -f $cache/kernel/${pkg/ /_}/kver ]] && ! download_kernel "${pkg% *}" "${pkg#* }"; then
	pkg= # stale apt lists (the version rotated away): refresh below
fi
if [[ -z $pkg ]]; then
	log "refreshing apt lists"
	apt-get update -qq || true
	pkg=$(kernel_package) || pkg=
	if [[ -n $pkg && ! -f $cache/kernel/${pkg/ /_}/kver ]] && ! download_kernel "${pkg% *}" "${pkg#* }"; then
		die "apt-get download of $pkg failed"
	fi
fi
if [[ -n $pkg ]]; then
	read -r kname kversion <<<"$pkg"
	kdir=$cache/kernel/${kname}_${kversion}
	if [[ -f $kdir/kver ]]; then
		log "using cached $kname $kversion"
	else
		extract_kernel "$kname" "$kdir"
		# Only the current version is kept.
		find "$cache/kernel" -mindepth 1 -maxdepth 1 ! -path "$kdir" -exec rm -rf {} +
	fi
else
	# apt cannot resolve the kernel (no network): use what is cached.
	kdir=$(find "$cache/kernel" -mindepth 1 -maxdepth 1 -type d ! -name '*.tmp' | sort | tail -1)
	[[ -n $kdir && -f $kdir/kver ]] || die "cannot resolve linux-image-amd64 with apt and no kernel is cached"
	log "warning: apt cannot resolve linux-image-amd64; using cached $(basename "$kdir")"
fi
# vmlinux: the ELF inside the bzImage, found by its compressor's magic.
if [[ ! -f $kdir/vmlinux && ! -f $kdir/vmlinux.none ]]; then
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$kdir/vmlinuz" | head -1 | cut -d: -f1 || true)
	# xz stops after its stream, so tail may die of SIGPIPE: not an error.
	if [[ -n $off ]] && { tail -c +$((off + 1)) "$kdir/vmlinuz" || true; } | xz -dc --single-stream >"$kdir/vmlinux.tmp" 2>/dev/null &&
		[[ $(head -c 4 "$kdir/vmlinux.tmp") == $'\x7fELF' ]]; then
		mv "$kdir/vmlinux.tmp" "$kdir/vmlinux"
	else
		rm -f "$kdir/vmlinux.tmp"
		touch "$kdir/vmlinux.none" # not xz: boot the bzImage
	fi
fi
# Modules Debian's config leaves out (hsr, netdevsim), built once per
# kernel version from Debian's source against its headers.
bash "$repo/hack/kernel-lane/extmod.sh" "$kdir"
entry=$shared/$(basename "$kdir")
mkdir -p "$shared"
exec 8>"$shared.lock" # two clones' lanes at once
flock -w 900 8 || die "another kernel lane holds $shared.lock"
stamp=root/lib/modules/$(cat "$kdir/kver")/extra/.stamp
# Written again when extmod.sh's recipe changed since (its stamp differs).
if [[ ! -f $entry/kver ]] || ! cmp -s "$kdir/$stamp" "$entry/$stamp"; then
	rm -rf "$entry.tmp"
	cp -a "$kdir" "$entry.tmp"
	# Only the current version is kept there too.
	find "$shared" -mindepth 1 -maxdepth 1 ! -path "$entry.tmp" -exec rm -rf {} +
	mv "$entry.tmp" "$entry"
fi
exec 8>&- 9>&-
log "kernel $(cat "$kdir/kver") ready in $kdir"
echo "$kdir" >&3

