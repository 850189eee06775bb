package search

// Updates is how many documents the index has been handed to write since
// it was opened (scorch's own count).
func (x *Index) Updates() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	m, _ := x.idx.StatsMap()["index"].(map[string]any)
	n, _ := m["TotUpdates"].(uint64)
	return n
}
