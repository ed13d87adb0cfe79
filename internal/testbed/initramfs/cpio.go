package initramfs

import (
	"fmt"
	"io"
)

// cpio "newc" format (the one the kernel unpacks): a 110-byte ASCII
// header, the NUL-terminated name and the data, each padded to 4 bytes;
// the archive ends with the entry TRAILER!!!.
const (
	newcMagic = "070701"
	trailer   = "TRAILER!!!"
)

// Mode bits of cpio entries (as in stat(2)).
const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
)

// cpioWriter writes newc entries; inodes are numbered from 1.
type cpioWriter struct {
	w     io.Writer
	n     int64
	inode uint32
	err   error
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.n % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// header writes one entry's header and name; the caller writes size bytes
// of data and then calls pad.
func (c *cpioWriter) header(name string, mode uint32, size int64) {
	c.inode++
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	// Fields: ino mode uid gid nlink mtime filesize devmajor devminor
	// rdevmajor rdevminor namesize check.
	h := fmt.Sprintf("%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		newcMagic, c.inode, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(h))
	c.write(append([]byte(name), 0))
	c.pad()
}

func (c *cpioWriter) close() error {
	c.header(trailer, 0, 0)
	return c.err
}
