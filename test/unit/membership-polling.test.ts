/**
 * The pull schedule of an open membership payment request (workflows/membership-definitions.ts): quick at first, then
 * every 30 to 60 minutes once the request has been open an hour, so an unpaid member costs a few hundred gateway
 * searches over a 7-day renewal window, not thousands (the history of the execution grows with each).
 */
import {
  DEFAULT_MEMBERSHIP_DURATIONS,
  nextPullIntervalMs,
  SLOW_PULL_AFTER_MS,
} from '../../workflows/membership-definitions.js';

const MINUTE = 60_000;
const WEEK = 7 * 24 * 60 * MINUTE;

/** The instants of every ask over `windowMs`, as the workflow schedules them. */
function asksOver(windowMs: number): number[] {
  const asks: number[] = [];
  let interval = DEFAULT_MEMBERSHIP_DURATIONS.paymentPollMs;
  let at = interval;
  while (at <= windowMs) {
    asks.push(at);
    interval = nextPullIntervalMs(interval, at);
    at += interval;
  }
  return asks;
}

test('asks back off to five minutes within the first hour', () => {
  const firstHour = asksOver(SLOW_PULL_AFTER_MS);
  const gaps = firstHour.slice(1).map((at, index) => at - (firstHour[index] ?? 0));
  expect(Math.max(...gaps)).toBe(5 * MINUTE);
  expect(gaps[0]).toBe(2 * DEFAULT_MEMBERSHIP_DURATIONS.paymentPollMs);
});

test('after the first hour every ask comes 30 to 60 minutes after the one before', () => {
  const asks = asksOver(WEEK);
  const late = asks.filter((at) => at > SLOW_PULL_AFTER_MS + 5 * MINUTE);
  expect(late.length).toBeGreaterThan(100);
  for (let index = 1; index < late.length; index += 1) {
    const gap = (late[index] ?? 0) - (late[index - 1] ?? 0);
    expect(gap).toBeGreaterThanOrEqual(30 * MINUTE);
    expect(gap).toBeLessThanOrEqual(60 * MINUTE);
  }
});

test('a 7-day renewal window costs under 200 gateway searches (it was about 2,000)', () => {
  expect(asksOver(WEEK).length).toBeLessThan(200);
});
