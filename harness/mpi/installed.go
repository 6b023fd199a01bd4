package mpi

import "path"

// Installed lists what of UCX and Open MPI the node has, found without
// running anything (Collect runs ompi_info and ucx_info, which take
// seconds): UCX's module directories, and ucx_info or ompi_info on PATH
// on the live host (look.Look; nil for a recording), or in a recording's
// gdrcheck/mpi.json. These are the users of GDRCopy a node would slow
// down without gdrdrv (UCX's gdr_copy transport; Open MPI over UCX).
func Installed(root string, live bool, look Commands) []string {
	var out []string
	mods, _ := moduleDirs(root, live, nil)
	for _, d := range mods {
		out = append(out, "UCX ("+d.Dir+")")
	}
	var cmds []Command
	if live {
		for _, argv := range [][]string{ucxInfoArgv, ompiInfoArgv} {
			c := Command{Argv: argv}
			c.Path = look.Look(argv[0])
			cmds = append(cmds, c)
		}
	} else if rec, err := readRecording(root); err == nil {
		cmds = []Command{rec.UCXInfo, rec.OMPIInfo}
	}
	for _, c := range cmds {
		if c.Found() && len(c.Argv) > 0 {
			out = append(out, path.Base(c.Argv[0])+" ("+c.Path+")")
		}
	}
	return out
}
