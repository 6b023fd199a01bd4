package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// A merged job's results.json (schema v2) holds in full only the nodes a
// person must read there (the failing ones, the allocation); every other
// node entry is a ref, {"name": N, "ref": "nodes/N/results.json"}, to the
// node's own results.json, which the job directory holds anyway: a job
// of 16,384 nodes is a few MB, not a second copy of 3 GB of evidence. A
// ref may carry "suites": those the merge added to the node (the compare
// suite of --compare-to), appended to the file's. Scan reads each ref's
// file in its place, so its readers see every node in full, in order.

// SchemaV1 is results.json before refs; it still reads, refs excepted.
const SchemaV1 = "gdrcheck.results/v1"

// RefFile is the file the ref of node name names, relative to the merged
// results.json's directory: the only path a ref may hold.
func RefFile(name string) string { return "nodes/" + name + "/results.json" }

// refLimit caps a node's own results.json read through a ref, as
// slurm's collector caps it.
var refLimit = bounded.Limit{Bytes: 256 << 20, What: "a node's results.json a merged job refers to",
	Why: "a node's is about 200 KB"}

// refEntry is a ref as written.
type refEntry struct {
	Name   string  `json:"name"`
	Ref    string  `json:"ref"`
	Suites []Suite `json:"suites,omitempty"`
}

// Ref writes a ref entry for node name, with the suites the merge added
// to its own file's.
func (e *Encoder) Ref(name string, added []Suite) error {
	if e.nodes > 0 {
		e.write(",")
	}
	e.write("\n    ")
	ref := refEntry{Name: name, Ref: RefFile(name), Suites: added}
	if !e.lines {
		e.value(ref, "    ")
	} else if b, err := json.Marshal(ref); err != nil {
		e.err = errors.Join(e.err, fmt.Errorf("encoding results: %w", err))
	} else if e.err == nil {
		_, e.err = e.w.Write(b)
	}
	e.nodes++
	return e.err
}

// checkRef refuses a ref that is not exactly RefFile of a host name, or
// that says more than a ref may: the path is untrusted, so it is never
// taken from the file, only compared with the one the name makes.
func checkRef(n Node, where string) error {
	if err := hostlist.Valid(n.Name); err != nil {
		return fmt.Errorf("%s: a ref's name: %w", where, err)
	}
	where = fmt.Sprintf("%s (named %q)", where, n.Name)
	if n.Ref != RefFile(n.Name) {
		return fmt.Errorf("%s: ref %q: want %q, the node's own results.json", where, bounded.ClipString(n.Ref, 300), RefFile(n.Name))
	}
	if n.Status != "" || n.Reason != "" || n.Facts != nil || n.GPUs != nil || n.Evidence != nil || n.Runs != nil || n.Steps != nil ||
		n.Profile != "" || n.Action != "" || !n.Started.IsZero() || !n.Finished.IsZero() {
		return fmt.Errorf("%s: a ref holds only name, ref and the suites the merge added", where)
	}
	return checkActions(n, where)
}

// refReader reads the files refs name, through a root on the merged
// results.json's directory, so no ref (nor a link on its way) reads
// outside it.
type refReader struct {
	dir  string
	once sync.Once // opens root, for readers on several CPUs
	root *os.Root
	err  error
}

func (rr *refReader) close() {
	if rr.root != nil {
		rr.root.Close()
	}
}

// node is the node ref stands for: its file's one node, named as the ref
// is, its raw logs relative to the merged file, and the ref's suites
// added.
func (rr *refReader) node(ref Node) (Node, error) {
	n, _, err := rr.nodeInto(ref, nil)
	return n, err
}

