package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// docDecoder reads a results.json: its values one at a time, at most
// ValueLimit each, from src, which an error reads a value of again.
type docDecoder struct {
	*bounded.TextDecoder
	src io.ReaderAt   // the document from its first byte
	br  *bufio.Reader // what the decoder reads the document through
	// evidence (nil: none) is what each node's evidence is decoded
	// into, in the pass that reads the node (evidence.go).
	evidence *evidenceInto
}

// docDecoders are decoders and their buffers (a node's worth) for the
// next file: a merge reads thousands, and a new buffer for each was most
// of what it allocated, and so of its garbage collection.
var docDecoders = sync.Pool{New: func() any {
	br := bufio.NewReaderSize(nil, 64<<10)
	return &docDecoder{TextDecoder: bounded.NewTextDecoder(br, ValueLimit), br: br}
}}

// getDocDecoder reads the document rd streams, src holding the same
// bytes from the first; put it back with putDocDecoder.
func getDocDecoder(rd io.Reader, src io.ReaderAt) *docDecoder {
	d := docDecoders.Get().(*docDecoder)
	d.br.Reset(rd)
	d.TextDecoder.Reset(d.br)
	d.src = src
	return d
}

// putDocDecoder returns d to the pool, unless it read a document larger
// than a node's, whose buffer the pool would keep.
func putDocDecoder(d *docDecoder) {
	if d.InputOffset() > 4<<20 {
		return
	}
	d.br.Reset(nil)
	d.TextDecoder.Reset(d.br)
	d.src, d.evidence = nil, nil
	docDecoders.Put(d)
}

// decodeValue decodes the next value of dec into v in one pass,
// refusing a key given twice in any object of it: encoding/json keeps
// the last one silently, encoding/json/v2 (go-json-experiment/json, its
// mirror) refuses it. Invalid UTF-8 is taken, as encoding/json takes it.
// where names the value in errors ("nodes[3]", "tool"), which point at
// the byte.
func decodeValue(dec *docDecoder, v any, where string) error {
	start := dec.InputOffset()
	err := dec.Unmarshal(v, jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true))
	if err == nil {
		return nil
	}
	var big *bounded.TooLargeError
	var syn *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// Where the value that ends early starts, as a person finds it.
		return &offsetError{start, fmt.Errorf("the document ends early: %w", io.ErrUnexpectedEOF)}
	case errors.As(err, &big):
		return big // it names the byte the value starts at
	case errors.As(err, &syn) && !errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return syntaxAt(dec, err)
	}
	// A key given twice, a value of the wrong type: only an error pays
	// for reading the value again, whole, to say where in it and in
	// which node (the pointers and offsets of the one pass are the
	// document's).
	raw, at, rerr := dec.reread(start)
	if rerr == nil {
		again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := valueError(raw, at, again, where); err != nil {
			return err
		}
	}
	// Changed under the reader: the one pass's error, as it is.
	return &offsetError{start, fmt.Errorf("%s: %w", where, err)}
}

// reread reads the value after offset start of the document again, and
// the offset of its first byte: past the white space and the separator
// (',' or ':') before it.
func (dec *docDecoder) reread(start int64) (jsontext.Value, int64, error) {
	if dec.src == nil {
		return nil, 0, errors.New("no document to read again")
	}
	sr := io.NewSectionReader(dec.src, start, ValueLimit.Bytes+64<<10)
	br := bufio.NewReader(sr)
	at := start
	for {
		b, err := br.ReadByte()
		if err != nil {
			return nil, 0, err
		}
		if !strings.ContainsRune(" \t\r\n,:", rune(b)) {
			br.UnreadByte()
			break
		}
		at++
	}
	raw, err := bounded.NewTextDecoder(br, ValueLimit).ReadValue()
	return raw, at, err
}

