// Package bytesize reads sizes in bytes as operators write them: a plain
// number of bytes, or a number with a unit, "64MiB", "1.5GB", "512Ki".
//
// Units, and why only these spellings:
//
//	B                  1
//	k K kB KB          1000        (SI: powers of 1000)
//	M MB               1000^2
//	G GB               1000^3
//	T TB               1000^4
//	Ki KiB             1024        (IEC: powers of 1024, also
//	Mi MiB             1024^2       Kubernetes' quantity suffixes)
//	Gi GiB             1024^3
//	Ti TiB             1024^4
//
// A lower-case "b" is refused: it is the usual symbol of bits, and a
// network card sold as "10Gb" moves 1.25 GB a second, a factor eight
// that a lenient parser would hide. A space may separate the number from
// its unit. The result is rounded to whole bytes and must fit an int64;
// negative sizes are refused.
//
// The package has no state; every function is safe for concurrent use.
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every error of Parse.
var ErrSyntax = errors.New("bytesize: want a number of bytes, optionally with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)")

// units maps each accepted suffix to its multiplier.
var units = map[string]float64{
	"": 1, "B": 1,
	"k": 1e3, "K": 1e3, "kB": 1e3, "KB": 1e3,
	"M": 1e6, "MB": 1e6,
	"G": 1e9, "GB": 1e9,
	"T": 1e12, "TB": 1e12,
	"Ki": 1 << 10, "KiB": 1 << 10,
	"Mi": 1 << 20, "MiB": 1 << 20,
	"Gi": 1 << 30, "GiB": 1 << 30,
	"Ti": 1 << 40, "TiB": 1 << 40,
}

// Parse returns the bytes s names.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	// The number is the longest prefix of digits, dots, signs and
	// exponents; strconv says whether it is one.
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E')
	})
	if end < 0 {
		end = len(s)
	}
	number, unit := s[:end], strings.TrimSpace(s[end:])
	mult, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("%w: %q: unknown unit %q", ErrSyntax, s, unit)
	}
	f, err := strconv.ParseFloat(number, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%w: %q", ErrSyntax, s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%w: %q: must not be negative", ErrSyntax, s)
	}
	v := math.Round(f * mult)
	// float64(math.MaxInt64) rounds up to 2^63, which does not fit.
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q: more than %d bytes", ErrSyntax, s, int64(math.MaxInt64))
	}
	return int64(v), nil
}

// Flag is a pflag.Value (and flag.Value) that stores a size in *p. Its
// String is the plain number of bytes, which Parse reads back.
type Flag struct {
	p *int64
	// perSecond accepts a "/s" after the unit, for rates: "100MiB/s".
	perSecond bool
}

// NewFlag returns a Flag of a size, writing to p.
func NewFlag(p *int64) Flag { return Flag{p: p} }

// NewRateFlag returns a Flag of bytes per second, writing to p: Set
// accepts what Parse does, optionally followed by "/s".
func NewRateFlag(p *int64) Flag { return Flag{p: p, perSecond: true} }

func (f Flag) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatInt(*f.p, 10)
}

// Set parses s with Parse.
func (f Flag) Set(s string) error {
	if f.perSecond {
		s = strings.TrimSuffix(strings.TrimSpace(s), "/s")
	}
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// Type names the value in pflag's help.
func (f Flag) Type() string {
	if f.perSecond {
		return "bytes/s"
	}
	return "bytes"
}
