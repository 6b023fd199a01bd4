package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/hostlist"
)

// Encoder writes a results.json as a stream, one node at a time, so a job
// of a thousand nodes is never held as one document: NewEncoder opens it,
// Node writes each node, and End closes it with the head (tool, start and
// finish), known only once every node is read, and the cross-node runs.
type Encoder struct {
	w     *bufio.Writer
	nodes int
	err   error
	// lines writes each node compact on a line of its own
	// (NewLineEncoder).
	lines bool
	// groups writes folded under "groups" (EndFolded).
	groups bool
	folded []Node
}

// NewEncoder starts a results.json on w.
func NewEncoder(w io.Writer) *Encoder {
	e := &Encoder{w: bufio.NewWriterSize(w, 64<<10)}
	e.write("{\n")
	e.field("schema", Schema, true)
	e.write("  \"nodes\": [")
	return e
}

func (e *Encoder) write(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *Encoder) value(v any, prefix string) {
	if e.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil {
		e.err = fmt.Errorf("encoding results: %w", err)
		return
	}
	_, e.err = e.w.Write(b)
}

func (e *Encoder) field(name string, v any, comma bool) {
	e.write("  \"" + name + "\": ")
	e.value(v, "  ")
	if comma {
		e.write(",")
	}
	e.write("\n")
}

// NewLineEncoder starts a results.json that holds each node compact, on
// a line of its own: a merged job's, where indentation would double the
// bytes written (and read back) for every node.
func NewLineEncoder(w io.Writer) *Encoder {
	e := NewEncoder(w)
	e.lines = true
	return e
}

// Node writes one node entry.
func (e *Encoder) Node(n Node) error {
	n.Settle()
	if e.nodes > 0 {
		e.write(",")
	}
	e.write("\n    ")
	if e.lines {
		e.line(n)
	} else {
		e.value(n, "    ")
	}
	e.nodes++
	return e.err
}

// line writes n compact. Its raw evidence, half a node's bytes, is
// valid JSON already (it was decoded as such): its line breaks are only
// whitespace, as a JSON string cannot hold one, so dropping them (and
// the indentation after) is all it takes, without the JSON scanner
// Marshal would run over it again.
func (e *Encoder) line(n Node) {
	if e.err != nil {
		return
	}
	ev := n.Evidence
	n.Evidence = nil
	b, err := json.Marshal(n)
	if err != nil {
		e.err = fmt.Errorf("encoding results: %w", err)
		return
	}
	if len(ev) == 0 {
		_, e.err = e.w.Write(b)
		return
	}
	e.w.Write(b[:len(b)-1]) // the closing brace comes after the evidence
	e.w.WriteString(`,"evidence":`)
	for len(ev) > 0 {
		i := bytes.IndexByte(ev, '\n')
		if i < 0 {
			e.w.Write(ev)
			break
		}
		e.w.Write(ev[:i])
		ev = bytes.TrimLeft(ev[i+1:], " \t\r")
	}
	_, e.err = e.w.WriteString("}")
}

