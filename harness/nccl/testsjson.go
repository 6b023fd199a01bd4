package nccl

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
)

// testsJSON is the document nccl-tests writes with -J (format version 3 in
// nccl-tests 2.19). Booleans are written as the strings "true"/"false", and
// root as a padded string ("    -1").
type testsJSON struct {
	NCCLVersion int `json:"nccl_version"` // NCCL_VERSION_CODE of the library
	OutOfBounds *struct {
		Count int `json:"count"`
	} `json:"out_of_bounds"`
	AverageBusBandwidth *struct {
		Bandwidth float64 `json:"bandwidth"`
	} `json:"average_bus_bandwidth"`

	// config.devices, results and errors go to res as they are decoded.
	res     *TestsResult
	args    bool  // an args array was there; its first is the binary
	results bool  // a results array was there
	bad     error // a result that cannot be read
}

type jsonDevice struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	PID        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

type jsonResult struct {
	Size       int64           `json:"size"`
	Count      int64           `json:"count"`
	Type       string          `json:"type"`
	RedOp      string          `json:"redop"`
	Root       json.RawMessage `json:"root"`
	OutOfPlace *jsonPlacement  `json:"out_of_place"`
	InPlace    *jsonPlacement  `json:"in_place"`
}

type jsonPlacement struct {
	Time    *float64 `json:"time"`
	CPUTime *float64 `json:"cpu_time"` // instead of time when run with -C
	AlgBW   float64  `json:"alg_bw"`
	BusBW   float64  `json:"bus_bw"`
	NWrong  *float64 `json:"nwrong"` // null when validation is off
}

// jsonValueLimit caps each value ParseTestsJSON decodes: a row, a
// device, an error, an argument, each string of env. The -J file of a
// 2-GPU run is 15 KB (fixtures/nccl-tests), a row about 200 bytes; Linux
// allows an argument or variable 128 KiB (MAX_ARG_STRLEN).
var jsonValueLimit = bounded.Limit{Bytes: 1 << 20, What: "one value of an nccl-tests JSON file",
	Why: "nccl-tests writes rows of about 200 bytes"}

// ParseTestsJSON reads the file nccl-tests writes with -J into the same
// TestsResult as ParseTests. The JSON carries no nccl-tests version.
//
// It decodes the document key by key, and the results, devices and errors
// one by one, each value at most 1 MiB (jsonValueLimit), so memory stays
// bounded however large the file. A file cut short (a run killed while
// writing it), damaged part-way or holding a value over the limit still
// gives the rows before, marked Partial with the decoder's error as the
// reason; rows past maxRows are counted, not kept, and make it partial
// too. A document with nothing of nccl-tests in it, broken or not, is an
// error wrapping ErrNoData.
func ParseTestsJSON(r io.Reader) (*TestsResult, error) {
	res := &TestsResult{Devices: []Device{}, Rows: []Row{}, Failures: []Failure{}}
	doc := testsJSON{res: res}
	stop := decodeTestsJSON(bounded.NewDecoder(r, jsonValueLimit), &doc)
	if !doc.results && !doc.args && doc.NCCLVersion == 0 {
		if stop != nil {
			return nil, fmt.Errorf("decoding nccl-tests JSON: %w: %w", ErrNoData, stop)
		}
		return nil, fmt.Errorf("decoding nccl-tests JSON: %w", ErrNoData)
	}
	if doc.NCCLVersion > 0 {
		res.NCCLVersion = versionFromCode(strconv.Itoa(doc.NCCLVersion))
	}
	if doc.OutOfBounds != nil {
		n := doc.OutOfBounds.Count
		res.OutOfBounds = &n
	}
	if doc.AverageBusBandwidth != nil {
		v := doc.AverageBusBandwidth.Bandwidth
		res.AvgBusBW = &v
	}
	if doc.bad != nil {
		return nil, doc.bad
	}
	reasons := append(res.rowsOmitted(), checkSweeps(res.Rows)...)
	if stop != nil {
		after := ""
		if n := len(res.Rows); n > 0 {
			after = " (the last at " + results.SizeString(res.Rows[n-1].Size) + ")"
		}
		reasons = append(reasons, fmt.Sprintf("the JSON document stops or is damaged after %d results%s: %v", len(res.Rows), after, stop))
	}
	res.setPartial(reasons)
	return res, nil
}

