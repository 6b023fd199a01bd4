package libverbs

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ParseRDMACoreVersion reads the rdma-core release from the name of the file
// libibverbs was loaded from. rdma-core names it
// libibverbs.so.SOVERSION.ABI.RELEASE.PATCH, so libibverbs.so.1.14.50.0 is
// rdma-core 50: the last-but-one number. ok is false for any other shape,
// such as the bare libibverbs.so.1, the libibverbs.so.1.0.0 of the
// libibverbs releases before rdma-core, or vendor builds whose release field
// is not a plain number.
func ParseRDMACoreVersion(file string) (version int, ok bool) {
	const prefix = "libibverbs.so."
	if !strings.HasPrefix(file, prefix) {
		return 0, false
	}
	fields := strings.Split(strings.TrimPrefix(file, prefix), ".")
	if len(fields) != 4 {
		return 0, false
	}
	for _, f := range fields {
		if f == "" || strings.Trim(f, "0123456789") != "" {
			return 0, false
		}
	}
	v, err := strconv.Atoi(fields[2])
	if err != nil || v < 12 { // rdma-core's first release was 12
		return 0, false
	}
	return v, true
}

// mappedPath is the first file in the maps file (/proc/self/maps) whose base
// name starts with prefix; "" if there is none.
func mappedPath(maps, prefix string) string {
	f, err := os.Open(maps)
	if err != nil {
		return ""
	}
	defer f.Close()
	return findMapping(f, prefix)
}

// findMapping scans lines of /proc/PID/maps, "address perms offset dev inode
// pathname", for a pathname whose base name starts with prefix. The
// pathname is everything from the line's first '/' (no other field has
// one), less the " (deleted)" the kernel adds to a file since replaced.
func findMapping(r io.Reader, prefix string) string {
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		path := strings.TrimSuffix(line[i:], " (deleted)")
		if strings.HasPrefix(filepath.Base(path), prefix) {
			return path
		}
	}
	return ""
}
