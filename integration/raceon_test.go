//go:build race

package integration

// raceEnabled is true when this test binary runs with the race detector
// (go test -race): TestMain then builds the server with -race too.
const raceEnabled = true
