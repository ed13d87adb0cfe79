# shellcheck shell=bash
# What the kernel lane's guest needs to run NetworkManager the way
# internal/testbed/nmrun runs it (a private dbus-daemon and NetworkManager
# per namespace): sourced by run.sh.

# nm_programs prints the ELF files to add with their interpreter and
# libraries (hack/initramfs -program): NetworkManager, nmcli, dbus-daemon,
# and NetworkManager's plugins, which it dlopens from its versioned
# directory (they are in nobody's DT_NEEDED). A plugin whose libraries
# are missing would only be skipped with a warning at start; adding them
# all keeps the guest's NetworkManager the one Debian ships.
nm_programs() {
	local prog
	for prog in /usr/sbin/NetworkManager /usr/bin/nmcli /usr/bin/dbus-daemon; do
		[[ -x $prog ]] || { echo "kernel-lane: error: $prog not found; run make setup (network-manager, dbus-daemon)" >&2; return 1; }
		echo "$prog"
	done
	local plugdir
	plugdir=$(nm_plugin_dir) || return 1
	ls "$plugdir"/*.so
}

# nm_plugin_dir is NetworkManager's plugin directory, named after its
# version (/usr/lib/x86_64-linux-gnu/NetworkManager/1.42.4).
nm_plugin_dir() {
	local ver
	ver=$(/usr/sbin/NetworkManager --version) || return 1
	ver=${ver%%-*}
	local dir=/usr/lib/x86_64-linux-gnu/NetworkManager/$ver
	[[ -d $dir ]] || { echo "kernel-lane: error: no NetworkManager plugin directory $dir" >&2; return 1; }
	echo "$dir"
}

# nm_tree ROOT adds to the staged tree what NetworkManager and dbus-daemon
# look up besides their libraries: root in /etc/passwd and /etc/group
# (dbus-daemon resolves the peers' credentials, NetworkManager its own
# user), files-only name service, a machine id (NetworkManager derives
# stable ids from it, and warns without one), and the compile-time state
# directory nmrun binds its own over.
nm_tree() {
	local root=$1
	mkdir -p "$root/etc" "$root/var/lib/NetworkManager" "$root/etc/NetworkManager"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\n' >"$root/etc/group"
	printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n' >"$root/etc/nsswitch.conf"
	# Fixed, so every lane run is alike; private to the guest.
	printf '6b6e6d73746174656b65726e656c6c61\n' >"$root/etc/machine-id"
}
