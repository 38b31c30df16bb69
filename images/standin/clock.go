// The stand-in's only source of time, so tests can move it instead of sleeping.
//
// Whether the model is "loaded" and when the process "crashes" are decided from this clock:
// the real one in production, a fake one (clock_test.go) in the tests.
package main

import "time"

// clock is the part of package time the stand-in uses.
type clock interface {
	Now() time.Time
	// After fires once, d after the call.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
