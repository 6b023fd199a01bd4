package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// inputOptions say how far analyze reads its FILE.
type inputOptions struct {
	max byteSize
}

// addInput gives an analyze command its --max-bytes flag.
func addInput(cmd *cobra.Command) *inputOptions {
	in := &inputOptions{max: bounded.MaxStream}
	cmd.Flags().Var(&in.max, "max-bytes", "read at most `SIZE` of FILE (bytes, or with KiB, MiB, GiB); what comes after is not read and the result is partial (exit 2 unless a failure was already judged)")
	return in
}

// input is analyze's FILE, read up to --max-bytes and until the first
// SIGINT or SIGTERM (the command's context): either ends it early, as a
// partial input whose reason says which.
type input struct {
	*bounded.Reader
	name  string
	close func() error
}

func (in *input) Close() error { return in.close() }

// open opens FILE ("-": standard input).
func (o *inputOptions) open(cmd *cobra.Command, name string) (*input, error) {
	var r io.Reader = cmd.InOrStdin()
	closer := func() error { return nil }
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		r, closer = f, f.Close
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	lim := bounded.Limit{Bytes: int64(o.max), What: "what analyze reads of FILE", Why: "raise it with --max-bytes"}
	return &input{Reader: bounded.NewReader(ctx, r, lim), name: name, close: closer}, nil
}

// noData is why nothing could be judged: want, or, when the input was
// stopped first, that nothing was found before it was.
func (in *input) noData(want string) string {
	if err := in.Stopped(); err != nil {
		return fmt.Sprintf("nothing found before the input was stopped (%v); %s", err, want)
	}
	return want
}

// byteSize is a --max-bytes value: "4294967296", "64MiB", "4 GiB".
type byteSize int64

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}, {"", 0}}

func (s *byteSize) Set(v string) error {
	t := strings.TrimSpace(v)
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n <= 0 || n > (1<<62)>>u.shift {
			break
		}
		*s = byteSize(n << u.shift)
		return nil
	}
	return fmt.Errorf("%q: want a positive number of bytes, or one with KiB, MiB, GiB or TiB", v)
}

func (s *byteSize) String() string { return bounded.Size(int64(*s)) }
func (s *byteSize) Type() string   { return "size" }
