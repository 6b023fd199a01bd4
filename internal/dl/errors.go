package dl

import (
	"fmt"
	"strings"
)

// openError classifies a dlopen failure. The library itself missing wraps
// notFound; anything else (a dependency missing, a file of the wrong
// architecture) is a broken installation and does not.
func openError(name, dlerr string, notFound error) error {
	if isNotFound(name, dlerr) {
		return fmt.Errorf("%w: %s", notFound, dlerr)
	}
	return fmt.Errorf("loading %s: %s", name, dlerr)
}

// isNotFound reports whether a dlerror message says that the library name
// itself, rather than something it needs, does not exist. glibc writes
// "NAME: cannot open shared object file: No such file or directory" and
// musl "Error loading shared library NAME: No such file or directory";
// a missing dependency is named in place of NAME.
func isNotFound(name, dlerr string) bool {
	const enoent = "No such file or directory"
	if !strings.HasSuffix(dlerr, enoent) {
		return false
	}
	return strings.HasPrefix(dlerr, name+": ") ||
		dlerr == "Error loading shared library "+name+": "+enoent
}