// nodeInto is node with its evidence decoded into ev (nil: kept raw);
// set says it had evidence.
func (rr *refReader) nodeInto(ref Node, ev any) (_ Node, set bool, _ error) {
	rr.once.Do(func() { rr.root, rr.err = os.OpenRoot(rr.dir) })
	if rr.err != nil {
		return Node{}, false, rr.err
	}
	path := filepath.Join(rr.dir, filepath.FromSlash(ref.Ref))
	f, err := rr.root.Open(ref.Ref)
	if err != nil {
		return Node{}, false, fmt.Errorf("its ref %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Node{}, false, fmt.Errorf("its ref %s: not a regular file", path)
	}
	var into *evidenceInto
	if ev != nil {
		into = &evidenceInto{v: ev}
	}
	var got []Node
	_, err = scanFileInto(f, path, refLimit.Bytes, into, func(n Node) error {
		if len(got) > 0 {
			return fmt.Errorf("%s: holds more than one node, where a node's results carry exactly one", path)
		}
		got = append(got, n)
		return nil
	}, nil)
	if err != nil {
		return Node{}, false, fmt.Errorf("its ref: %w", err)
	}
	n := got[0]
	if n.Name != ref.Name {
		return Node{}, false, fmt.Errorf("its ref %s reports node %q: a copy of another node's results", path, bounded.ClipString(n.Name, 80))
	}
	dir := filepath.Dir(filepath.FromSlash(ref.Ref))
	for i := range n.Runs {
		if n.Runs[i].Log != "" {
			n.Runs[i].Log = filepath.Join(dir, n.Runs[i].Log)
		}
	}
	n.Suites = append(n.Suites, ref.Suites...)
	return n, into != nil && into.set, nil
}

// Index is a results.json's nodes without the files its refs name: each
// is read when asked for, one at a time, so two merged jobs compare in
// the memory of a few nodes; At and Node may be called on several CPUs
// at once. A file without refs (a run's, a merged job of the previous
// release) is held whole.
type Index struct {
	Head    *Results // all but the nodes
	entries []Node   // held nodes and refs, in order
	byName  map[string]int
	rr      *refReader
	path    string
}

// OpenIndex reads path's head and node entries, checked as Scan checks
// them, and none of the files its refs name.
func OpenIndex(path string) (*Index, error) {
	x := &Index{byName: map[string]int{}, rr: &refReader{dir: filepath.Dir(path)}, path: path}
	keep := func(n Node) (Node, error) { return n, nil }
	head, err := scanPath(path, func(n Node) error {
		x.byName[n.Name] = len(x.entries)
		x.entries = append(x.entries, n)
		return nil
	}, keep)
	if err != nil {
		return nil, err
	}
	head.groups = nil
	x.Head = head
	return x, nil
}

// Len is the number of node entries.
func (x *Index) Len() int { return len(x.entries) }

// Names are the nodes' names, in order.
func (x *Index) Names() []string {
	out := make([]string, len(x.entries))
	for i, n := range x.entries {
		out[i] = n.Name
	}
	return out
}

// At is the i-th node, in full, read from its own file for a ref.
func (x *Index) At(i int) (Node, error) {
	n := x.entries[i]
	if n.Ref == "" {
		return n, nil
	}
	full, err := x.rr.node(n)
	if err != nil {
		return Node{}, fmt.Errorf("reading %s: nodes[%d] (named %q): %w", x.path, i, n.Name, err)
	}
	return full, nil
}

// Node is the node named name (the last of that name), false where
// there is none.
func (x *Index) Node(name string) (Node, bool, error) {
	i, ok := x.byName[name]
	if !ok {
		return Node{}, false, nil
	}
	n, err := x.At(i)
	return n, err == nil, err
}

// Tool is the head's.
func (x *Index) Tool() Tool { return x.Head.Tool }

// Runs are the head's cross-node runs.
func (x *Index) Runs() []Run { return x.Head.Runs }

// Close releases the root refs are read through.
func (x *Index) Close() { x.rr.close() }

// errRefHere is a ref where none can be read: in a node's own file.
var errRefHere = errors.New("a ref in a file read without its job directory (a node's own results.json refers to nothing)")
