package console

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/tiering"
)

// Prices are what the object store and the network charge, for the
// console's monthly estimates. The defaults are the list prices of AWS
// S3 Standard and of AWS's transfer between availability zones; set the
// flags to your provider's.
type Prices struct {
	// PutPer1000 (--cost-put-per-1000) is the price of 1,000 PUT-class
	// requests (PUT, and LIST, which S3 bills as PUT).
	PutPer1000 float64 `json:"put_per_1000"`
	// GetPer1000 (--cost-get-per-1000) is the price of 1,000 GET-class
	// requests (GET, ranged GET, HEAD).
	GetPer1000 float64 `json:"get_per_1000"`
	// StorageGBMonth (--cost-storage-gb-month) is the price of storing one
	// GB (2^30 bytes, as S3 bills) for a month.
	StorageGBMonth float64 `json:"storage_gb_month"`
	// CrossZonePerGB (--cost-cross-zone-per-gb) is the price of one GB
	// (2^30 bytes) sent between zones, which a classic topic's followers
	// pay for every byte they copy when racks are zones (the cost model,
	// costmodel.go). AWS bills it on both sides, $0.01 each.
	CrossZonePerGB float64 `json:"cross_zone_per_gb"`
}

// DefaultPrices are S3 Standard's and AWS's cross-zone list prices in US
// dollars.
func DefaultPrices() Prices {
	return Prices{PutPer1000: 0.005, GetPer1000: 0.0004, StorageGBMonth: 0.023, CrossZonePerGB: 0.02}
}

// RegisterFlags adds the --cost-* flags with p's values as the defaults.
func (p *Prices) RegisterFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&p.PutPer1000, "cost-put-per-1000", p.PutPer1000, "Price of 1,000 PUT or LIST requests to the object store, for the console's cost estimate.")
	fs.Float64Var(&p.GetPer1000, "cost-get-per-1000", p.GetPer1000, "Price of 1,000 GET or HEAD requests to the object store, for the console's cost estimate.")
	fs.Float64Var(&p.StorageGBMonth, "cost-storage-gb-month", p.StorageGBMonth, "Price of storing one GB in the object store for a month, for the console's cost estimate.")
	fs.Float64Var(&p.CrossZonePerGB, "cost-cross-zone-per-gb", p.CrossZonePerGB, "Price of one GB sent between zones, both sides counted, for the console's replication cost of classic topics, which applies when racks are zones.")
}

// Validate names the first negative price by its flag.
func (p Prices) Validate() error {
	for _, f := range []struct {
		flag string
		v    float64
	}{{"cost-put-per-1000", p.PutPer1000}, {"cost-get-per-1000", p.GetPer1000}, {"cost-storage-gb-month", p.StorageGBMonth},
		{"cost-cross-zone-per-gb", p.CrossZonePerGB}} {
		if !(f.v >= 0) || math.IsInf(f.v, 1) { // NaN fails the comparison
			return fmt.Errorf("--%s %v: must be a price of zero or more", f.flag, f.v)
		}
	}
	return nil
}

// secondsPerMonth is 30 days, the month of the estimate.
const secondsPerMonth = 30 * 24 * 3600

// PerMonth scales usage counted over seconds to a 30-day month at the same
// average rate; zero when seconds is not positive.
func PerMonth(u tiering.TopicUsage, seconds float64) tiering.TopicUsage {
	if seconds <= 0 {
		return tiering.TopicUsage{}
	}
	k := secondsPerMonth / seconds
	return tiering.TopicUsage{Puts: u.Puts * k, Gets: u.Gets * k, Lists: u.Lists * k, Deletes: u.Deletes * k,
		BytesWritten: u.BytesWritten * k, BytesRead: u.BytesRead * k}
}

// Cost is an estimate of a month of store charges.
type Cost struct {
	Requests float64 `json:"requests"`
	Storage  float64 `json:"storage"`
	Total    float64 `json:"total"`
}

// MonthlyCost prices a month of requests (perMonth, from PerMonth) and
// bucketBytes held all month. DELETE requests are free on S3 and cost
// nothing here.
func (p Prices) MonthlyCost(perMonth tiering.TopicUsage, bucketBytes int64) Cost {
	c := Cost{
		Requests: ((perMonth.Puts+perMonth.Lists)*p.PutPer1000 + perMonth.Gets*p.GetPer1000) / 1000,
		Storage:  float64(bucketBytes) / (1 << 30) * p.StorageGBMonth,
	}
	c.Total = c.Requests + c.Storage
	return c
}

// MonthlyPutCost prices 30 days of putsPerSecond PUTs.
func (p Prices) MonthlyPutCost(putsPerSecond float64) float64 {
	return putsPerSecond * secondsPerMonth / 1000 * p.PutPer1000
}

// MonthlyCrossZoneCost prices 30 days of bytesPerSecond sent between
// zones.
func (p Prices) MonthlyCrossZoneCost(bytesPerSecond float64) float64 {
	return bytesPerSecond * secondsPerMonth / (1 << 30) * p.CrossZonePerGB
}
