#!/usr/bin/env node
// Runs the tests: compiles the SDK and the README's example, builds the
// server from this repository (unless $RLSERVER_BIN names one), then runs
// node:test over test/*.test.js, one file at a time.
"use strict";
const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const tsc = path.join(root, "node_modules", ".bin", "tsc");
execFileSync(tsc, ["-p", "tsconfig.json"], { cwd: root, stdio: "inherit" });
execFileSync(tsc, ["-p", "example/tsconfig.json"], { cwd: root, stdio: "inherit" });
let tmp;
let bin = process.env.RLSERVER_BIN;
if (!bin) {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rlserver-sdk-node-"));
  bin = path.join(tmp, "rlserver");
  execFileSync("go", ["build", "-o", bin, "./cmd/rlserver"], { cwd: path.resolve(root, "../.."), stdio: "inherit" });
}
const files = fs.readdirSync(__dirname).filter((f) => f.endsWith(".test.js")).map((f) => path.join(__dirname, f));
const only = process.argv.slice(2);
const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...(only.length ? only : files)], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, RLSERVER_BIN: bin },
});
if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
process.exit(r.status ?? 1);
