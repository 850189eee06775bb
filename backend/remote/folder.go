package remote

import "strings"

// HostFolder reports whether cwd is a folder a task or chat on a host may
// name: "~" or "~/…" (the home of the user Conch signs in as there) or an
// absolute path, which the host's runner checks there.
func HostFolder(cwd string) bool {
	return (cwd == "~" || strings.HasPrefix(cwd, "~/") || strings.HasPrefix(cwd, "/")) && !strings.ContainsRune(cwd, 0)
}

// AtHome writes cwd, a folder on a host, with the home there (home) in
// place of a leading "~"; any other folder is as it is.
func AtHome(cwd, home string) string {
	if cwd == "~" || strings.HasPrefix(cwd, "~/") {
		return home + cwd[1:]
	}
	return cwd
}
