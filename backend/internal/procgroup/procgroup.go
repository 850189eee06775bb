// Package procgroup starts commands in a process group of their own, so a
// stop reaches every child they start, and signals that group.
package procgroup
