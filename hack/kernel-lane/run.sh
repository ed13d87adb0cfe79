#!/usr/bin/env bash
# The kernel lane (`make test-kernel`): runs the -tags qemu test binaries of
# the packages listed in hack/kernel-lane/packages inside a qemu guest that
# boots Debian's own kernel (linux-image-amd64), because this VM's kernel
# lacks bonding, 8021q, dummy, VRF, team, openvswitch and bridge VLAN
# filtering. Steps:
#   1. fetch the kernel .deb with apt, extract vmlinuz (and the vmlinux ELF
#      inside it) + modules into .cache/kernel-lane/ (reused while the
#      Debian version is unchanged): kernel.sh;
#   2. build a busybox initramfs with the modules (and their dependencies
#      from modules.dep), the test binaries and init.sh as /init;
#   3. boot it under qemu (TCG), serial console to a log file;
#   4. read the sentinels from the log: the lane fails when a binary fails,
#      a test is skipped, a module does not load, or the guest does not
#      reach the end.
#
# Environment knobs (all optional):
#   KERNEL_LANE_TIMEOUT       whole-guest wall-clock limit in seconds (1800)
#   KERNEL_LANE_BOOT_TIMEOUT  limit in seconds for the guest to reach /init (300)
#   KERNEL_LANE_TEST_TIMEOUT  -test.timeout of each binary in the guest (20m)
#   KERNEL_LANE_SMP           guest CPUs (2)
#   KERNEL_LANE_MEM           guest memory in MiB (1024)
#   KERNEL_LANE_PACKAGES      space-separated packages instead of the packages file
#   KERNEL_LANE_TAGS          build tags added to qemu (nmlane: the NetworkManager scenarios)
#   KERNEL_LANE_RUN           -test.run pattern of each binary (unset: the packages
#                             file's pattern of the package, else all tests)
#   KERNEL_LANE_BENCH         -test.bench pattern of each binary (no benchmarks when unset)
#   KERNEL_LANE_BENCHTIME     -test.benchtime with KERNEL_LANE_BENCH (1x)
#   KERNEL_LANE_KEEP          keep the work dir (initramfs, serial log) if set
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
lane=hack/kernel-lane
cache=$repo/.cache/kernel-lane

timeout_s=${KERNEL_LANE_TIMEOUT:-1800}
boot_timeout_s=${KERNEL_LANE_BOOT_TIMEOUT:-300}
test_timeout=${KERNEL_LANE_TEST_TIMEOUT:-20m}
smp=${KERNEL_LANE_SMP:-2}
mem=${KERNEL_LANE_MEM:-1024}
sentinel='@@KNM-LANE@@'

log() { echo "kernel-lane: $*"; }
die() { echo "kernel-lane: error: $*" >&2; exit 1; }

