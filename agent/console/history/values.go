package history

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Values are one series' numbers, one per point of a timeline; NaN is a
// point with no value (the agent did not report it, or nothing was there
// to measure). In JSON a NaN is null, which is what uPlot draws as a gap.
type Values []float64

// missingValues is n NaNs.
func missingValues(n int) Values {
	v := make(Values, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// known reports whether any value is not NaN.
func (v Values) known() bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return true
		}
	}
	return false
}

// maxDigits are the significant digits written of a value that is not a
// whole number: a chart needs no more, and the answer stays small.
const maxDigits = 6

// MarshalJSON writes whole numbers exactly (offsets, lags, counts) and
// others with maxDigits significant digits.
func (v Values) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(v)*6)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			b = append(b, "null"...)
		case x == math.Trunc(x) && math.Abs(x) < 1<<53:
			b = strconv.AppendFloat(b, x, 'f', -1, 64)
		default:
			b = strconv.AppendFloat(b, x, 'g', maxDigits, 64)
		}
	}
	return append(b, ']'), nil
}

var errValues = errors.New("history: want an array of numbers and nulls")

// UnmarshalJSON reads an array of numbers and nulls, as MarshalJSON
// writes it. The bytes come from another agent: anything else is an
// error, never a panic.
func (v *Values) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*v = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errValues
	}
	b = bytes.TrimSpace(b[1 : len(b)-1])
	out := Values{}
	for len(b) > 0 {
		item := b
		if i := bytes.IndexByte(b, ','); i >= 0 {
			item, b = b[:i], b[i+1:]
			if len(bytes.TrimSpace(b)) == 0 {
				return errValues // a trailing comma
			}
		} else {
			b = nil
		}
		item = bytes.TrimSpace(item)
		if bytes.Equal(item, []byte("null")) {
			out = append(out, math.NaN())
			continue
		}
		x, err := strconv.ParseFloat(string(item), 64)
		if err != nil || len(item) == 0 || !isJSONNumber(item) {
			return fmt.Errorf("%w: %q", errValues, item)
		}
		out = append(out, x)
	}
	*v = out
	return nil
}

// isJSONNumber refuses what ParseFloat takes and JSON does not: Inf,
// NaN, hex, underscores, a leading plus.
func isJSONNumber(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c == '-', c == '.', c == 'e', c == 'E', c == '+':
		default:
			return false
		}
	}
	return b[0] != '+'
}
