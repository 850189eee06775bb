package chattask

import (
	"fmt"
	"net"
)

// Ports: each helper gets a range of PortSpan ports of its own, from
// PortBase up, as CONCH_PORT (the first) in its commands' environment and
// its prompt, so the dev servers of helpers side by side never collide.
const (
	PortBase  = 42000
	PortSpan  = 10
	portRange = 100 // ranges to choose from
)

// EnvPort names a helper's first port.
const EnvPort = "CONCH_PORT"

// takePort gives task id the lowest range no other helper holds whose
// first port is free on this computer; 0 when none is.
func (x *Executor) takePort(id string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ports == nil {
		x.ports = map[int]string{}
	}
	for i := 0; i < portRange; i++ {
		base := PortBase + i*PortSpan
		if _, held := x.ports[base]; held {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base))
		if err != nil {
			continue // something else listens there
		}
		ln.Close()
		x.ports[base] = id
		return base
	}
	return 0
}

func (x *Executor) dropPort(base int) {
	x.mu.Lock()
	delete(x.ports, base)
	x.mu.Unlock()
}

// portPrompt tells a helper's model its ports.
func portPrompt(base int) string {
	return fmt.Sprintf("Ports %d to %d are yours alone ($%s=%d is set in your commands' environment): use them for any server you start, "+
		"so you do not collide with the other helpers working beside you.", base, base+PortSpan-1, EnvPort, base)
}
