// Package layers holds the tests that keep the house in shape (see
// docs/ARCHITECTURE.md): a package imports only packages on lower floors,
// so shared records sit on the ground floor and no arrow runs back up; the
// test rigs and developer commands are imported by no code a person runs;
// no hand-written file or function outgrows its room; and the map names
// every package.
package layers
