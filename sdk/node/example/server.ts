import express from "express";
import Redis from "ioredis";
import { Client, middleware } from "@rlserver/sdk";

const redis = new Redis(process.env.RLSERVER_URL ?? "redis://127.0.0.1:6379", {
  enableOfflineQueue: false, maxRetriesPerRequest: 0, // the policy answers at once
});
const rl = new Client(redis, {
  timeoutMs: 50, failure: "local", // an in-process limiter while rlserver is away
  onError: (e) => console.error(`rlserver: ${e.command}: ${e.error.message}`),
});
rl.check().catch(() => {}); // a wrong password is logged here, at start
const app = express();
// Bursts of 20, then 10/s per client address; keys "rl:default:tokenbucket:<ip>".
app.use(middleware({ limiter: rl.tokenBucket(20, 10, 1000) }));
app.get("/", (_req, res) => { res.send("hello\n"); });
app.listen(Number(process.env.PORT ?? 8080), () => console.log("listening"));
