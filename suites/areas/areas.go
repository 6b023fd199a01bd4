// Package areas registers every spec area: importing it for its side
// effects is how the runner gets them all.
package areas

import (
	_ "github.com/gdrcheck/gdrcheck/suites/bar1"
	_ "github.com/gdrcheck/gdrcheck/suites/collectives"
	_ "github.com/gdrcheck/gdrcheck/suites/container"
	_ "github.com/gdrcheck/gdrcheck/suites/fabric"
	_ "github.com/gdrcheck/gdrcheck/suites/kernel"
	_ "github.com/gdrcheck/gdrcheck/suites/mpi"
	_ "github.com/gdrcheck/gdrcheck/suites/negative"
	_ "github.com/gdrcheck/gdrcheck/suites/scaling"
	_ "github.com/gdrcheck/gdrcheck/suites/topology"
)
