#!/bin/sh
# Builds the Java SDK with plain javac; "./build.sh test" also runs the tests
# (Debian's junit5 console launcher) against an rlserver built from the repo
# (or $RLSERVER_BIN); "./build.sh bench [rounds]" measures the SDK's overhead.
set -eu
cd "$(dirname "$0")"
# The Servlet filter (servlet/) compiles against the Servlet 4.0 API
# (Debian's libservlet-api-java); the SDK itself (src/) needs only the JDK.
SERVLET=${SERVLET_API_JAR:-/usr/share/java/servlet-api.jar}
if [ ! -f "$SERVLET" ]; then
	echo "build.sh: no $SERVLET (Debian: libservlet-api-java; or set SERVLET_API_JAR)" >&2
	exit 1
fi
# Only what this script makes is removed, never the rest of build/.
rm -rf build/classes build/servlet-classes build/test-classes build/example
mkdir -p build/classes build/servlet-classes build/test-classes build/example
javac --release 17 -d build/classes $(find src -name '*.java')
javac --release 17 -cp build/classes:$SERVLET -d build/servlet-classes $(find servlet -name '*.java')
javac --release 17 -cp build/classes:build/servlet-classes:$SERVLET -d build/example example/*.java
case "${1:-}" in test|bench) ;; *) exit 0 ;; esac
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
javac --release 17 -cp build/classes:build/servlet-classes:$SERVLET:$JUNIT -d build/test-classes $(find test -name '*.java')
if [ -z "${RLSERVER_BIN:-}" ]; then
	RLSERVER_BIN=$(pwd)/build/rlserver
	(cd ../.. && go build -o "$RLSERVER_BIN" ./cmd/rlserver)
	export RLSERVER_BIN
fi
if [ "$1" = bench ]; then
	exec java -cp build/classes:build/test-classes io.rlserver.Bench "${2:-50000}"
fi
java -jar $JUNIT --class-path build/classes:build/servlet-classes:$SERVLET:build/test-classes:build/example --select-package io.rlserver --disable-banner --details=summary --fail-if-no-tests
