package perftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// What --out_json writes, read from perftest's source
// (src/perftest_parameters.c, write_test_info_to_file and the
// write_*_report_to_file functions, linux-rdma/perftest as of 2026):
//
//	{
//	"test_info": {
//	"test": "RDMA_Write_BW_Test",
//	"Dual_port": "OFF", "Device": "mlx5_3", "Number_of_qps": 1,
//	"Transport_type": "IB", "Connection_type": "RC", ..., "Mtu": 4096,
//	"Link_type": "Ethernet", "GID_index": 3, ..., "cuda_device": 0, ...
//	},
//	"results": {
//	"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 381.50,
//	"BW_average": 381.41, "MsgRate": 0.727473
//	}
//	}
//
// (one key per line in the real file). Latency tests put t_min, t_max,
// t_typical, t_avg, t_stdev, percentile_99 and percentile_99.9 in
// "results"; duration mode t_avg and tps_average; --output=bandwidth only
// bw_avg. Facts this parser leans on, and what it assumes:
//
//   - The file is opened with O_TRUNC for every report, so after -a it holds
//     only the last (largest) message size: one row, not a table. Several
//     documents in one stream (a runner that appends) give several rows.
//   - Before perftest 24.01 (commit "Make output JSON standard") the
//     file was not JSON: unquoted keys and string values, trailing commas
//     (`test_info: {`, `test: RDMA_Write_BW_Test,`). Some modes still write
//     invalid JSON today (QoS "sl: 3", "bw_avg: 1.0," before "}"). Anything
//     encoding/json refuses is read line by line instead.
//   - No unit is written. BW_average is in Gb/s with --report_gbits and in
//     2^20 bytes/s otherwise; the unit is inferred from MsgSize x MsgRate,
//     which perftest computes from the same timings, and assumed to be
//     Gb/s (the unit gdrcheck asks for with --report_gbits) when the file
//     lacks those fields. Result.UnitSource says which ("inferred" or
//     "assumed"). Latencies are assumed to be in usec.
//   - DMA-BUF is not recorded: "cuda_device" (written since perftest
//     24.10) gives MemCUDA whichever CUDA path ran, and its absence says
//     nothing, so Mem stays MemUnknown. A runner that knows its flags
//     should set Mem itself.

// jsonLimit caps the input of ParseJSON, which is read whole: perftest
// writes one report of under 1 KB per run, so 1 MiB is a thousand runs
// appended to one file.
var jsonLimit = bounded.Limit{Bytes: 1 << 20, What: "a perftest JSON file",
	Why: "perftest --out_json writes one report of under 1 KB per run"}

// ParseJSON reads the file perftest writes with --out_json (see above for
// its format and what is assumed). Text before the first '{' is skipped.
// The result is Partial, with the reason, when the file ends inside a
// document (its open results section is then not read) or holds no
// results. A file over 1 MiB is an error wrapping bounded.ErrTooLarge.
func ParseJSON(r io.Reader) (*Result, error) {
	data, err := bounded.ReadAll(r, jsonLimit)
	if err != nil {
		return nil, fmt.Errorf("reading perftest JSON: %w", err)
	}
	if i := bytes.IndexByte(data, '{'); i >= 0 {
		data = data[i:]
	} else {
		return nil, fmt.Errorf("reading perftest JSON: %w", ErrNoOutput)
	}
	docs, err := strictDocs(data)
	cut := false
	if err != nil {
		docs, cut = looseDocs(data)
	}
	res := &Result{}
	seen, omitted := false, 0
	for _, d := range docs {
		if len(d.info) > 0 {
			seen = true
			res.jsonInfo(d.info)
		}
		if len(d.results) > 0 {
			seen = true
			if len(res.Rows) < maxRows {
				res.Rows = append(res.Rows, res.jsonRow(d.results))
			} else {
				omitted++
			}
		}
	}
	if !seen {
		return nil, fmt.Errorf("reading perftest JSON: no test_info or results: %w", ErrNoOutput)
	}
	(&parser{res: res}).finish()
	var reasons []string
	if cut {
		reasons = append(reasons, "the file ends before its closing brace: the run stopped or the file was cut; a cut results section is not read")
	}
	if len(res.Rows) == 0 {
		reasons = append(reasons, "the file holds no results: the run stopped before its first report")
	}
	if omitted > 0 {
		reasons = append(reasons, fmt.Sprintf("more than %d results: the %d past them were not kept", maxRows, omitted))
	}
	res.setPartial(reasons)
	return res, nil
}

// doc is one report, values as the strings they were printed as.
type doc struct{ info, results map[string]string }

var trailingComma = regexp.MustCompile(`,(\s*[}\]])`)

func strictDocs(data []byte) ([]doc, error) {
	dec := json.NewDecoder(bytes.NewReader(trailingComma.ReplaceAll(data, []byte("$1"))))
	dec.UseNumber()
	var docs []doc
	for {
		var top map[string]any
		err := dec.Decode(&top)
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding perftest JSON: %w", err)
		}
		docs = append(docs, doc{info: flat(top["test_info"]), results: flat(top["results"])})
	}
}

