// Command example protects an HTTP endpoint with rlserver: 10 requests per
// second per client IP with bursts of 20, failing open to a local limiter
// while the server is unreachable.
//
//	go run ./cmd/rlserver &            # in the repository root
//	cd sdk/go && go run ./example      # then: curl -i localhost:8080/
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	rlserver "github.com/rlserver/rlserver/sdk/go"
)

func main() {
	addr := flag.String("rlserver", "127.0.0.1:6379", "rlserver address")
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	flag.Parse()

	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{*addr}, ContextTimeoutEnabled: true})
	rl := rlserver.New(rdb, rlserver.Options{
		Timeout: 50 * time.Millisecond,
		Failure: rlserver.FailLocal,
		OnError: func(e rlserver.ErrorEvent) { log.Printf("rlserver unreachable (%s): %v", e.Command, e.Err) },
	})
	limit := rlserver.Middleware(rlserver.MiddlewareOptions{
		Limiter: rl.TokenBucket(20, 10, time.Second),
		Policy:  "per-ip",
		Key:     rlserver.KeyByIP,
	})
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) })
	log.Printf("serving http://%s/", *listen)
	log.Fatal(http.ListenAndServe(*listen, limit(hello)))
}
