// Package integration holds tests that build the real conch binary and run
// it as a person would: `conch serve`, real shell tasks, kill -9, restart.
package integration