// decodeTestsJSON fills doc from one JSON object, a key at a time, and
// returns the error where the document broke off, or nil when it was
// whole. Keys match case-insensitively, as encoding/json matches fields.
func decodeTestsJSON(dec *bounded.Decoder, doc *testsJSON) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("the document is %v, not a JSON object", t)
	}
	res := doc.res
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		switch strings.ToLower(key) {
		case "args":
			n := 0
			array, aerr := eachElement(dec, "args", func(a string) {
				if n++; n == 1 {
					res.Collective = clipField(path.Base(a))
				}
			})
			doc.args, err = doc.args || n > 0 || (array && aerr == nil), aerr
		case "nccl_version":
			err = dec.Decode(&doc.NCCLVersion)
		case "config":
			err = eachKey(dec, "config", func(key string) error {
				if strings.ToLower(key) != "devices" {
					return dec.Skip()
				}
				_, err := eachElement(dec, "config.devices", res.addJSONDevice)
				return err
			})
		case "results":
			doc.results, err = eachElement(dec, "results", func(x jsonResult) {
				if doc.bad == nil {
					doc.bad = res.addJSONRow(x)
				}
			})
		case "out_of_bounds":
			err = dec.Decode(&doc.OutOfBounds)
		case "average_bus_bandwidth":
			err = dec.Decode(&doc.AverageBusBandwidth)
		case "errors":
			_, err = eachElement(dec, "errors", func(e string) {
				if e != "" { // nccl-tests writes [""] when ncclGetLastError is empty
					res.addFailure(Failure{Kind: "error", Message: clipText(e)})
				}
			})
		default:
			err = dec.Skip() // env: the whole environment, up to ARG_MAX
		}
		if err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing brace
	return err
}

// eachElement decodes the array at dec's place one element at a time,
// handing each to add, and reports whether it was an array: null is
// none. The elements before any damage are handed over.
func eachElement[T any](dec *bounded.Decoder, what string, add func(T)) (bool, error) {
	t, err := dec.Token()
	switch {
	case err != nil:
		return false, err
	case t == nil:
		return false, nil
	case t != json.Delim('['):
		return false, fmt.Errorf("%s is %v, not an array", what, t)
	}
	for dec.More() {
		var x T
		if err := dec.Decode(&x); err != nil {
			return true, err
		}
		add(x)
	}
	_, err = dec.Token() // the closing bracket
	return true, err
}

// eachKey walks the object at dec's place: value reads the value of each
// key. null is an empty object.
func eachKey(dec *bounded.Decoder, what string, value func(key string) error) error {
	t, err := dec.Token()
	switch {
	case err != nil:
		return err
	case t == nil:
		return nil
	case t != json.Delim('{'):
		return fmt.Errorf("%s is %v, not an object", what, t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := value(key); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing brace
	return err
}

// addJSONDevice keeps a config.devices entry, or counts it past the cap.
func (t *TestsResult) addJSONDevice(d jsonDevice) {
	if len(t.Devices) >= maxDevices {
		t.DevicesOmitted++
		return
	}
	t.Devices = append(t.Devices, Device{
		Rank: d.Rank, Group: d.Group, PID: d.PID, Host: clipField(d.Hostname),
		Device: d.Device, BusID: clipField(d.DeviceHex), Name: clipField(d.DeviceInfo),
	})
}

// addJSONRow keeps a results entry (see addRow); a root that is not a
// number is an error.
func (t *TestsResult) addJSONRow(x jsonResult) error {
	root, err := parseJSONRoot(x.Root)
	if err != nil {
		return fmt.Errorf("decoding nccl-tests JSON result %d (size %d): %w", len(t.Rows)+t.RowsOmitted, x.Size, err)
	}
	row := Row{Size: x.Size, Count: x.Count, Type: clipField(x.Type), RedOp: clipField(x.RedOp), Root: root}
	row.TimeOOP, row.AlgBWOOP, row.BusBWOOP, row.WrongOOP = x.OutOfPlace.values()
	row.TimeIP, row.AlgBWIP, row.BusBWIP, row.WrongIP = x.InPlace.values()
	for _, w := range []*int64{row.WrongOOP, row.WrongIP} {
		if w != nil {
			row.Wrong += *w
		}
	}
	t.addRow(row, 0)
	return nil
}

// values unpacks a placement; a missing one (trace replay writes null for
// out-of-place) reads as zeros.
func (p *jsonPlacement) values() (time, algbw, busbw float64, wrong *int64) {
	if p == nil {
		return 0, 0, 0, nil
	}
	switch {
	case p.Time != nil:
		time = *p.Time
	case p.CPUTime != nil:
		time = *p.CPUTime
	}
	if p.NWrong != nil {
		n := int64(*p.NWrong)
		wrong = &n
	}
	return time, p.AlgBW, p.BusBW, wrong
}

// parseJSONRoot accepts root as nccl-tests writes it ("    -1") or as a
// plain number, in case a later format fixes that.
func parseJSONRoot(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return -1, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("reading root %s: %w", raw, err)
	}
	return n, nil
}
