"use strict";
// Starting rlserver for the tests: in memory, DEBUG CLOCK enabled, on a
// free 127.0.0.1 port read from its "listening on" log line.
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const Redis = require("ioredis");

const bin = process.env.RLSERVER_BIN;
if (!bin) throw new Error("RLSERVER_BIN is not set: run the tests with `npm test`");

/** Starts rlserver with args; resolves to {host, port, addr, stop()}. */
function startServer(args = ["--port", "0"]) {
  const p = spawn(bin, ["--dir", "", "--enable-debug-command", "--bind", "127.0.0.1", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise((resolve) => p.once("exit", resolve));
  return new Promise((resolve, reject) => {
    let buf = "";
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      reject(new Error(`rlserver ${args.join(" ")} did not log its address within 30s`));
    }, 30000);
    const onData = (chunk) => {
      buf += chunk;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(buf);
      if (m) {
        clearTimeout(timer);
        p.stderr.off("data", onData);
        p.stderr.resume();
        p.stdout.resume();
        const port = Number(m[1]);
        resolve({
          host: "127.0.0.1",
          port,
          addr: `127.0.0.1:${port}`,
          stop: async () => {
            if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
            await exited;
          },
        });
      }
    };
    p.stderr.setEncoding("utf8");
    p.stderr.on("data", onData);
    p.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`rlserver ${args.join(" ")} exited (${code}) before listening:\n${buf}`));
    });
  });
}

/** An ioredis client as the README configures it: no offline queue, one try per call. */
function redisFor(srv, extra = {}) {
  return new Redis({ host: srv.host, port: srv.port, enableOfflineQueue: false, maxRetriesPerRequest: 0, ...extra });
}

/** A free port nobody listens on (connections are refused). */
async function closedPort() {
  const s = net.createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const port = s.address().port;
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * A 127.0.0.1 listener that never accepts, its backlog filled, so that
 * a new connection hangs in the handshake: python3 listens with backlog 0
 * and never accepts; we open connections until one does not complete.
 */
async function hangingListener() {
  const py = spawn("python3", ["-c", "import socket,sys\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(0)\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()"], { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise((resolve, reject) => {
    py.stdout.setEncoding("utf8");
    py.stdout.once("data", (d) => resolve(Number(d.trim())));
    py.once("exit", () => reject(new Error("python3 listener exited")));
  });
  const held = [];
  for (;;) {
    const sock = net.connect(port, "127.0.0.1");
    held.push(sock);
    sock.on("error", () => {});
    const ok = await new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), 300);
      sock.once("connect", () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    if (!ok) break;
    if (held.length > 64) throw new Error("the backlog never filled");
  }
  return {
    port,
    close: () => {
      for (const s of held) s.destroy();
      py.stdin.end();
      py.kill();
    },
  };
}

/** Splits complete RESP commands off buf: [commands, the rest]. */
function parseCommands(buf) {
  const cmds = [];
  let i = 0;
  while (buf[i] === "*") {
    const e = buf.indexOf("\r\n", i);
    if (e < 0) break;
    const n = Number(buf.slice(i + 1, e));
    const args = [];
    let j = e + 2;
    for (let k = 0; k < n; k++) {
      const e2 = buf.indexOf("\r\n", j);
      if (e2 < 0) break;
      const len = Number(buf.slice(j + 1, e2));
      if (buf.length < e2 + 4 + len) break;
      args.push(buf.slice(e2 + 2, e2 + 2 + len));
      j = e2 + 4 + len;
    }
    if (args.length < n) break;
    cmds.push(args);
    i = j;
  }
  return [cmds, buf.slice(i)];
}

/**
 * A RESP server on 127.0.0.1 that answers what ioredis sends on connect
 * (HELLO refused, so RESP2; CLIENT; the INFO ready check) and every other
 * command with the decision [1, 5, 4, 0, 200]. A command whose key (second
 * word) is stallOn stalls the connection, as a hung server does: it and
 * every later command are answered, in order, only at resume(). With
 * holdReady the INFO ready check is answered only at release(). commands
 * lists what it received.
 */
async function respServer({ stallOn, holdReady = false } = {}) {
  const commands = [];
  const conns = new Set();
  let released = !holdReady;
  const srv = net.createServer((sock) => {
    const conn = { sock, stalled: false, queued: [], waitingReady: false };
    conns.add(conn);
    sock.on("close", () => conns.delete(conn));
    sock.on("error", () => {});
    sock.setEncoding("latin1");
    const reply = (r) => (conn.stalled ? conn.queued.push(r) : sock.write(r));
    let buf = "";
    sock.on("data", (d) => {
      let cmds;
      [cmds, buf] = parseCommands(buf + d);
      for (const c of cmds) {
        commands.push(c);
        const name = c[0].toUpperCase();
        if (name === "HELLO") reply("-ERR unknown command 'HELLO'\r\n");
        else if (name === "CLIENT") reply("+OK\r\n");
        else if (name === "INFO") released ? reply(INFO) : (conn.waitingReady = true);
        else if (name === "PING") reply("+PONG\r\n");
        else {
          if (stallOn !== undefined && c[1] === stallOn) conn.stalled = true;
          reply(DECISION);
        }
      }
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return {
    port: srv.address().port,
    commands,
    release: () => {
      released = true;
      for (const c of conns) if (c.waitingReady) c.sock.write(INFO);
    },
    resume: () => {
      for (const c of conns) {
        c.stalled = false;
        for (const r of c.queued.splice(0)) c.sock.write(r);
      }
    },
    close: () => {
      for (const c of conns) c.sock.destroy();
      return new Promise((r) => srv.close(r));
    },
  };
}
const INFO = "$11\r\nloading:0\r\n\r\n";
const DECISION = "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:200\r\n";

const EPOCH_MS = 1_800_000_000_000;

async function setClock(redis, ms = EPOCH_MS) {
  await redis.call("DEBUG", "CLOCK", "SET", String(ms));
}

/** Polls cond until it is true or the deadline passes. */
async function until(cond, ms = 5000, what = "condition") {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5)); // the poll interval, not a synchronisation
  }
}

function tmpdir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), "rlserver-node-test-"));
}

module.exports = { startServer, redisFor, closedPort, hangingListener, respServer, setClock, until, tmpdir, EPOCH_MS, Redis };
