/**
 * rlserver's Node.js SDK: typed limiters over ioredis (standalone and
 * Cluster), a failure policy for when the server cannot be reached, the
 * IETF RateLimit fields, express middleware, and stores for
 * express-rate-limit and @fastify/rate-limit.
 */
export { Client, TimeoutError, keySlot, misconfigured, unreachable } from "./client";
export type { ErrorEvent, FailureMode, Options } from "./client";
export { BadReplyError, LimitedError, NEVER, parseDecision } from "./decision";
export type { Decision } from "./decision";
export { Base, Concurrency, Lease, LeakyBucket, Throttle, TokenBucket, WindowLimiter, dur } from "./limiters";
export type { AllDecision, Limiter, Rule, WindowMode } from "./limiters";
export { defaultKeyPrefix, headerFields, keyByIp, middleware, setHeaders, sfString } from "./http";
export type { MiddlewareOptions } from "./http";
export { RlserverStore, fastifyStore } from "./stores";
export type { FastifyStore, FastifyStoreOptions, RlserverStoreOptions } from "./stores";
