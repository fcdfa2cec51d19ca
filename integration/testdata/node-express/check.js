// Runs express-rate-limit with rate-limit-redis's RedisStore (on ioredis, as
// rate-limit-redis's readme shows), unchanged, against the Redis URL given
// as the first argument, drives an express app with HTTP requests (node's
// fetch) and prints a transcript, one line per step, for
// integration/node_express_test.go to compare between rlserver and
// redis-server. Reset times are printed in whole seconds (reset=, retry=,
// resetIn=); the test allows for the time that passes.
//
// Usage: node check.js redis://127.0.0.1:6379
'use strict';

const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const Redis = require('ioredis');

const url = process.argv[2];
if (!url) {
  console.error('usage: node check.js redis://host:port');
  process.exit(2);
}

// Never hang the test: a server that does not answer fails the run.
setTimeout(() => {
  console.error('check.js: timed out');
  process.exit(3);
}, 60000).unref();

const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: false });
client.on('error', (err) => console.error('ioredis:', err.message));

// The readme's ioredis sendCommand.
const store = (prefix) =>
  new RedisStore({
    sendCommand: (command, ...args) => client.call(command, ...args),
    prefix,
  });

// The client is the x-client header, so that two clients can be told apart
// over one loopback address.
const keyGenerator = (req) => req.get('x-client') || 'anonymous';

// 5 requests a minute, draft-7 and legacy headers.
const limiter = rateLimit({
  windowMs: 60 * 1000,
  limit: 5,
  standardHeaders: 'draft-7',
  legacyHeaders: true,
  keyGenerator,
  store: store('rl:'),
});

// 3 a minute, failed requests (status >= 400) given back (DECR).
const failLimiter = rateLimit({
  windowMs: 60 * 1000,
  limit: 3,
  standardHeaders: 'draft-7',
  legacyHeaders: false,
  skipFailedRequests: true,
  keyGenerator,
  store: store('rlfail:'),
});

// 2 a minute, the expiry pushed back on every hit (PEXPIRE in the script).
const slidingLimiter = rateLimit({
  windowMs: 60 * 1000,
  limit: 2,
  standardHeaders: 'draft-6',
  legacyHeaders: false,
  keyGenerator,
  store: new RedisStore({
    sendCommand: (command, ...args) => client.call(command, ...args),
    prefix: 'rlslide:',
    resetExpiryOnChange: true,
  }),
});

const app = express();
app.get('/', limiter, (req, res) => res.send('ok'));
app.get('/fail', failLimiter, (req, res) => res.status(500).send('failed'));
app.get('/slide', slidingLimiter, (req, res) => res.send('ok'));

const secs = (ms) => Math.round(ms / 1000);

async function main() {
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  const out = (line) => process.stdout.write(line + '\n');

  const hit = async (label, path, who) => {
    const res = await fetch(base + path, { headers: { 'x-client': who } });
    await res.text();
    const h = (name) => res.headers.get(name);
    const parts = [label, path, who, String(res.status)];
    if (h('ratelimit-policy') !== null) parts.push(`policy=${h('ratelimit-policy')}`);
    // draft-7: one RateLimit header; draft-6: three.
    if (h('ratelimit') !== null) parts.push(`ratelimit=[${h('ratelimit')}]`);
    if (h('ratelimit-limit') !== null) parts.push(`limit=${h('ratelimit-limit')}`);
    if (h('ratelimit-remaining') !== null) parts.push(`remaining=${h('ratelimit-remaining')}`);
    if (h('ratelimit-reset') !== null) parts.push(`reset=${h('ratelimit-reset')}`);
    if (h('x-ratelimit-limit') !== null) {
      parts.push(`x-limit=${h('x-ratelimit-limit')}`, `x-remaining=${h('x-ratelimit-remaining')}`);
      // X-RateLimit-Reset is a Unix time: only its distance from now.
      const xr = h('x-ratelimit-reset');
      parts.push(`x-reset=${xr === null ? 'none' : secs(Number(xr) * 1000 - Date.now())}`);
    }
    if (h('retry-after') !== null) parts.push(`retry=${h('retry-after')}`);
    out(parts.join(' '));
  };
  const get = async (label, lim, key) => {
    const info = await lim.getKey(key);
    out(`${label} getKey ${key} hits=${info.totalHits} resetIn=${secs(info.resetTime.getTime() - Date.now())}`);
  };

  // A: 7 requests, 5 admitted; B: its own count.
  for (let i = 1; i <= 7; i++) await hit(`a${i}`, '/', 'A');
  await hit('b1', '/', 'B');
  await get('a', limiter, 'A');
  await get('b', limiter, 'B');
  await get('nobody', limiter, 'nobody');
  // resetKey forgets A (DEL): 3 more admitted from 5.
  await limiter.resetKey('A');
  out('resetKey A');
  await get('a-reset', limiter, 'A');
  for (let i = 1; i <= 3; i++) await hit(`a-again${i}`, '/', 'A');
  await get('a-again', limiter, 'A');

  // Failed requests counted, then given back: never refused.
  for (let i = 1; i <= 5; i++) await hit(`fail${i}`, '/fail', 'C');
  await get('fail', failLimiter, 'C');

  // resetExpiryOnChange: 2 admitted, then refused.
  for (let i = 1; i <= 4; i++) await hit(`slide${i}`, '/slide', 'D');
  await get('slide', slidingLimiter, 'D');

  await new Promise((resolve) => server.close(resolve));
  await client.quit();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error('check.js:', err && err.stack ? err.stack : err);
    process.exit(1);
  },
);
