#!/usr/bin/env bash
# NetworkManager with its Open vSwitch device plugin, for the tests that
# drive OVS through NetworkManager (internal/testbed/nmrun, Options.OVS).
# Debian's network-manager is configured with --disable-ovs: it ships no
# libnm-device-plugin-ovs.so, and its daemon does not export the symbols
# the plugin needs, so the plugin alone cannot be added. This builds the
# installed version from Debian's own source package (Debian's patches
# applied), with OVS on and everything the tests do not use off, into
# bin/nm-ovs: NetworkManager, plugins/libnm-device-plugin-ovs.so and
# plugindir (the daemon's compile-time plugin directory, where nmrun binds
# plugins/ in its private mount namespace). Nothing is installed on the
# machine but build dependencies; the machine's apt configuration is left
# alone (the deb-src lists live in a temporary directory).
# Idempotent: a stamp holds the version built.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin/nm-ovs} # an argument builds elsewhere (to try the script)
ver=$(dpkg-query -W -f='${Version}' network-manager)
# A build of this version outside the clone (next to Go's build cache) is
# reused: building takes about 15 minutes on two cores, and every clean
# clone would pay it again in make test's set-up.
cache=${KNMSTATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/knmstate}/nm-ovs-$ver
if [[ -f $out/stamp && $(cat "$out/stamp") == "$ver" && -x $out/NetworkManager ]]; then
	if [[ ! -f $cache/stamp ]]; then
		mkdir -p "$(dirname "$cache")"
		cp -a "$out" "$cache"
	fi
	exit 0
fi
if [[ -f $cache/stamp && $(cat "$cache/stamp") == "$ver" && -x $cache/NetworkManager ]]; then
	rm -rf "$out"
	mkdir -p "$(dirname "$out")"
	cp -a "$cache" "$out"
	exit 0
fi
echo "setup: building NetworkManager $ver with its OVS plugin into $out (Debian's has none; about 15 minutes, once: kept in $cache)"
deps=(meson ninja-build pkg-config libglib2.0-dev libjansson-dev libudev-dev libndp-dev uuid-dev libdbus-1-dev xsltproc dpkg-dev)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/knmstate-nm-ovs.XXXXXX)
trap 'rm -rf "$work"' EXIT
# deb-src entries for the machine's own deb entries (one-line and deb822).
mkdir -p "$work/lists/partial" "$work/parts"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[[ -f $f ]] && sed -n 's/^deb \(.*\)/deb-src \1/p' "$f"
done >"$work/parts/src.list"
for f in /etc/apt/sources.list.d/*.sources; do
	[[ -f $f ]] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$work/parts/$(basename "$f")"
done
apt=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$work/parts" -o Dir::State::Lists="$work/lists")
apt-get "${apt[@]}" update -qq
(cd "$work" && apt-get "${apt[@]}" source -qq --download-only "network-manager=$ver" >/dev/null && dpkg-source -x ./*.dsc src >/dev/null)

# Paths as Debian's (prefix /usr, /etc, /var, the multiarch libdir): the
# daemon's compile-time run, state and plugin directories are the ones
# nmrun binds. Tests are off, and so is what a private test instance never
# uses (Wi-Fi, PPP, ModemManager, polkit, audit, SELinux, nmcli/nmtui:
# Debian's nmcli talks to this daemon over D-Bus).
libdir=lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
meson setup "$work/build" "$work/src" -Dprefix=/usr -Dlibdir="$libdir" -Dovs=true \
	-Dwifi=false -Dwext=false -Diwd=false -Dppp=false -Dmodem_manager=false -Dconcheck=false -Dnmcli=false -Dnmtui=false \
	-Dintrospection=false -Ddocs=false -Dtests=no -Dselinux=false -Dlibaudit=no -Dpolkit=false \
	-Dsession_tracking=no -Dsession_tracking_consolekit=false -Dsuspend_resume=consolekit -Dsystemd_journal=false \
	-Dlibpsl=false -Dcrypto=null -Dqt=false -Dvapi=false -Dreadline=none -Difcfg_rh=false -Difupdown=false \
	-Debpf=false -Dfirewalld_zone=false -Dsystemdsystemunitdir=no -Dudev_dir=no -Ddbus_conf_dir="$work/dbus" >"$work/meson.log" 2>&1 ||
	{ tail -30 "$work/meson.log"; exit 1; }
ninja -C "$work/build" src/core/NetworkManager src/core/devices/ovs/libnm-device-plugin-ovs.so >"$work/ninja.log" 2>&1 ||
	{ tail -30 "$work/ninja.log"; exit 1; }
plugindir=$(meson introspect --buildoptions "$work/build" | python3 -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["prefix"]+"/"+o["libdir"])')/NetworkManager/$(meson introspect --projectinfo "$work/build" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
rm -rf "$out"
mkdir -p "$out/plugins"
install -s -m 0755 "$work/build/src/core/NetworkManager" "$out/NetworkManager"
install -m 0644 "$work/build/src/core/devices/ovs/libnm-device-plugin-ovs.so" "$out/plugins/"
echo "$plugindir" >"$out/plugindir"
echo "$ver" >"$out/stamp"
rm -rf "$cache"
mkdir -p "$(dirname "$cache")"
cp -a "$out" "$cache"
