package mpi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Recording is where a snapshot keeps the commands' output.
const Recording = "gdrcheck/mpi.json"

// OutputLimit caps each command's output (the runner of Commands keeps
// to it): `ompi_info --parsable --all` prints about 300 KiB, `ucx_info
// -d` a few KiB per device.
var OutputLimit = bounded.Limit{Bytes: 8 << 20, What: "a command's output", Why: "ompi_info --all prints about 300 KiB"}

// recordingLimit caps gdrcheck/mpi.json: three outputs and their names.
var recordingLimit = bounded.Limit{Bytes: 3*OutputLimit.Bytes + 1<<20, What: Recording, Why: "it holds three capped command outputs"}

// Commands runs the live host's build-facts commands for Collect and
// finds them for Installed. harness/mpi starts no process itself: the
// launch core in harness/bench does (bench.BuildFacts), so one place
// bounds every child gdrcheck starts.
type Commands interface {
	// Look finds a command on PATH without running it; "" when absent.
	Look(name string) string
	// Run runs argv found on PATH, its output capped at OutputLimit; a
	// command not found comes back with no Path.
	Run(argv []string) Command
}

var (
	ompiInfoArgv     = []string{"ompi_info", "--parsable", "--all"}
	ucxInfoArgv      = []string{"ucx_info", "-d"}
	mpichVersionArgv = []string{"mpichversion"}
)

// Collect reads the node's MPI and UCX under root. On the live host it
// runs ompi_info and ucx_info from PATH through cmds; under a recording it
// reads their recorded output (Recording), and Recorded is false without
// one (cmds may be nil there). gdr is
// what harness/node read of gdrdrv under the same root (Host.GDRCopy): the
// mpi facts do not read it again.
func Collect(root string, live bool, gdr node.GDRCopy, cmds Commands) Facts {
	f := Facts{}
	if live {
		f.Recorded = true
		f.OMPIInfo = cmds.Run(ompiInfoArgv)
		f.UCXInfo = cmds.Run(ucxInfoArgv)
		f.MPICHVersion = cmds.Run(mpichVersionArgv)
		f.UCXTLS = os.Getenv("UCX_TLS")
	} else {
		rec, err := readRecording(root)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			f.Errors = append(f.Errors, err.Error())
		default:
			f = rec
			f.Recorded = true
			f.Errors, f.UCXModules, f.GDRDrv = nil, nil, false
		}
	}
	f.UCXModules, f.Errors = moduleDirs(root, live, f.Errors)
	f.GDRDrv = gdr.Loaded
	return f
}

func readRecording(root string) (Facts, error) {
	var f Facts
	r, err := os.OpenRoot(root)
	if err != nil {
		return f, err
	}
	defer r.Close()
	b, err := bounded.ReadFileFS(r.FS(), Recording, recordingLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		return f, fmt.Errorf("reading %q: %w", filepath.Join(root, Recording), err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("reading %q: %w", filepath.Join(root, Recording), err)
	}
	return f, nil
}

// moduleDirs lists the UCX module files of each ModuleDirs directory that
// exists. A recorded tree is read through os.Root, so no link in it leads
// outside; on the live host "/" holds everything.
func moduleDirs(root string, live bool, errs []string) ([]ModuleDir, []string) {
	var fsys fs.FS
	if live {
		fsys = os.DirFS("/")
	} else {
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, append(errs, err.Error())
		}
		defer r.Close()
		fsys = r.FS()
	}
	var out []ModuleDir
	for _, d := range ucx.ModuleDirs {
		ents, err := fs.ReadDir(fsys, d)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Sprintf("reading %q: %v", filepath.Join(root, d), err))
			}
			continue
		}
		md := ModuleDir{Dir: "/" + d}
		for _, e := range ents {
			m := ucx.Module(e.Name())
			if m == "" {
				continue
			}
			md.Files = append(md.Files, e.Name())
			if !slices.Contains(md.Modules, m) {
				md.Modules = append(md.Modules, m)
			}
		}
		if len(md.Files) > 0 {
			slices.Sort(md.Modules)
			out = append(out, md)
		}
	}
	return out, errs
}

// Record writes what Collect needs of the live host into a snapshot at
// dst, through the node snapshot's writer: the commands' output and the
// module files as empty files where they lie. gdrdrv's traces are the node
// snapshot's (node.Host.Snapshot records sys/module/gdrdrv).
func Record(dst string, f Facts) error {
	w := node.NewSnapshotWriter(dst)
	for _, d := range f.UCXModules {
		for _, name := range d.Files {
			w.WriteFile(path.Join(d.Dir, name), nil)
		}
	}
	rec := f
	rec.UCXModules, rec.Errors = nil, nil
	w.JSON(Recording, rec)
	return w.Err()
}
