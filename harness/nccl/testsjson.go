package nccl

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// testsJSON is the document nccl-tests writes with -J (format version 3 in
// nccl-tests 2.19). Booleans are written as the strings "true"/"false", and
// root as a padded string ("    -1").
type testsJSON struct {
	Args        []string `json:"args"`
	NCCLVersion int      `json:"nccl_version"` // NCCL_VERSION_CODE of the library
	Config      struct {
		Devices []struct {
			Rank       int    `json:"rank"`
			Group      int    `json:"group"`
			PID        int    `json:"pid"`
			Hostname   string `json:"hostname"`
			Device     int    `json:"device"`
			DeviceHex  string `json:"device_hex"`
			DeviceInfo string `json:"device_info"`
		} `json:"devices"`
	} `json:"config"`
	Results     []jsonResult `json:"results"`
	OutOfBounds *struct {
		Count int `json:"count"`
	} `json:"out_of_bounds"`
	AverageBusBandwidth *struct {
		Bandwidth float64 `json:"bandwidth"`
	} `json:"average_bus_bandwidth"`
	Errors []string `json:"errors"`
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

// ParseTestsJSON reads the file nccl-tests writes with -J into the same
// TestsResult as ParseTests. The JSON carries no nccl-tests version.
//
// It decodes the document key by key and the results row by row, so a
// file cut short (a run killed while writing it) or damaged part-way still
// gives the rows before the damage, marked Partial with the decoder's
// error as the reason. A document with nothing of nccl-tests in it, broken
// or not, is an error wrapping ErrNoData.
func ParseTestsJSON(r io.Reader) (*TestsResult, error) {
	var doc testsJSON
	stop := decodeTestsJSON(json.NewDecoder(r), &doc)
	if doc.Results == nil && doc.Args == nil && doc.NCCLVersion == 0 {
		if stop != nil {
			return nil, fmt.Errorf("decoding nccl-tests JSON: %w: %w", ErrNoData, stop)
		}
		return nil, fmt.Errorf("decoding nccl-tests JSON: %w", ErrNoData)
	}
	res := &TestsResult{Devices: []Device{}, Rows: []Row{}, Failures: []Failure{}}
	if len(doc.Args) > 0 {
		res.Collective = path.Base(doc.Args[0])
	}
	if doc.NCCLVersion > 0 {
		res.NCCLVersion = versionFromCode(strconv.Itoa(doc.NCCLVersion))
	}
	for _, d := range doc.Config.Devices {
		res.Devices = append(res.Devices, Device{
			Rank: d.Rank, Group: d.Group, PID: d.PID, Host: d.Hostname,
			Device: d.Device, BusID: d.DeviceHex, Name: d.DeviceInfo,
		})
	}
	for i, x := range doc.Results {
		root, err := parseJSONRoot(x.Root)
		if err != nil {
			return nil, fmt.Errorf("decoding nccl-tests JSON result %d (size %d): %w", i, x.Size, err)
		}
		row := Row{Size: x.Size, Count: x.Count, Type: x.Type, RedOp: x.RedOp, Root: root}
		row.TimeOOP, row.AlgBWOOP, row.BusBWOOP, row.WrongOOP = x.OutOfPlace.values()
		row.TimeIP, row.AlgBWIP, row.BusBWIP, row.WrongIP = x.InPlace.values()
		for _, w := range []*int64{row.WrongOOP, row.WrongIP} {
			if w != nil {
				row.Wrong += *w
			}
		}
		res.Rows = append(res.Rows, row)
	}
	if doc.OutOfBounds != nil {
		n := doc.OutOfBounds.Count
		res.OutOfBounds = &n
	}
	if doc.AverageBusBandwidth != nil {
		v := doc.AverageBusBandwidth.Bandwidth
		res.AvgBusBW = &v
	}
	for _, e := range doc.Errors {
		if e != "" { // nccl-tests writes [""] when ncclGetLastError is empty
			res.addFailure(Failure{Kind: "error", Message: e})
		}
	}
	if stop != nil {
		after := ""
		if n := len(res.Rows); n > 0 {
			after = " (the last at " + results.SizeString(res.Rows[n-1].Size) + ")"
		}
		res.setPartial([]string{fmt.Sprintf("the JSON document stops or is damaged after %d results%s: %v", len(res.Rows), after, stop)})
	}
	return res, nil
}

// decodeTestsJSON fills doc from one JSON object, a key at a time, and
// returns the error where the document broke off, or nil when it was
// whole. Keys match case-insensitively, as encoding/json matches fields.
func decodeTestsJSON(dec *json.Decoder, doc *testsJSON) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("the document is %v, not a JSON object", t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		switch strings.ToLower(key) {
		case "args":
			err = dec.Decode(&doc.Args)
		case "nccl_version":
			err = dec.Decode(&doc.NCCLVersion)
		case "config":
			err = dec.Decode(&doc.Config)
		case "results":
			err = decodeResults(dec, &doc.Results)
		case "out_of_bounds":
			err = dec.Decode(&doc.OutOfBounds)
		case "average_bus_bandwidth":
			err = dec.Decode(&doc.AverageBusBandwidth)
		case "errors":
			err = dec.Decode(&doc.Errors)
		default:
			err = dec.Decode(&json.RawMessage{})
		}
		if err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing brace
	return err
}

// decodeResults reads the results array one row at a time, keeping the
// rows before any damage.
func decodeResults(dec *json.Decoder, results *[]jsonResult) error {
	t, err := dec.Token()
	switch {
	case err != nil:
		return err
	case t == nil:
		return nil // "results": null
	case t != json.Delim('['):
		return fmt.Errorf("results is %v, not an array", t)
	}
	if *results == nil {
		*results = []jsonResult{}
	}
	for dec.More() {
		var x jsonResult
		if err := dec.Decode(&x); err != nil {
			return err
		}
		*results = append(*results, x)
	}
	_, err = dec.Token() // the closing bracket
	return err
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
