#!/usr/bin/env python3
"""bench/memconns.py PORT N PID: the server's RSS with N idle connections.

Reads rlserver's (PID's) RSS, opens N connections to 127.0.0.1:PORT that
each run ten command types and stay open, sends MEMORY PURGE, and prints
the RSS before and after. Raise the file limit for N beyond about 1,000.
"""
import socket, sys, time, subprocess
port, n, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cmds = [b"PING", b"ECHO x", b"TIME", b"DBSIZE", b"EXISTS a", b"TTL a", b"TYPE a", b"CL.THROTTLE k 10 10 60", b"CL.TOKENBUCKET t 10 1 1s", b"CL.WINDOW w 10 1s"]
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return int(l.split()[1])//1024
r0 = rss()
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"\r\n".join(cmds) + b"\r\n"); socks.append(s)
time.sleep(1)
for s in socks: s.recv(65536)
subprocess.run(["redis-cli", "-p", str(port), "MEMORY", "PURGE"], capture_output=True)
time.sleep(0.5)
print(f"RSS {r0} -> {rss()} MB with {n} connections")
