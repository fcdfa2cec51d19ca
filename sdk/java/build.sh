#!/bin/sh
# Builds the Java SDK with plain javac; "./build.sh test" also runs the tests
# (Debian's junit5 console launcher) against an rlserver built from the repo
# (or $RLSERVER_BIN); "./build.sh bench [rounds]" measures the SDK's overhead.
set -eu
cd "$(dirname "$0")"
# Only what this script makes is removed, never the rest of build/.
rm -rf build/classes build/test-classes build/example
mkdir -p build/classes build/test-classes build/example
javac --release 17 -d build/classes $(find src -name '*.java')
javac --release 17 -cp build/classes -d build/example example/*.java
case "${1:-}" in test|bench) ;; *) exit 0 ;; esac
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
javac --release 17 -cp build/classes:$JUNIT -d build/test-classes $(find test -name '*.java')
if [ -z "${RLSERVER_BIN:-}" ]; then
	RLSERVER_BIN=$(pwd)/build/rlserver
	(cd ../.. && go build -o "$RLSERVER_BIN" ./cmd/rlserver)
	export RLSERVER_BIN
fi
if [ "$1" = bench ]; then
	exec java -cp build/classes:build/test-classes io.rlserver.Bench "${2:-50000}"
fi
java -jar $JUNIT --class-path build/classes:build/test-classes:build/example --select-package io.rlserver --disable-banner --details=summary --fail-if-no-tests
