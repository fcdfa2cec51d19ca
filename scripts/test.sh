#!/usr/bin/env bash
# The whole test suite: set-up, format and vet checks, then every test with
# the race detector (integration tests build and start the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt -l lists unformatted files:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 12m ./...
# The Go SDK is its own module (gofmt -l . above already covers it): vet and
# test it against a server it builds from this tree.
(cd sdk/go && go vet ./... && go test -race -count=1 -timeout 5m ./...)
# The PHP SDK: Debian's phpunit, against a server its bootstrap builds.
(cd sdk/php && phpunit)
# The Java SDK: javac, then junit5's console launcher against a server it builds.
(cd sdk/java && ./build.sh test)
# The Node.js SDK: tsc, then node:test against a server it builds.
(cd sdk/node && npm test)
# The Python SDK: Debian's pytest, against a server its conftest builds.
(cd sdk/python && /usr/bin/python3 -m pytest -q -p no:cacheprovider)
