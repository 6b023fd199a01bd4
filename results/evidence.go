package results

import (
	"errors"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// A comparison reads every node's evidence typed (harness/node's
// Evidence, which results does not know): decoding it in the pass that
// reads the node, not kept raw and decoded again, spares a second pass
// over half of each node's bytes and a copy of them.

// evidenceInto decodes a node's evidence into v as the node is read.
type evidenceInto struct {
	v   any
	set bool // the node has evidence, decoded into v
}

func (e *evidenceInto) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	e.set = true
	return jsonv2.UnmarshalDecode(dec, e.v)
}

// nodeInto is a Node whose evidence goes to Evidence.v.
type nodeInto struct {
	Node
	Evidence *evidenceInto `json:"evidence,omitempty"`
}

// errEvidenceNull is an evidence of null, which the typed pass does not
// take: the node is read again, its evidence raw, as any reader takes it.
var errEvidenceNull = errors.New("evidence: null")

// decodeNode decodes the next node entry of dec, its evidence into
// dec.evidence where that is set.
func decodeNode(dec *docDecoder, where string) (Node, error) {
	if dec.evidence == nil {
		var n Node
		err := decodeValue(dec, &n, where)
		return n, err
	}
	ni := nodeInto{Evidence: dec.evidence}
	if err := decodeValue(dec, &ni, where); err != nil {
		return Node{}, err
	}
	if ni.Evidence == nil {
		return Node{}, errEvidenceNull
	}
	return ni.Node, nil
}

// AtEvidence is At with the node's evidence, for a ref, decoded into ev
// (a pointer to harness/node's Evidence) in the pass that reads the
// node: ok says ev holds it. Where it does not (a node held in the
// merged file, one whose evidence the typed pass refuses, a node without
// evidence), n is At's, its evidence raw; ev is then to be dropped.
func (x *Index) AtEvidence(i int, ev any) (n Node, ok bool, err error) {
	ref := x.entries[i]
	if ref.Ref != "" {
		if n, ok, err := x.rr.nodeInto(ref, ev); err == nil {
			return n, ok, nil
		}
	}
	n, err = x.At(i)
	return n, false, err
}

// NodeEvidence is Node as AtEvidence reads it; found is false where no
// node has the name.
func (x *Index) NodeEvidence(name string, ev any) (n Node, found, ok bool, err error) {
	i, found := x.byName[name]
	if !found {
		return Node{}, false, false, nil
	}
	n, ok, err = x.AtEvidence(i, ev)
	return n, err == nil, ok, err
}
