//go:build !linux

package main

import (
	"encoding/json"
	"os"
)

// main says where it cannot serve: the sshd rig makes Linux users.
func main() {
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"skip": "a real host for the browser tests is served on Linux only"})
}