// End closes the document with head's tool, start, finish and runs.
func (e *Encoder) End(head *Results) error {
	if e.nodes > 0 {
		e.write("\n  ")
	}
	e.write("],\n")
	if e.groups {
		e.writeGroups()
	}
	e.field("tool", head.Tool, true)
	e.field("started", head.Started, true)
	if len(head.Runs) > 0 {
		e.field("runs", head.Runs, true)
	}
	e.field("finished", head.Finished, false)
	e.write("}\n")
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

// What Scan reads of a results.json: it is decoded one node (or run) at a
// time, each at most ValueLimit.Bytes, and at most MaxNodes nodes. The
// node of an 8-GPU, 8-NIC host with every suite is about 90 KB
// (fixtures/results, BenchmarkCollect1024Nodes); a merged job refers to
// its healthy nodes' own files (refs.go), and a reader never holds more
// than one node's bytes.
var ValueLimit = bounded.Limit{Bytes: 8 << 20, What: "one node or run of a results.json",
	Why: "the node of an 8-GPU host with every suite is about 90 KB"}

// MaxNodes is the most node entries a results.json may hold: the largest
// allocation (hostlist.MaxNodes, 16,384 hosts of 8 GPUs), each host
// reporting twice with a container image (<node>-container), and the
// allocation's entry.
const MaxNodes = 2*hostlist.MaxNodes + 1

// Scan reads a results.json one node at a time: visit gets each node as
// it is decoded, a ref's read from the file it names (refs.go), and the
// returned document holds everything but the nodes. A merged job's
// results.json is never decoded whole: a node or run larger than
// ValueLimit, or more than MaxNodes nodes, is an error wrapping
// bounded.ErrTooLarge.
func Scan(path string, visit func(Node) error) (*Results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rr := &refReader{dir: filepath.Dir(path)}
	defer rr.close()
	r, err := scanFile(f, path, -1, visit, rr.node)
	if r != nil {
		r.groups = nil // ReadFolded's
	}
	return r, err
}

// ScanFile is Scan of a file its caller opened (through a root, checked
// to be a regular file), named by f.Name(), reading at most max bytes of
// it (-1: no cap but the values' and the nodes'). It reads a node's own
// results.json: a ref there is an error.
func ScanFile(f *os.File, max int64, visit func(Node) error) (*Results, error) {
	r, err := scanFile(f, f.Name(), max, visit, nil)
	if r != nil {
		r.groups = nil // ReadFolded's
	}
	return r, err
}

// scanFile is ScanFile with resolve reading each ref (nil: refs are
// refused).
func scanFile(f *os.File, path string, max int64, visit func(Node) error, resolve func(Node) (Node, error)) (*Results, error) {
	return scanFileInto(f, path, max, nil, visit, resolve)
}

// scanFileInto is scanFile with each node's evidence decoded into ev in
// the pass that reads the node (nil: kept raw, Node.Evidence).
func scanFileInto(f *os.File, path string, max int64, ev *evidenceInto, visit func(Node) error, resolve func(Node) (Node, error)) (*Results, error) {
	var rd io.Reader = f
	var src io.ReaderAt = f
	if max >= 0 {
		rd = io.LimitReader(f, max)
		src = io.NewSectionReader(f, 0, max)
	}
	r, nodes, err := scan(rd, src, ev, visit, resolve)
	if err != nil {
		var at *offsetError
		if errors.As(err, &at) {
			if !startsJSON(f) {
				// YAML, a log: the JSON decoder's "invalid character
				// 'o' in literal null" would say nothing to a user.
				return nil, fmt.Errorf("reading %s: not a results.json: it is not JSON (gdrcheck run --out DIR writes DIR/results.json)", path)
			}
			line, col := lineCol(f, at.off)
			return nil, fmt.Errorf("reading %s:%d:%d: %w", path, line, col, at.err)
		}
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	if r.Schema != Schema && r.Schema != SchemaV1 {
		return nil, fmt.Errorf("reading %q: schema %q, want %q (or the previous %q)", path, r.Schema, Schema, SchemaV1)
	}
	if nodes == 0 {
		// Nothing was judged: passing it would pass an empty run.
		return nil, fmt.Errorf(`reading %q: no node: a results.json holds at least one (its "nodes" array is missing or empty)`, path)
	}
	return r, nil
}

// scan reads the document rd streams, src being the same bytes from the
// first, for errors to read a value of again.
func scan(rd io.Reader, src io.ReaderAt, ev *evidenceInto, visit func(Node) error, resolve func(Node) (Node, error)) (_ *Results, nodes int, _ error) {
	dec := getDocDecoder(rd, src)
	defer putDocDecoder(dec)
	dec.evidence = ev
	var r Results
	if err := expectDelim(dec, '{'); err != nil {
		return nil, 0, err
	}
	// jsontext's decoder here takes a repeated key (encoding/json would
	// keep the last, so a second "nodes" would pass unseen): keys are
	// checked here token by token, and inside each value by decodeValue.
	seen := map[string]bool{} // nodes counts over the whole document
	for dec.PeekKind() != '}' {
		t, err := dec.ReadToken()
		if err != nil {
			return nil, 0, syntaxAt(dec, err)
		}
		key := t.String()
		if seen[key] {
			return nil, 0, &offsetError{dec.InputOffset(), fmt.Errorf("the top-level key %q is given twice", key)}
		}
		seen[key] = true
		switch key {
		case "nodes":
			err = decodeNodes(dec, &r, &nodes, visit, resolve)
		case "runs":
			err = decodeRuns(dec, &r)
		case "groups":
			err = decodeGroups(dec, &r)
		case "schema":
			err = decodeValue(dec, &r.Schema, key)
		case "tool":
			err = decodeValue(dec, &r.Tool, key)
		case "started":
			err = decodeValue(dec, &r.Started, key)
		case "finished":
			err = decodeValue(dec, &r.Finished, key)
		default:
			if err = dec.SkipValue(); err != nil {
				err = syntaxAt(dec, err)
			}
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, 0, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, 0, &offsetError{dec.InputOffset(), errors.New("data after the document")}
	}
	return &r, nodes, nil
}

// decodeNodes reads the nodes array one node at a time, each checked,
// a ref read through resolve, and handed to visit; nodes counts them over
// the whole document.
func decodeNodes(dec *docDecoder, r *Results, nodes *int, visit func(Node) error, resolve func(Node) (Node, error)) error {
	if err := expectDelim(dec, '['); err != nil {
		return err
	}
	for dec.PeekKind() != ']' {
		if *nodes++; *nodes > MaxNodes {
			return &offsetError{dec.InputOffset(), fmt.Errorf("more than %d nodes: a results.json holds one per host of one job: %w", MaxNodes, bounded.ErrTooLarge)}
		}
		where := fmt.Sprintf("nodes[%d]", *nodes-1)
		n, err := decodeNode(dec, where)
		if err != nil {
			return err
		}
		if n.Ref != "" {
			if n, err = readRef(r, n, where, resolve); err != nil {
				return &offsetError{dec.InputOffset(), err}
			}
		} else if err := checkNode(n, where); err != nil {
			return &offsetError{dec.InputOffset(), err}
		}
		n.Settle() // a ref's too: its added suites count
		if err := visit(n); err != nil {
			return err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxAt(dec, err)
	}
	return nil
}

// readRef checks a ref and reads the node it stands for; only a
// document of schema v2, whose schema comes first as the Encoder writes
// it, holds refs.
func readRef(r *Results, ref Node, where string, resolve func(Node) (Node, error)) (Node, error) {
	if r.Schema != Schema {
		return Node{}, fmt.Errorf("%s: a ref in a results.json of schema %q: refs came with %q, named before the nodes", where, r.Schema, Schema)
	}
	if resolve == nil {
		return Node{}, fmt.Errorf("%s: %w", where, errRefHere)
	}
	if err := checkRef(ref, where); err != nil {
		return Node{}, err
	}
	n, err := resolve(ref)
	if err != nil {
		return Node{}, fmt.Errorf("%s (named %q): %w", where, ref.Name, err)
	}
	return n, nil
}

// decodeRuns reads the cross-node runs (one per pair or node count) one
// by one, like the nodes; null is none.
func decodeRuns(dec *docDecoder, r *Results) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		if err != nil {
			return syntaxAt(dec, err)
		}
		return nil
	case '[':
	default:
		t, err := dec.ReadToken()
		if err != nil {
			return syntaxAt(dec, err)
		}
		return &offsetError{dec.InputOffset(), fmt.Errorf("runs is %v, not an array", t)}
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxAt(dec, err)
	}
	r.Runs = []Run{}
	for dec.PeekKind() != ']' {
		var run Run
		if err := decodeValue(dec, &run, fmt.Sprintf("runs[%d]", len(r.Runs))); err != nil {
			return err
		}
		r.Runs = append(r.Runs, run)
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxAt(dec, err)
	}
	return nil
}

func expectDelim(dec *docDecoder, want byte) error {
	t, err := dec.ReadToken()
	if err != nil {
		return syntaxAt(dec, err)
	}
	if t.Kind() != jsontext.Kind(want) {
		return &offsetError{dec.InputOffset(), fmt.Errorf("want %q, found %v: not a results.json", want, t)}
	}
	return nil
}

func syntaxAt(dec *docDecoder, err error) error {
	var big *bounded.TooLargeError
	var syn *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		err = fmt.Errorf("the document ends early: %w", io.ErrUnexpectedEOF)
	case errors.As(err, &big):
		return big // it names the byte the value follows
	case errors.As(err, &syn):
		return &offsetError{syn.ByteOffset, syn.Err}
	}
	return &offsetError{dec.InputOffset(), err}
}

// offsetError is a decoding error at a byte offset, which Scan turns into
// the line and column a person can open.
type offsetError struct {
	off int64
	err error
}

func (e *offsetError) Error() string { return fmt.Sprintf("byte %d: %v", e.off, e.err) }
func (e *offsetError) Unwrap() error { return e.err }

// lineCol finds the 1-based line and column of a byte offset by reading
// the file again: only an error pays for it.
func lineCol(f io.ReaderAt, off int64) (line, col int) {
	line, col = 1, 1
	rd := bufio.NewReader(io.NewSectionReader(f, 0, off))
	for {
		b, err := rd.ReadByte()
		if err != nil {
			return line, col
		}
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
}

// Slim is a node without what no report shows (its raw evidence), which
// is most of its size: merges keep thousands of these.
func (n Node) Slim() Node {
	n.Evidence = nil
	return n
}

// ReadSlim reads a results.json with its nodes slimmed: every report can
// be made from it, at a fraction of the memory.
func ReadSlim(path string) (*Results, error) {
	var nodes []Node
	r, err := Scan(path, func(n Node) error { nodes = append(nodes, n.Slim()); return nil })
	if err != nil {
		return nil, err
	}
	r.Nodes = nodes
	return r, nil
}

// startsJSON says the file's first byte past white space opens a JSON
// object, as a results.json does.
func startsJSON(f *os.File) bool {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	t := bytes.TrimLeft(b[:n], " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}
