package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBeforeRestore: while the state is restored (nothing attached yet),
// /healthz answers, /readyz says why it is not ready, and /metrics has the
// process's metrics and rlserver_ready 0.
func TestBeforeRestore(t *testing.T) {
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base := "http://" + s.Addr().String()
	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || body != "not ready: restoring state\n" {
		t.Errorf("/readyz = %d %q", code, body)
	}
	_, body := get(t, base+"/metrics")
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if f := fams["rlserver_ready"]; f == nil || f.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("rlserver_ready = %v", f)
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Errorf("no Go or process metrics")
	}
	s.Restored() // still nothing attached: not ready
	if code, _ := get(t, base+"/readyz"); code != 503 {
		t.Errorf("/readyz with no source = %d", code)
	}
}
