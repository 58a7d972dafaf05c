//go:build linux

package udp

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketDrops reads the count of datagrams the kernel dropped for the
// socket (its receive buffer full, or a filter refused them) from the
// drops column of /proc/self/net/udp or udp6, found by the socket's
// inode.
func socketDrops(raw syscall.RawConn) (uint64, bool) {
	var ino uint64
	var st unix.Stat_t
	if raw.Control(func(fd uintptr) {
		if unix.Fstat(int(fd), &st) == nil {
			ino = st.Ino
		}
	}) != nil || ino == 0 {
		return 0, false
	}
	inode := strconv.AppendUint(nil, ino, 10)
	for _, table := range []string{"/proc/self/net/udp", "/proc/self/net/udp6"} {
		if n, ok := dropsOf(table, inode); ok {
			return n, true
		}
	}
	return 0, false
}

// dropsOf finds the socket with inode in a /proc/net/udp table: "sl
// local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer
// drops".
func dropsOf(table string, inode []byte) (uint64, bool) {
	f, err := os.Open(table)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 13 || !bytes.Equal(fields[9], inode) {
			continue
		}
		n, err := strconv.ParseUint(string(fields[12]), 10, 64)
		return n, err == nil
	}
	return 0, false
}
