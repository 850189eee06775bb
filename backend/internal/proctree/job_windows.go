package proctree

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// job is the Windows job object the command's tree runs in: terminating
// it ends every process in it, and closing the last handle (Conch's exit)
// kills them too (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).
type job struct{ h windows.Handle }

func newJob(pid int) job {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return job{}
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return job{}
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(h)
		return job{}
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(h, p); err != nil {
		windows.CloseHandle(h)
		return job{}
	}
	return job{h: h}
}

func (j job) terminate() {
	if j.h != 0 {
		_ = windows.TerminateJobObject(j.h, 1)
	}
}

func (j job) close() {
	if j.h != 0 {
		_ = windows.CloseHandle(j.h)
	}
}
