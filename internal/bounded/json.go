package bounded

import (
	"encoding/json"
	"fmt"
	"io"
)

// MaxDepth is how deep Skip follows nested arrays and objects.
const MaxDepth = 100

// Decoder is a json.Decoder that reads a stream one value of bounded size
// at a time: each Decode, Token and More may read at most lim.Bytes past
// the place it starts at. json.Decoder buffers a whole value before it
// decodes it, so a value larger than that (a 200 MB string, a deep nest
// of brackets, or that much space) is an error, a *TooLargeError naming
// the byte it follows, before it is held whole; the decoder's
// buffer never grows past about twice lim.Bytes.
//
// Callers walk the containers that may hold many values (results.json's
// nodes, nccl-tests' rows) with Token and More, and Decode their elements
// one by one, so that only the elements are capped.
type Decoder struct {
	*json.Decoder
	r *capReader
}

// NewDecoder reads JSON values from r, each of at most lim.Bytes.
func NewDecoder(r io.Reader, lim Limit) *Decoder {
	cr := &capReader{r: r, lim: lim}
	return &Decoder{Decoder: json.NewDecoder(cr), r: cr}
}

// arm allows the next call to read lim.Bytes past where it starts.
func (d *Decoder) arm() {
	d.r.start = d.Decoder.InputOffset()
	d.r.end = d.r.start + d.r.lim.Bytes
}

// Decode is json.Decoder's, on a value of at most the limit.
func (d *Decoder) Decode(v any) error {
	d.arm()
	return d.Decoder.Decode(v)
}

// Token is json.Decoder's, on a token of at most the limit.
func (d *Decoder) Token() (json.Token, error) {
	d.arm()
	return d.Decoder.Token()
}

// More is json.Decoder's, looking at most the limit ahead.
func (d *Decoder) More() bool {
	d.arm()
	return d.Decoder.More()
}

// Skip reads past the next value a token at a time, so that only each of
// its tokens, not the whole value, is held to the limit: it is how values
// that may be large and are not needed (nccl-tests' env) are passed over.
// Nesting deeper than MaxDepth is an error.
func (d *Decoder) Skip() error {
	depth := 0
	for {
		t, err := d.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('['), json.Delim('{'):
			if depth++; depth > MaxDepth {
				return fmt.Errorf("after byte %d: nested deeper than %d levels", d.InputOffset(), MaxDepth)
			}
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// capReader reads from r up to the offset end, and then fails with a
// *TooLargeError for the value that started at start.
type capReader struct {
	r          io.Reader
	lim        Limit
	read       int64 // bytes read from r
	start, end int64
}

func (c *capReader) Read(p []byte) (int, error) {
	left := c.end - c.read
	if left <= 0 {
		return 0, &TooLargeError{Limit: c.lim, Offset: c.start}
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}
