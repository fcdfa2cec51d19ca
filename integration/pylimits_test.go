package integration

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/redistest"
)

// pythonForLimits is Debian's interpreter, the one python3-limits,
// python3-flask-limiter and python3-redis are installed for (a python3
// earlier on PATH, pyenv's say, lacks them).
const pythonForLimits = "/usr/bin/python3"

// TestPythonLimitsLibrary runs Python's limits 2.8.0 (Debian
// python3-limits) with its Redis storage and each of its strategies
// (fixed window, fixed window with elastic expiry, moving window: 2.8 has
// no sliding window counter, which the transcript asserts), and
// Flask-Limiter 3.3.0 on a redis:// storage_uri with a Flask app driven by
// its test client, unchanged, against rlserver and against redis-server
// (testdata/pylimits/check.py). The two transcripts must be the same line
// for line, and hold the exact lines below (so that both failing alike
// cannot pass).
func TestPythonLimitsLibrary(t *testing.T) {
	check := exec.Command(pythonForLimits, "-c", "import limits, flask_limiter, flask, redis; assert limits.__version__ == '2.8.0', limits.__version__")
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import limits 2.8.0, flask_limiter, flask and redis (%v: %s): run ./scripts/setup.sh (Debian python3-limits, python3-flask-limiter, python3-redis)",
			pythonForLimits, err, strings.TrimSpace(string(out)))
	}
	rl := start(t)
	ref := redistest.Start(t)
	run := func(name, addr string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, pythonForLimits, "testdata/pylimits/check.py", "redis://"+addr)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("check.py against %s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), stderr.String())
		}
		return strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	}
	theirs := run("redis-server", ref)
	ours := run("rlserver", rl.Addr)

	for _, tr := range []struct {
		name  string
		lines []string
	}{{"redis-server", theirs}, {"rlserver", ours}} {
		have := map[string]bool{}
		for _, l := range tr.lines {
			have[l] = true
		}
		for _, w := range pyLimitsExpected {
			if !have[w] {
				t.Errorf("%s's transcript lacks %q", tr.name, w)
			}
		}
	}
	compareTranscripts(t, "redis-server", theirs, "rlserver", ours)
}

// pyLimitsExpected are lines of the transcript on redis-server 7: times
// are relative to check.py's pinned clock.
var pyLimitsExpected = []string{
	"limits 2.8.0 strategies fixed-window fixed-window-elastic-expiry moving-window",
	"sliding window counter in this version: False",
	"storage RedisStorage True check True",

	// Fixed window, 5/minute: 5 of 7 admitted.
	"fixed stats before reset 0 remaining 5 test True",
	"fixed hit 1 True test True reset 60 remaining 4",
	"fixed hit 5 True test False reset 60 remaining 0",
	"fixed hit 6 False test False reset 60 remaining 0",
	"fixed hit 7 False test False reset 60 remaining 0",
	"fixed admitted 5 of 7",
	"fixed GET 7 TTL 60",
	// 10/hour with cost 3: 3 of 5, the counter counts denied hits too.
	"fixed cost 3 hit 3 True reset 3600 remaining 1",
	"fixed cost 3 hit 4 False reset 3600 remaining 0",
	"fixed cost admitted 3 of 5",
	"fixed cost GET 15 TTL 3600",
	"fixed cost after clear EXISTS 0 test True stats 10",
	"fixed cost hit after clear True False",
	"fixed 2/hour hits [True, True, False]",

	// Fixed window with elastic expiry, 3/minute: 3 of 5.
	"elastic hit 3 True test False reset 60 remaining 0",
	"elastic hit 4 False test False reset 60 remaining 0",
	"elastic admitted 3 of 5",
	"elastic GET 5 TTL 60",
	"elastic 2/hour hits True False",
	"after 1.2 s: TTL elastic 3600 TTL fixed 3599 GET elastic 3 GET fixed 4",

	// Moving window, 3/minute, hits 10 s apart: 3 of 5, then it slides.
	"moving stats before reset 60 remaining 3 test True",
	"moving hit t+0 True test True reset 60 remaining 2",
	"moving hit t+20 True test False reset 80 remaining 0",
	"moving hit t+30 False test False reset 80 remaining 0",
	"moving admitted 3 of 5",
	"moving LRANGE ['1767225620.125', '1767225610.125', '1767225600.125'] TTL 60",
	"moving window [1767225620, 3]",
	"moving hit t+61 True reset 121 remaining 0",
	"moving hit t+62 False reset 121 remaining 0",
	"moving hit t+81 True reset 141 remaining 1",
	"moving cost 2 hit t+85 False reset 141 remaining 1",
	"moving cost 2 hit t+122 True reset 182 remaining 0",
	"moving LRANGE ['1767225722.125', '1767225722.125', '1767225681.125']",
	"moving cost 4 at t+123 False",
	"moving cost 4 on an empty key True LRANGE ['1767225800.125', '1767225800.125', '1767225800.125']",
	"moving after clear EXISTS 0 stats 3",
	"moving 2/hour hits [True, True, False, False] stats 0 TTL 3600",

	// reset() is clear_keys.lua: KEYS LIMITER* and DEL in a script.
	"storage.reset() 7",
	"keys after reset []",

	// Flask-Limiter, each strategy: 5/minute admits 5 of 7, cost 2 of
	// 5/minute 2 of 4, the default 2/hour 2 of 3, the exempt route all.
	"flask_limiter 3.3.0",
	"flask fixed-window GET /five #1 200 limit 5 remaining 4 reset 1061 retry-after 60",
	"flask fixed-window GET /five #5 200 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask fixed-window GET /five #6 429 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask fixed-window /five admitted 5 of 7",
	"flask fixed-window GET /costly #2 200 limit 5 remaining 1 reset 1061 retry-after 60",
	"flask fixed-window GET /costly #3 429 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask fixed-window /costly admitted 2 of 4",
	"flask fixed-window GET /default #3 429 limit 2 remaining 0 reset 4601 retry-after 3600",
	"flask fixed-window /default admitted 2 of 3",
	"flask fixed-window /free admitted 3 of 3",
	"flask fixed-window keys ['LIMITER/fixed-window/127.0.0.1/costly/5/1/minute', 'LIMITER/fixed-window/127.0.0.1/default/2/1/hour', 'LIMITER/fixed-window/127.0.0.1/five/5/1/minute']",
	"flask fixed-window-elastic-expiry GET /five #6 429 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask fixed-window-elastic-expiry /five admitted 5 of 7",
	"flask fixed-window-elastic-expiry /costly admitted 2 of 4",
	"flask fixed-window-elastic-expiry /default admitted 2 of 3",
	"flask moving-window GET /five #5 200 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask moving-window GET /five #6 429 limit 5 remaining 0 reset 1061 retry-after 60",
	"flask moving-window /five admitted 5 of 7",
	// The moving window's remaining after a denied cost-2 hit is 1.
	"flask moving-window GET /costly #3 429 limit 5 remaining 1 reset 1061 retry-after 60",
	"flask moving-window /costly admitted 2 of 4",
	"flask moving-window /default admitted 2 of 3",
	"flask moving-window /free admitted 3 of 3",
}
