package bounded

import (
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TextDecoder is Decoder over jsontext's decoder, which reads a value in
// one pass where encoding/json's scans it twice (once to find its end,
// once more to copy it): a merged job of 16,384 nodes is 3 GB of node
// files. Each ReadValue, ReadToken and PeekKind may read at most
// lim.Bytes past the place it starts at, as Decoder's calls may.
// Duplicate names and invalid UTF-8 are taken here: the caller checks
// the values it unmarshals.
type TextDecoder struct {
	*jsontext.Decoder
	r *capReader
}

// textOptions take what the callers check themselves.
var textOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// NewTextDecoder reads JSON values from r, each of at most lim.Bytes.
func NewTextDecoder(r io.Reader, lim Limit) *TextDecoder {
	cr := &capReader{r: r, lim: lim}
	return &TextDecoder{Decoder: jsontext.NewDecoder(cr, textOptions...), r: cr}
}

// Reset reads afresh from r, with the limit and options as made, and
// the buffer of the values read before kept: a decoder of a pool reads
// thousands of files without a buffer of its own for each.
func (d *TextDecoder) Reset(r io.Reader) {
	d.r.r, d.r.read, d.r.start, d.r.end = r, 0, 0, 0
	d.Decoder.Reset(d.r, textOptions...)
}

func (d *TextDecoder) arm() {
	d.r.start = d.Decoder.InputOffset()
	d.r.end = d.r.start + d.r.lim.Bytes
}

// ReadValue is jsontext's, on a value of at most the limit; the value
// is valid until the next call.
func (d *TextDecoder) ReadValue() (jsontext.Value, error) {
	d.arm()
	return d.Decoder.ReadValue()
}

// Unmarshal decodes the next value, of at most the limit, into v as
// encoding/json/v2's UnmarshalDecode does, with opts for this value
// only: one pass over its bytes, where ReadValue and then Unmarshal of
// them are two.
func (d *TextDecoder) Unmarshal(v any, opts ...jsonv2.Options) error {
	d.arm()
	return jsonv2.UnmarshalDecode(d.Decoder, v, opts...)
}

// ReadToken is jsontext's, on a token of at most the limit.
func (d *TextDecoder) ReadToken() (jsontext.Token, error) {
	d.arm()
	return d.Decoder.ReadToken()
}

// PeekKind is jsontext's, looking at most the limit ahead; 0 on an
// error, which the next read returns.
func (d *TextDecoder) PeekKind() jsontext.Kind {
	d.arm()
	return d.Decoder.PeekKind()
}

// SkipValue is jsontext's: the value's bytes are at most the limit.
func (d *TextDecoder) SkipValue() error {
	d.arm()
	return d.Decoder.SkipValue()
}
