//go:build unix

package procmark

import (
	"fmt"
	"io/fs"
	"syscall"
)

func fileID(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
	}
	return ""
}
