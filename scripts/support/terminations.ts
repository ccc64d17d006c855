/**
 * A test may terminate an execution on purpose: a fault test plays the server terminating a run at its history limit,
 * and a test that fills a private task queue with tasks nobody will run removes them when it is done. Such a test
 * terminates with a reason under this prefix, and the suite's last check ("no execution was terminated") tells those
 * apart from an execution something else killed by reading the reason back from the history.
 */
export const ON_PURPOSE_PREFIX = 'on purpose, by a test: ';

export function onPurpose(why: string): string {
  return `${ON_PURPOSE_PREFIX}${why}`;
}

export function terminatedOnPurpose(reason: string | null | undefined): boolean {
  return reason?.startsWith(ON_PURPOSE_PREFIX) ?? false;
}
