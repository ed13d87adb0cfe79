// Package initramfs builds a Linux initramfs, an uncompressed "newc" cpio
// archive, from files of this machine: the kernel lane's test guest and the
// lab's guest (knmstate lab up --kernel) boot Debian's kernel with one.
//
// An Archive is a tree of entries (directories, files copied from this
// machine or given as bytes, symlinks) written in sorted order with fixed
// owners and times, so the same inputs give the same bytes. AddHostPath
// copies a path the way this machine resolves it, symlinks included
// (Debian's /lib -> usr/lib), and AddProgram adds an ELF program with its
// interpreter and shared libraries (DT_NEEDED, resolved as the dynamic
// loader would), so a dynamically linked program of this machine (dnsmasq,
// iproute2's ip) runs in the guest. ResolveModules turns module names into
// the .ko files to load, dependencies first, from a kernel's modules.dep.
//
// It reads this machine's files and writes only where its caller asks; it
// never runs what it packs.
package initramfs
