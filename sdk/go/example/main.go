// Command example protects an HTTP endpoint with rlserver: 10 requests per
// second per client IP with bursts of 20, failing over to a local limiter
// while the server is unreachable. Its code is the README's example
// (TestReadmeExampleIsCompiled holds them equal).
//
//	go run ./cmd/rlserver &            # in the repository root
//	cd sdk/go && go run ./example      # then: curl -i localhost:8080/
package main

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	rlserver "github.com/rlserver/rlserver/sdk/go"
)

func main() {
	myHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) })

	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: []string{"127.0.0.1:6379"}, ContextTimeoutEnabled: true,
		DialerRetries: 1, MaxRetries: -1, // one attempt: the policy answers at once
		// Password: "...",               // with rlserver --requirepass
	})
	rl := rlserver.New(rdb, rlserver.Options{
		Timeout: 50 * time.Millisecond,
		Failure: rlserver.FailLocal, // in-process limiter while rlserver is away
		OnError: func(e rlserver.ErrorEvent) { log.Print(e.Err) },
	})
	if err := rl.Check(context.Background()); err != nil {
		log.Print(err) // a wrong password is reported here, at start (and logged)
	}
	limit := rlserver.Middleware(rlserver.MiddlewareOptions{
		Limiter: rl.TokenBucket(20, 10, time.Second), // bursts of 20, 10/s
		Key:     rlserver.KeyByIP,                    // keys "rl:default:tokenbucket:<ip>"
	})
	log.Fatal(http.ListenAndServe(":8080", limit(myHandler)))
}
