/**
 * CPU of the Redis work behind a waiting-room poll, with ioredis' auto-pipelining on and off: the processes' clients
 * (config/redis.ts) keep it off while it can throw from a batch's callback; this measures what turning it on would buy.
 *
 * Each simulated buyer polls as the API's poll route does for a held poll that wakes: its turn (the room's POLL
 * script beside the room-set SADD), the per-turn rate limit (rate-limiter-flexible's script), and its standing again.
 * `--concurrency` buyers poll at once, as a crowd's polls overlap in one API process. Rounds alternate the two clients
 * so whatever else the machine does falls on both alike; reported per poll: this process's CPU (the API's share of
 * the work), Redis' CPU, and polls/s.
 *
 *   npm run bench -- redis-pipelining [--rounds 4] [--polls 20000] [--concurrency 200] [--name …]
 *
 * Results: bench/results/<name>.json (default redis-pipelining-<date>).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createRateLimiters } from '../api/plugins/rate-limit.js';
import { joinRoom, ROOMS_KEY, type RoomConfig, turnStanding, watchedTurn } from '../api/services/waiting-room.js';
import { loadEnv } from '../config/env.js';
import { rateLimitsFrom } from '../config/rate-limits.js';
import { createRedis, REDIS_CLIENT_OPTIONS } from '../config/redis.js';
import { cpuBetween, cpuSnapshot } from './lib/profile.js';
import { machineFacts, median, saveResults } from './lib/results.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== 'redis-pipelining'),
  options: {
    rounds: { type: 'string', default: '4' },
    polls: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '200' },
    name: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const pollsPerRound = Number(values.polls);
const concurrency = Number(values.concurrency);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/15';
const TURNS = 2_000;

const variants = [
  { name: 'auto-pipelining', autoPipelining: true },
  { name: 'one write per command', autoPipelining: false },
] as const;

interface RoundResult {
  variant: string;
  clientCpuUsPerPoll: number;
  redisCpuUsPerPoll: number;
  pollsPerSecond: number;
}

async function measureRound(autoPipelining: boolean, eventDateId: string, tokens: readonly string[]) {
  const redis = new Redis(REDIS_URL, { ...REDIS_CLIENT_OPTIONS, enableAutoPipelining: autoPipelining });
  await redis.ping();
  const room: RoomConfig = { redis, turnWindowMs: 120_000 };
  // The bench polls far past the per-turn limit: the count is the work, not the answer.
  const limiters = createRateLimiters(redis, rateLimitsFrom(loadEnv({})), { keyPrefix: `bench-rl-${randomUUID()}` });
  let next = 0;
  const poll = async () => {
    while (next < pollsPerRound) {
      const token = tokens[next % tokens.length] ?? '';
      next += 1;
      await watchedTurn(room, eventDateId, token);
      await limiters.consume('queueStanding', `${eventDateId}:${token}`);
      await turnStanding(room, eventDateId, token);
    }
  };
  const cpuBefore = process.cpuUsage();
  const machineBefore = cpuSnapshot({});
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, poll));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const shares = cpuBetween(machineBefore, cpuSnapshot({}));
  redis.disconnect();
  return {
    clientCpuUsPerPoll: Math.round((cpu.user + cpu.system) / pollsPerRound),
    redisCpuUsPerPoll: Math.round(((shares.redis ?? 0) * seconds * 1e6) / pollsPerRound),
    pollsPerSecond: Math.round(pollsPerRound / seconds),
  };
}

const setup = createRedis(REDIS_URL);
const eventDateId = randomUUID();
const room: RoomConfig = { redis: setup, turnWindowMs: 120_000 };
const tokens: string[] = [];
for (let i = 0; i < TURNS; i += 1)
  tokens.push((await joinRoom(room, eventDateId, { buyerSession: null, presentedToken: null })).token);
console.log(`room of ${TURNS} turns; ${rounds} rounds × ${pollsPerRound} polls, ${concurrency} at once, each way`);

const results: RoundResult[] = [];
for (let round = 0; round < rounds; round += 1) {
  // Alternate which goes first, so a trend in the machine's load does not favour one.
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) {
    const result = { variant: variant.name, ...(await measureRound(variant.autoPipelining, eventDateId, tokens)) };
    results.push(result);
    console.log(
      `  round ${round + 1} ${variant.name.padEnd(22)} client ${String(result.clientCpuUsPerPoll).padStart(4)} µs/poll, ` +
        `redis ${String(result.redisCpuUsPerPoll).padStart(4)} µs/poll, ${result.pollsPerSecond} polls/s`,
    );
  }
}
await setup.del(...(await setup.keys(`*${eventDateId}*`)));
await setup.srem(ROOMS_KEY, eventDateId);
setup.disconnect();

const summary = Object.fromEntries(
  variants.map((variant) => {
    const mine = results.filter((result) => result.variant === variant.name);
    return [
      variant.name,
      {
        clientCpuUsPerPoll: median(mine.map((r) => r.clientCpuUsPerPoll)),
        redisCpuUsPerPoll: median(mine.map((r) => r.redisCpuUsPerPoll)),
        pollsPerSecond: median(mine.map((r) => r.pollsPerSecond)),
      },
    ];
  }),
);
console.log('medians:', JSON.stringify(summary));
saveResults(values.name ?? `redis-pipelining-${new Date().toISOString().slice(0, 10)}`, {
  machine: machineFacts(),
  turns: TURNS,
  rounds,
  pollsPerRound,
  concurrency,
  summary,
  results,
});