start=$(date +%s.%N)
elapsed() { awk -v s="$start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/knm-kernel-lane.XXXXXX")
qemu_pid=
# shellcheck disable=SC2317 # reached through the EXIT trap
cleanup() {
	local rc=$?
	if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	if [[ -n ${KERNEL_LANE_KEEP:-} ]]; then
		log "kept work dir $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "kernel-lane: error: command failed at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'exit 130' INT
trap 'exit 143' TERM

for tool in qemu-system-x86_64 go /bin/busybox /usr/sbin/wpa_supplicant; do
	command -v "$tool" >/dev/null || die "$tool not found; run make setup"
done

# ---- 1. Debian's kernel -------------------------------------------------

kdir=$(bash "$lane/kernel.sh" | tail -n 1)
[[ -n $kdir && -f $kdir/kver ]] || die "hack/kernel-lane/kernel.sh gave no kernel"
kver=$(cat "$kdir/kver")
log "kernel $kver ready ($(elapsed)s)"

# ---- 2. initramfs ---------------------------------------------------------

# The staged tree: /init, the lane's files and the test binaries; busybox
# (with the /bin -> usr/bin link of this machine) and the modules are
# added by hack/initramfs, the builder the lab's guest mode uses too.
root=$work/root
mkdir -p "$root"/{dev,proc,sys,run,tmp,etc/lane,pkg,usr/bin}
ln -s busybox "$root/usr/bin/sh"
install -m 0755 "$lane/init.sh" "$root/init"
{
	printf 'LANE_TEST_TIMEOUT=%q\n' "$test_timeout"
	printf 'LANE_TEST_RUN=%q\n' "${KERNEL_LANE_RUN:-}"
	printf 'LANE_TEST_BENCH=%q\n' "${KERNEL_LANE_BENCH:-}"
	printf 'LANE_TEST_BENCHTIME=%q\n' "${KERNEL_LANE_BENCHTIME:-1x}"
} >"$root/etc/lane/env"

# Test binaries: one per listed package, run in a copy of its directory's
# testdata so relative paths resolve as under go test.
testlist=$root/etc/lane/tests
: >"$testlist"
pkgs=()
while read -r p run _; do
	[[ -z $p || $p == \#* ]] && continue
	p=${p#./}
	if [[ ! -d $p ]]; then
		log "skip $p: package does not exist yet"
		continue
	fi
	bin=$(echo "$p" | tr '/.' '__').test
	mkdir -p "$root/pkg/$p"
	# make test vets without the tag; the qemu-only files are vetted here.
	go vet -tags "qemu${KERNEL_LANE_TAGS:+,$KERNEL_LANE_TAGS}" "./$p" </dev/null
	CGO_ENABLED=0 go test -c -tags "qemu${KERNEL_LANE_TAGS:+,$KERNEL_LANE_TAGS}" -o "$root/pkg/$p/$bin" "./$p" </dev/null
	if [[ ! -f $root/pkg/$p/$bin ]]; then
		log "skip $p: no test files"
		continue
	fi
	[[ -d $p/testdata ]] && cp -r "$p/testdata" "$root/pkg/$p/testdata"
	# A package's own -test.run pattern (the packages file's second
	# field) unless KERNEL_LANE_RUN gives one for all.
	[[ -n ${KERNEL_LANE_RUN:-} ]] && run=
	echo "$bin /pkg/$p ${run:-}" >>"$testlist"
	pkgs+=("$p")
done < <(if [[ -n ${KERNEL_LANE_PACKAGES:-} ]]; then tr ' ' '\n' <<<"$KERNEL_LANE_PACKAGES"; else cat "$lane/packages"; fi)
((${#pkgs[@]})) || die "no test binaries built (check $lane/packages)"
log "built ${#pkgs[@]} test binaries: ${pkgs[*]} ($(elapsed)s)"

# Modules: each listed one with its dependencies (modules.dep, soft
# dependencies), in modprobe's load order, uncompressed, listed in
# /etc/lane/modules. wpa_supplicant (with its libraries) is the kernel
# backend's supplicant for 802.1X and MACsec MKA.
#
# Open vSwitch (Debian's openvswitch-switch) for the OVS tests on the kernel
# datapath: its programs, nsenter, their shared libraries and the schema,
# each at its own path.
host_paths=(/bin/busybox /usr/share/openvswitch/vswitch.ovsschema)
for prog in /usr/sbin/ovsdb-server /usr/sbin/ovs-vswitchd /usr/bin/ovsdb-tool /usr/bin/ovs-vsctl /usr/bin/nsenter; do
	[[ -x $prog ]] || die "$prog not found; run make setup (openvswitch-switch, util-linux)"
	host_paths+=("$prog")
	while read -r lib; do
		host_paths+=("$lib")
	done < <(ldd "$prog" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
done
host_args=()
while read -r p; do
	host_args+=(-host-path "$p")
done < <(printf '%s\n' "${host_paths[@]}" | sort -u)
# NetworkManager for the NetworkManager backend's tests (internal/testbed/
# nmrun runs a private one per namespace): nm_programs in nm.sh.
# shellcheck source=hack/kernel-lane/nm.sh
. "$lane/nm.sh"
nm_args=()
while read -r p; do
	nm_args+=(-program "$p")
done < <(nm_programs)
nm_tree "$root"
initrd=$work/initrd.cpio
go run ./hack/initramfs -out "$initrd" -kernel-dir "$kdir" -modules "$lane/modules" \
	-module-dir /lib/modules -module-list /etc/lane/modules \
	"${host_args[@]}" -program /usr/sbin/wpa_supplicant "${nm_args[@]}" -tree "$root" </dev/null
log "initramfs $(du -h "$initrd" | cut -f1) ($(elapsed)s)"

# ---- 3. boot ----------------------------------------------------------------

serial=$work/serial.log
: >"$serial"
esc=$'\x1b'
# clean drops carriage returns and the terminal escapes firmware and kernel
# print, and starts every sentinel on its own line (firmware text can
# precede the first one).
clean() {
	sed -E -e $'s/\r//g' -e "s/$esc\\[[0-9;?]*[A-Za-z]//g" -e "s/${esc}c//g" \
		-e "s/.*($sentinel)/\\1/"
}
# stream prints the serial log's complete lines written since the last call
# (all of it with "final"), so CI shows the tests as they run.
offset=0
stream() {
	local LC_ALL=C size chunk
	size=$(stat -c %s "$serial")
	((size > offset)) || return 0
	chunk=$(tail -c +$((offset + 1)) "$serial" | head -c $((size - offset)); echo x)
	chunk=${chunk%x}
	if [[ ${1:-} != final ]]; then
		[[ $chunk == *$'\n'* ]] || return 0
		chunk=${chunk%$'\n'*}$'\n'
	fi
	offset=$((offset + ${#chunk}))
	[[ $chunk == *$'\n' ]] || chunk+=$'\n'
	printf '%s' "$chunk" | clean | sed -e "s/^$sentinel /kernel-lane: guest: /"
}
# boot KERNEL: run the guest once, streaming its console; sets booted (s to
# /init, empty if never reached) and guest_s. panic=-1 + -no-reboot end the
# VM if /init dies; loglevel=3 keeps kernel chatter out of the test output.
# TCG: KVM is listed on these VMs but hangs. rcupdate.rcu_expedited=1: link
# and namespace changes wait for RCU grace periods, slow on an emulated CPU
# (the guest's run took 250 s instead of 275 with it).
boot() {
	local kernel=$1 boot_start deadline boot_deadline
	: >"$serial"
	offset=0
	booted=
	boot_start=$(date +%s.%N)
	qemu-system-x86_64 \
		-accel tcg -cpu max -smp "$smp" -m "$mem" \
		-nodefaults -nographic -no-reboot -monitor none -nic none \
		-serial "file:$serial" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 quiet loglevel=3 no_timer_check rcupdate.rcu_expedited=1 rdinit=/init" \
		</dev/null >"$work/qemu.out" 2>&1 &
	qemu_pid=$!
	log "guest booting $(basename "$kernel") (qemu pid $qemu_pid, timeout ${timeout_s}s)"
	deadline=$(($(date +%s) + timeout_s))
	boot_deadline=$(($(date +%s) + boot_timeout_s))
	while kill -0 "$qemu_pid" 2>/dev/null; do
		stream
		if [[ -z $booted ]] && grep -q "$sentinel BOOTED" "$serial" 2>/dev/null; then
			booted=$(awk -v s="$boot_start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
			log "guest booted in ${booted}s"
		fi
		if [[ -z $booted ]] && (($(date +%s) > boot_deadline)); then
			log "guest did not reach /init within ${boot_timeout_s}s; killing qemu"
			kill "$qemu_pid" 2>/dev/null || true
			break
		fi
		if (($(date +%s) > deadline)); then
			log "guest did not finish within ${timeout_s}s; killing qemu"
			kill "$qemu_pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	wait "$qemu_pid" 2>/dev/null || true
	qemu_pid=
	stream final
	guest_s=$(awk -v s="$boot_start" -v n="$(date +%s.%N)" 'BEGIN { printf "%.1f", n - s }')
}

# The uncompressed vmlinux boots through its PVH entry and skips the
# in-guest xz decompression, seconds under TCG. If it does not reach /init,
# the lane boots the regular bzImage once more before judging.
if [[ -f $kdir/vmlinux ]]; then
	boot "$kdir/vmlinux"
	if ! grep -q "$sentinel BOOTED" "$serial"; then
		log "guest did not reach /init from vmlinux (qemu: $(tail -n 3 "$work/qemu.out" | tr '\n' ' ')); retrying with vmlinuz"
		boot "$kdir/vmlinuz"
	fi
else
	boot "$kdir/vmlinuz"
fi

# ---- 4. results -------------------------------------------------------------

clean <"$serial" >"$work/serial.txt"

fail=0
if ! grep -q "^$sentinel BOOTED" "$work/serial.txt"; then
	log "FAIL: the guest never reached /init; qemu said:"
	tail -n 20 "$work/qemu.out"
	fail=1
elif ! grep -q "^$sentinel DONE" "$work/serial.txt"; then
	log "FAIL: the guest did not reach the final sentinel"
	fail=1
fi
if grep -q "^$sentinel BOOTED" "$work/serial.txt" && ! grep -q "^$sentinel MODULES 0$" "$work/serial.txt"; then
	log "FAIL: some kernel modules did not load:"
	grep -i 'insmod' "$work/serial.txt" || true
	fail=1
fi
module=$(go list -m)
while read -r bin dir; do
	pkg=$module/${dir#/pkg/}
	rc=$(awk -v s="$sentinel" -v b="$bin" '$1 == s && $2 == "RESULT" && $3 == b { print $4 }' "$work/serial.txt")
	if [[ -z $rc ]]; then
		printf 'FAIL\t%s\t(kernel lane: did not finish)\n' "$pkg"
		fail=1
	elif [[ $rc != 0 ]]; then
		printf 'FAIL\t%s\t(kernel lane: exit %s)\n' "$pkg" "$rc"
		fail=1
	else
		printf 'ok  \t%s\t(kernel lane)\n' "$pkg"
	fi
done <"$testlist"
# The lane exists so these tests run: a skip is a failure here.
if grep -q -- '--- SKIP' "$work/serial.txt"; then
	log "FAIL: tests were skipped in the guest (they must run here):"
	grep -- '--- SKIP' "$work/serial.txt"
	fail=1
fi

passed=$(grep -c '^--- PASS' "$work/serial.txt" || true)
failed=$(grep -c '^--- FAIL' "$work/serial.txt" || true)
skipped=$(grep -c '^--- SKIP' "$work/serial.txt" || true)
log "kernel $kver, guest boot ${booted:-?}s, guest total ${guest_s}s, lane total $(elapsed)s"
if ((fail)); then
	cp "$work/serial.txt" "$cache/last-serial.log"
	log "serial log kept in $cache/last-serial.log"
	((failed)) || failed=1
fi
summary="kernel-lane: $passed passed, $failed failed"
if ((skipped)); then
	summary+=", $skipped skipped"
fi
echo "$summary"
exit "$fail"
