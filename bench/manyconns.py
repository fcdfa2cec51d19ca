#!/usr/bin/env python3
"""bench/manyconns.py PORT N [COMMAND ...]: the cost of a command (default
INFO; CLIENT LIST is the other one that walks every connection) with N
idle connections.

Opens N connections to an rlserver (or Redis) on 127.0.0.1:PORT, each
sending ten commands of different types (inline) and staying open, then
times 300 calls of the command with redis-benchmark and prints INFO
commandstats' line for it (usec_per_call). Raise the file limit (ulimit
-n) for N beyond about 1,000.
"""
import socket
import subprocess
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])
command = sys.argv[3:] or ["INFO"]
stat = "cmdstat_" + "|".join(command[:2]).lower() + ":" if len(command) > 1 and command[0].upper() in ("CLIENT", "CONFIG", "COMMAND") else "cmdstat_" + command[0].lower() + ":"
cmds = [b"PING", b"ECHO x", b"TIME", b"DBSIZE", b"EXISTS a", b"TTL a", b"TYPE a",
        b"CL.THROTTLE k 10 10 60", b"CL.TOKENBUCKET t 10 1 1s", b"CL.WINDOW w 10 1s"]
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"\r\n".join(cmds) + b"\r\n")
    socks.append(s)
time.sleep(1)
for s in socks:
    s.recv(65536)
subprocess.run(["redis-cli", "-p", str(port), "CONFIG", "RESETSTAT"], capture_output=True)
subprocess.run(["redis-benchmark", "-p", str(port), "-c", "1", "-n", "300", "-q", *command], capture_output=True)
out = subprocess.run(["redis-cli", "-p", str(port), "INFO", "commandstats"], capture_output=True, text=True).stdout
print(next((l for l in out.splitlines() if l.startswith(stat)), "no " + stat + " line"))
