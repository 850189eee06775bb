package procmark

import (
	"bytes"
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"
)

// environOf reads a process's environment from kern.procargs2: argc, the
// executable path, argv, then the environment, NUL-separated. The OS gives
// it for this user's processes only, which are the ones Conch starts.
func environOf(pid int) ([]byte, bool) {
	raw, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil || len(raw) < 4 {
		return nil, false
	}
	argc := int(binary.LittleEndian.Uint32(raw[:4]))
	rest := raw[4:]
	// The executable path, then padding NULs.
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil, false
	}
	rest = bytes.TrimLeft(rest[i:], "\x00")
	for n := 0; n < argc && len(rest) > 0; n++ {
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			return nil, false
		}
		rest = rest[j+1:]
	}
	return rest, true
}

func pids() []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(procs))
	for _, p := range procs {
		out = append(out, int(p.Proc.P_pid))
	}
	return out
}

func kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
