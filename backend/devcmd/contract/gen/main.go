// Command gen writes the frontend's wire contract from the Go types (see
// package contract): `go generate ./...` runs it.
package main

import (
	"fmt"
	"os"

	"conch/backend/devcmd/contract"
)

func main() {
	if err := contract.Write(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
