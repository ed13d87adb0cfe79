#!/bin/sh
# /init of a labvm guest: busybox sh as PID 1 on Debian's kernel. It mounts
# the usual file systems, loads the modules of /etc/labvm/modules, runs the
# command of /etc/labvm/command (one argument per line) as its child and
# powers the guest off when it ends. Lines starting with @@LABVM@@ on the
# serial console tell the host how far it got.
# Busybox's applets in a directory of their own, last on PATH: the image's
# Debian programs (iproute2's ip, not busybox's) come first.
/bin/busybox --install -s /usr/libexec/busybox
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/usr/libexec/busybox
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
mkdir -p /run /tmp /dev/pts /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm

say() { echo "@@LABVM@@ $*"; }
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
done </etc/labvm/modules
say MODULES $modfail
ip link set lo up

set --
while IFS= read -r arg; do
	set -- "$@" "$arg"
done </etc/labvm/command
say RUN "$1"
"$@"
say EXIT $?
sync
poweroff -f
# Reached only if poweroff failed: PID 1 exits, the kernel panics and
# qemu (-no-reboot, panic=-1) ends.
exit 1
