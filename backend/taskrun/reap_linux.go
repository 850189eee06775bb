package taskrun

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// reapGroup ends what a task started under a Conch that died: the process
// group pgid if its leader is still the task's, then any process still
// marked with the task's id (a child that left the group). Processes are
// recognised by CONCH_TASK_ID in their environment, so a pid reused by an
// unrelated program is never signalled.
func reapGroup(pgid int, taskID string) {
	if marked(pgid, taskID) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if marked(pid, taskID) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// marked reports whether process pid carries taskID's mark.
func marked(pid int, taskID string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	mark := []byte(EnvTaskID + "=" + taskID + "\x00")
	return bytes.HasPrefix(env, mark) || bytes.Contains(env, append([]byte{0}, mark...))
}
