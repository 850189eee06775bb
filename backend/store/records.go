package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The generic ways of a bucket that holds one JSON record per id
// (providers, hosts, routines): list every record, put one, delete one.

// listRecords decodes every record of bucket, in key order, with id giving
// each one's id. Records that cannot be decoded (or whose id is not their
// key) are left out and named in an error matching ErrCorrupt, returned
// with the others; what says what is listed, for the errors.
func listRecords[T any](b *Bolt, bucket []byte, what string, id func(T) string) ([]T, error) {
	out := []T{}
	var bad []string
	err := b.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			var r T
			if err := json.Unmarshal(v, &r); err != nil || !bytes.Equal([]byte(id(r)), k) {
				bad = append(bad, string(k))
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("list %s: %w: %s", what, ErrCorrupt, strings.Join(bad, ", "))
	}
	return out, nil
}

// putRecord writes r under id in bucket durably, in one transaction.
func putRecord(b *Bolt, bucket []byte, what, id string, r any) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("put %s %s: %w", what, id, err)
	}
	if err := b.submit(op{bucket: bucket, key: []byte(id), value: v}); err != nil {
		return fmt.Errorf("put %s %s: %w", what, id, err)
	}
	return nil
}

// deleteRecord removes id's record from bucket durably, or returns an
// error matching ErrNotFound.
func deleteRecord(b *Bolt, bucket []byte, what, id string) error {
	if err := b.submit(op{bucket: bucket, key: []byte(id), del: true, mustExist: true}); err != nil {
		return fmt.Errorf("delete %s %s: %w", what, id, err)
	}
	return nil
}
