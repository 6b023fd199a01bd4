package mpi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Recording is where a snapshot keeps the commands' output.
const Recording = "gdrcheck/mpi.json"

// outputLimit caps each command's output: `ompi_info --parsable --all`
// prints about 300 KiB, `ucx_info -d` a few KiB per device.
var outputLimit = bounded.Limit{Bytes: 8 << 20, What: "a command's output", Why: "ompi_info --all prints about 300 KiB"}

// recordingLimit caps gdrcheck/mpi.json: three outputs and their names.
var recordingLimit = bounded.Limit{Bytes: 3*outputLimit.Bytes + 1<<20, What: Recording, Why: "it holds three capped command outputs"}

// commandTimeout bounds each command: ompi_info opens every component.
const commandTimeout = 60 * time.Second

var (
	ompiInfoArgv     = []string{"ompi_info", "--parsable", "--all"}
	ucxInfoArgv      = []string{"ucx_info", "-d"}
	mpichVersionArgv = []string{"mpichversion"}
)

// Collect reads the node's MPI and UCX under root. On the live host it
// runs ompi_info and ucx_info from PATH; under a recording it reads their
// recorded output (Recording), and Recorded is false without one. gdr is
// what harness/node read of gdrdrv under the same root (Host.GDRCopy): the
// mpi facts do not read it again.
func Collect(root string, live bool, gdr node.GDRCopy) Facts {
	f := Facts{}
	if live {
		f.Recorded = true
		f.OMPIInfo = run(ompiInfoArgv)
		f.UCXInfo = run(ucxInfoArgv)
		f.MPICHVersion = run(mpichVersionArgv)
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

// capWriter keeps the first lim bytes written and counts the rest.
type capWriter struct {
	buf  bytes.Buffer
	lim  int64
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.lim - int64(w.buf.Len())
	if int64(len(p)) > room {
		w.over = true
		w.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return w.buf.Write(p)
}

// run runs argv found on PATH, its output capped; a command not found
// comes back with no Path.
func run(argv []string) Command {
	c := Command{Argv: argv}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		return c
	}
	c.Path = p
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, argv[1:]...)
	out := &capWriter{lim: outputLimit.Bytes}
	var stderr capWriter
	stderr.lim = 64 << 10
	cmd.Stdout, cmd.Stderr = out, &stderr
	err = cmd.Run()
	c.Output = out.buf.String()
	switch {
	case ctx.Err() != nil:
		c.Error = fmt.Sprintf("%s: killed after %s", path.Base(p), commandTimeout)
	case err != nil:
		c.Error = fmt.Sprintf("%s: %v: %s", path.Base(p), err, bounded.ClipString(stderr.buf.String(), 512))
	case out.over:
		c.Error = fmt.Sprintf("%s: output cut at %s", path.Base(p), bounded.Size(outputLimit.Bytes))
	}
	return c
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
