// Package xvfbtest starts a virtual X display of a test's own (Xvfb). It
// needs a Unix system with Xvfb.
package xvfbtest
