#!/bin/sh
# /init of the kernel-lane initramfs: busybox sh as PID 1 on Debian's kernel.
# It loads the modules, runs every test binary with -test.v, prints one
# sentinel line per binary with its exit status, and powers the guest off.
# Sentinels start with @@KNM-LANE@@ so the host can find them in the serial log.
/bin/busybox --install -s /bin
# /usr/sbin: ovsdb-server and ovs-vswitchd (the OVS tests).
export PATH=/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# shellcheck disable=SC1091 # written by run.sh
. /etc/lane/env

say() { echo "@@KNM-LANE@@ $*"; }
echo
say BOOTED "uptime=$(cut -d" " -f1 /proc/uptime)" "kernel=$(uname -r)"

modfail=0
while read -r mod params; do
	[ -n "$mod" ] || continue
	# shellcheck disable=SC2086 # params are separate words
	if ! insmod "/lib/modules/$mod" $params; then
		echo "insmod $mod failed"
		modfail=1
	fi
done </etc/lane/modules
say MODULES $modfail
ip link set lo up

# Each line: binary name, the directory to run it in (the package's
# directory, holding a copy of its testdata, as go test would) and
# optionally the package's own -test.run pattern.
while read -r bin dir run; do
	[ -n "$bin" ] || continue
	[ -n "$run" ] || run=$LANE_TEST_RUN
	say BEGIN "$bin"
	(cd "$dir" && HOME=/tmp TMPDIR=/tmp "./$bin" -test.v -test.timeout "$LANE_TEST_TIMEOUT" ${run:+-test.run "$run"} ${LANE_TEST_BENCH:+-test.bench "$LANE_TEST_BENCH" -test.benchtime "$LANE_TEST_BENCHTIME"})
	say RESULT "$bin" $?
done </etc/lane/tests
say DONE "uptime=$(cut -d" " -f1 /proc/uptime)"
sync
poweroff -f
# Reached only if poweroff failed: panic (PID 1 exits) + panic=-1 and
# qemu -no-reboot end the VM anyway.
exit 1
