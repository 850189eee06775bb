package taskrun

// Held is how many task entries the runner keeps in memory.
func (r *Runner) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries.Len()
}

// CacheSize is how many finished tasks nobody holds stay in memory.
const CacheSize = cacheSize
