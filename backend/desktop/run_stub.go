//go:build !desktop

package desktop

// Run returns ErrUnavailable: this binary was built without the desktop tag.
func Run(o Options) error { return ErrUnavailable }
