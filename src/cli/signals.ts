/** Waiting for the operator's stop signal in long-running commands. */

/**
 * Resolves on the first SIGINT or SIGTERM. A second signal calls `onSecond` (which should exit at
 * once): an operator who presses Ctrl+C twice means it.
 */
export function waitForStopSignal(onSecond: () => void): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (signal: NodeJS.Signals) => {
      process.off('SIGINT', first).off('SIGTERM', first);
      process.once('SIGINT', onSecond).once('SIGTERM', onSecond);
      resolve(signal);
    };
    process.on('SIGINT', first).on('SIGTERM', first);
  });
}
