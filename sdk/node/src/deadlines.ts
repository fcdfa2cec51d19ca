import type { Command } from "ioredis";

/**
 * The deadlines of one client's calls in flight. Every call of a client has
 * the same timeout, so the calls, in the order they were sent, are in
 * deadline order: one timer, at the first deadline, serves them all and moves
 * on to the next when it fires. A call costs two array pushes, not a timer
 * set and cleared plus a promise raced against the reply (a tenth of a local
 * round trip, measured by `npm run bench`). A call past its deadline has its
 * command rejected, so its caller gets the failure policy's answer at its
 * deadline; the reply, if it ever comes, is dropped by ioredis.
 *
 * Calls that ended are dropped from the front of the queue at the next call
 * or when the timer fires; on one connection replies come in order, so the
 * queue holds little more than the calls in flight.
 */
export class Deadlines {
  private cmds: (Command | undefined)[] = [];
  private rejects: (((err: Error) => void) | undefined)[] = [];
  private at: number[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly fire = () => this.expire();

  /**
   * @param ms the timeout of every call, > 0
   * @param error the error a call past its deadline is rejected with
   */
  constructor(
    private readonly ms: number,
    private readonly error: (command: string) => Error,
  ) {}

  /** Bounds cmd, just sent: reject (its own, taken before a Cluster wraps it) at its deadline. */
  add(cmd: Command, reject: (err: Error) => void): void {
    this.drop();
    this.cmds.push(cmd);
    this.rejects.push(reject);
    this.at.push(performance.now() + this.ms);
    if (this.timer === undefined) this.arm(this.ms);
  }

  /** How many calls the queue holds (tests). */
  get size(): number {
    return this.cmds.length - this.head;
  }

  /** Drops the calls that ended from the front; empties or compacts the arrays. */
  private drop(): void {
    const cmds = this.cmds;
    let h = this.head;
    while (h < cmds.length && cmds[h]!.isSettled) {
      cmds[h] = undefined;
      this.rejects[h] = undefined;
      h++;
    }
    if (h === cmds.length) {
      cmds.length = 0;
      this.rejects.length = 0;
      this.at.length = 0;
      h = 0;
    } else if (h >= 1024 && 2 * h >= cmds.length) {
      cmds.splice(0, h);
      this.rejects.splice(0, h);
      this.at.splice(0, h);
      h = 0;
    }
    this.head = h;
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    const cmds = this.cmds;
    for (;;) {
      this.drop();
      const h = this.head;
      if (h === cmds.length) return;
      if (this.at[h] > now) return this.arm(this.at[h] - now);
      const cmd = cmds[h]!;
      const reject = this.rejects[h]!;
      cmds[h] = undefined;
      this.rejects[h] = undefined;
      this.head = h + 1;
      reject(this.error(cmd.name));
    }
  }

  private arm(ms: number): void {
    // unref: a deadline never keeps the process alive; the call's socket does.
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(ms))).unref();
  }
}
