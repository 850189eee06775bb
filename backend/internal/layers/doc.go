// Package layers holds the test that keeps Conch's packages in layers: a
// package imports only packages on lower floors, so shared records sit on
// the ground floor and no arrow runs back up (see docs/ARCHITECTURE.md).
package layers
