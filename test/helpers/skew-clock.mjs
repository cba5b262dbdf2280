// Preloaded with `node --import` to give a process a wrong clock: Date.now() and new Date() are off
// by SKEW_CLOCK_MS milliseconds. Used to show that liveness never depends on a process's own clock.
const skew = Number(process.env.SKEW_CLOCK_MS ?? 0);
const RealDate = Date;
class SkewedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + skew);
    else super(...args);
  }
  static now() {
    return RealDate.now() + skew;
  }
}
globalThis.Date = SkewedDate;
