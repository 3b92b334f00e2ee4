package prober

// Kind is a probe kind.
type Kind int

const (
	Liveness Kind = iota
	Readiness
	Startup
)

// String is the probe kind as upstream names it in events and logs.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Result is the outcome of a probe, or the latest result of a worker.
type Result int

const (
	// Unknown: no result yet, or the probe could not be run (an error that
	// says nothing about the container's health).
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "unknown"
}