// valueError is the error of decoding raw, the value at offset start,
// into v, pointing in it; nil where it decodes.
func valueError(raw []byte, start int64, v any, where string) error {
	err := jsonv2.Unmarshal(raw, v, jsontext.AllowInvalidUTF8(true))
	if err == nil {
		return nil
	}
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		in := where + string(syn.JSONPointer)
		if i := strings.LastIndexByte(in, '/'); i >= 0 && len(syn.JSONPointer) > 0 {
			in = in[:i]
		}
		return &offsetError{start + syn.ByteOffset, fmt.Errorf("%s%s: the key %q is given twice", in, named(raw, where), syn.JSONPointer.LastToken())}
	case errors.As(err, &syn):
		return &offsetError{start + syn.ByteOffset, fmt.Errorf("%s%s: %w", where, named(raw, where), syn.Err)}
	case errors.As(err, &sem):
		return &offsetError{start + sem.ByteOffset, fmt.Errorf("%s%s: %w", where, named(raw, where), err)}
	}
	return &offsetError{start, fmt.Errorf("%s: %w", where, err)}
}

// named is ` (named "gpu001")` for a node whose name can be read,
// leniently, to say which node an error is in; else "".
func named(raw []byte, where string) string {
	if !strings.HasPrefix(where, "nodes[") {
		return ""
	}
	var n struct{ Name string }
	if json.Unmarshal(raw, &n) != nil || n.Name == "" {
		return ""
	}
	return fmt.Sprintf(" (named %q)", bounded.ClipString(n.Name, 80))
}

// checkNode refuses a node that says nothing: one with no name, an
// unknown status, or neither facts nor specs, unless a status other than
// evaluated gives the reason it has none (a node that never reported).
func checkNode(n Node, where string) error {
	if err := checkNamed(n, where); err != nil {
		return err
	}
	where = fmt.Sprintf("%s (named %q)", where, bounded.ClipString(n.Name, 80))
	if err := checkActions(n, where); err != nil {
		return err
	}
	if err := checkSteps(n.Steps, where); err != nil {
		return err
	}
	if len(n.Facts) > 0 || n.Counts().Tests > 0 {
		return nil
	}
	if n.Status == NodeEvaluated {
		return fmt.Errorf("%s: evaluated, yet it holds neither facts nor specs", where)
	}
	if n.Reason == "" {
		return fmt.Errorf("%s: %s with neither facts, specs nor a reason", where, n.Status)
	}
	return nil
}

// checkNamed refuses a node without a name or with an unknown status:
// all a folded entry (Lite: a healthy one may keep nothing else) must
// say.
func checkNamed(n Node, where string) error {
	if n.Name == "" {
		return fmt.Errorf("%s: the node has no name", where)
	}
	switch n.Status {
	case NodeEvaluated, NodeUnevaluable, NodeMissing, NodeInterrupted:
		return nil
	}
	return fmt.Errorf("%s (named %q): status %q: want %s, %s, %s or %s", where, bounded.ClipString(n.Name, 80), n.Status, NodeEvaluated, NodeUnevaluable, NodeMissing, NodeInterrupted)
}

// checkActions refuses an action or scope outside the vocabulary
// (action.go), and an entity without an action: a remediation pipeline
// acts on these words, so one it does not know is an error, not a guess.
// A failing spec without an action is taken (results.json from before
// actions); tests make sure gdrcheck writes none.
func checkActions(n Node, where string) error {
	if n.Action != "" && !n.Action.Valid() {
		return fmt.Errorf("%s: action %q: want one of %v", where, bounded.ClipString(string(n.Action), 80), Actions)
	}
	for i, s := range n.Suites {
		for j, sp := range s.Specs {
			// Named only when wrong: a node holds hundreds of specs.
			at := func() string {
				return fmt.Sprintf("%s.suites[%d].specs[%d] (%q)", where, i, j, bounded.ClipString(sp.Name, 80))
			}
			switch {
			case sp.Action != "" && !sp.Action.Valid():
				return fmt.Errorf("%s: action %q: want one of %v", at(), bounded.ClipString(string(sp.Action), 80), Actions)
			case sp.Scope != "" && !sp.Scope.Valid():
				return fmt.Errorf("%s: scope %q: want one of %v", at(), bounded.ClipString(string(sp.Scope), 80), Scopes)
			case (sp.Scope != "" || sp.Entity != "") && sp.Action == "":
				return fmt.Errorf("%s: a scope or entity without an action", at())
			}
		}
	}
	return nil
}