func flat(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = strconv.FormatBool(v)
		}
	}
	return out
}

// looseDocs reads perftest's one-"key: value"-per-line layout, quoted or
// not, valid JSON or not. cut reports a document still open at the end of
// the data; the results section it was inside is dropped, since its last
// value may be cut ("BW_peak": 38 of 381.50) and later keys are missing.
func looseDocs(data []byte) (docs []doc, cut bool) {
	var cur *doc
	var section map[string]string
	inResults := false // section is cur.results
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "":
			continue
		case s == "{":
			if cur == nil || section == nil {
				docs = append(docs, doc{})
				cur = &docs[len(docs)-1]
			}
			continue
		case strings.HasPrefix(s, "}"):
			if section != nil {
				section, inResults = nil, false
			} else {
				cur = nil
			}
			continue
		}
		key, val, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		key = strings.Trim(strings.TrimSpace(key), `"`)
		val = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(val), ","))
		if cur == nil {
			docs = append(docs, doc{})
			cur = &docs[len(docs)-1]
		}
		if val == "{" {
			section = map[string]string{}
			switch key {
			case "test_info":
				cur.info = section
			case "results":
				cur.results = section
			}
			inResults = key == "results"
			continue
		}
		if section != nil {
			section[key] = strings.Trim(val, `"`)
		}
	}
	if cur != nil && inResults {
		cur.results = nil
	}
	return docs, cur != nil
}

func (r *Result) jsonInfo(info map[string]string) {
	if r.Settings == nil {
		r.Settings = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(info)) {
		r.addSetting(k, info[k])
	}
	r.Test = clipField(info["test"])
	switch {
	case strings.Contains(r.Test, "_BW_"):
		r.Kind = KindBW
	case strings.Contains(r.Test, "_Latency_"):
		r.Kind = KindLat
	}
	r.Device = clipField(info["Device"])
	r.LinkType = clipField(info["Link_type"])
	r.Transport = clipField(info["Transport_type"])
	r.Connection = clipField(info["Connection_type"])
	if n, err := strconv.Atoi(info["Number_of_qps"]); err == nil {
		r.QPs = n
	}
	if n, err := strconv.Atoi(info["Mtu"]); err == nil {
		r.MTU = n
	}
	if n, err := strconv.Atoi(info["GID_index"]); err == nil {
		r.GIDIndex = &n
	}
	if v, ok := info["cuda_device"]; ok {
		r.Mem = MemCUDA
		r.MemEvidence = "test_info cuda_device " + clipField(v) + " (the JSON does not say whether DMA-BUF was used)"
	}
}

func (r *Result) jsonRow(m map[string]string) Row {
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(m[k], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return v
	}
	row := Row{
		MsgRateMpps: num("MsgRate"),
		TMin:        num("t_min"),
		TMax:        num("t_max"),
		TTypical:    num("t_typical"),
		TAvg:        num("t_avg"),
		TStdev:      num("t_stdev"),
		P99:         num("percentile_99"),
		P999:        num("percentile_99.9"),
		TPSAvg:      num("tps_average"),
		CPUUtil:     num("CPU_util"),
	}
	row.Bytes, _ = strconv.ParseInt(m["MsgSize"], 10, 64)
	row.Iterations, _ = strconv.ParseInt(m["n_iterations"], 10, 64)
	if row.MsgRateMpps == 0 {
		row.MsgRateMpps = num("msgRate_avg")
	}
	if row.TAvg == 0 {
		row.TAvg = num("avg_lat")
	}
	peak, avg := num("BW_peak"), num("BW_average")
	if avg == 0 {
		avg = num("bw_avg")
	}
	if peak != 0 || avg != 0 {
		unit, how := jsonUnit(row.Bytes, row.MsgRateMpps, avg)
		r.Unit, r.UnitSource = unit, how
		row.BWPeakGbps, row.BWAvgGbps = peak*toGbps(unit), avg*toGbps(unit)
	}
	if row.TMin != 0 || row.TAvg != 0 {
		r.LatencyUnit = "usec"
		if r.Kind == "" {
			r.Kind = KindLat
		}
	}
	return row
}

// jsonUnit works out the BW unit perftest used: it computes
// BW = size x MsgRate x 10^6 / factor, with factor 125000000 for Gb/s and
// 2^20 for MiB/s, so the factor implied by the numbers names the unit.
func jsonUnit(size int64, mpps, bw float64) (unit, how string) {
	if size <= 0 || mpps <= 0 || bw <= 0 {
		return UnitGbps, "assumed"
	}
	factor := float64(size) * mpps * 1e6 / bw
	if math.Abs(math.Log(factor/125e6)) <= math.Abs(math.Log(factor/0x100000)) {
		return UnitGbps, "inferred"
	}
	return UnitMiBps, "inferred"
}
