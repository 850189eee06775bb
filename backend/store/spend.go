package store

import (
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// MonthSpend returns what was spent in month ("2006-01"), in USD; 0 when
// nothing was.
func (b *Bolt) MonthSpend(month string) (float64, error) {
	var v float64
	err := b.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketSpend).Get([]byte(month))
		if raw == nil {
			return nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return fmt.Errorf("%w: spend of %s is %q", ErrCorrupt, month, raw)
		}
		v = f
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("get spend of %s: %w", month, err)
	}
	return v, nil
}

// PutMonthSpend records what was spent in month, durably.
func (b *Bolt) PutMonthSpend(month string, usd float64) error {
	v := strconv.FormatFloat(usd, 'g', -1, 64)
	if err := b.submit(op{bucket: bucketSpend, key: []byte(month), value: []byte(v)}); err != nil {
		return fmt.Errorf("put spend of %s: %w", month, err)
	}
	return nil
}
