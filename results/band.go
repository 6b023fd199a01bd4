package results

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Band is the expectation a value was compared with: the baseline's
// expected value and the bounds its tolerance allows. A baseline without
// a tolerance is a one-sided bound (OneSided): Expected is the limit, and
// results.json writes it without low and high, as "at_least" or
// "at_most", never as a band of zero width.
type Band struct {
	Profile  string  `json:"profile"`
	Metric   string  `json:"metric"`
	Expected float64 `json:"expected"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Direction is the baseline's "higher" (more is better: bandwidth,
	// and the default) or "lower".
	Direction string `json:"direction,omitempty"`
}

// Directions of a Band.
const (
	Higher = "higher"
	Lower  = "lower"
)

// OneSided says the band is a bound: Expected is the limit on the bad
// side and nothing is allowed past it.
func (b Band) OneSided() bool { return b.Low == b.Expected && b.High == b.Expected }

// Bound is the one-sided limit as people write it: "≥ 460" for higher,
// "≤ 0.5" for lower.
func (b Band) Bound() string {
	op := "≥"
	if b.Direction == Lower {
		op = "≤"
	}
	return op + " " + strconv.FormatFloat(b.Expected, 'f', -1, 64)
}

// bandJSON is a Band as results.json holds it: a one-sided band has
// at_least or at_most, a two-sided one low and high.
type bandJSON struct {
	Profile   string   `json:"profile"`
	Metric    string   `json:"metric"`
	Expected  float64  `json:"expected"`
	Low       *float64 `json:"low,omitempty"`
	High      *float64 `json:"high,omitempty"`
	AtLeast   *float64 `json:"at_least,omitempty"`
	AtMost    *float64 `json:"at_most,omitempty"`
	Direction string   `json:"direction,omitempty"`
}

// MarshalJSON writes a one-sided band as its bound, not as low = expected
// = high.
func (b Band) MarshalJSON() ([]byte, error) {
	j := bandJSON{Profile: b.Profile, Metric: b.Metric, Expected: b.Expected, Direction: b.Direction}
	switch {
	case !b.OneSided():
		j.Low, j.High = &b.Low, &b.High
	case b.Direction == Lower:
		j.AtMost = &b.Expected
	default:
		j.AtLeast = &b.Expected
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads both forms; a one-sided band gets Low = High =
// Expected back, which every comparison already reads as a limit.
func (b *Band) UnmarshalJSON(data []byte) error {
	var j bandJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*b = Band{Profile: j.Profile, Metric: j.Metric, Expected: j.Expected, Low: j.Expected, High: j.Expected, Direction: j.Direction}
	switch {
	case j.Low != nil || j.High != nil:
		if j.Low == nil || j.High == nil {
			return fmt.Errorf("baseline band %q: low and high come together, got only one", j.Metric)
		}
		b.Low, b.High = *j.Low, *j.High
	case j.AtLeast != nil && j.AtMost != nil:
		return fmt.Errorf("baseline band %q: at_least and at_most are one side each, got both", j.Metric)
	case j.AtLeast != nil:
		b.Expected, b.Low, b.High = *j.AtLeast, *j.AtLeast, *j.AtLeast
		b.Direction = Higher
	case j.AtMost != nil:
		b.Expected, b.Low, b.High = *j.AtMost, *j.AtMost, *j.AtMost
		b.Direction = Lower
	}
	return nil
}
