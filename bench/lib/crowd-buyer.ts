/**
 * One buyer of the crowd bench (bench/crowd.ts) as a browser follows the waiting room: join, long-poll its standing,
 * reserve once admitted, open payment and pay by card, leave on sold_out or expired. Run by the crowd's generator
 * processes (bench/lib/crowd-generator.ts): a process can hold only so many sockets open (the machine's limit on open
 * files, 20,000 here), and 20,000 held long polls need more than one.
 */
import { errorOf, type HttpClient, type HttpResult, sleep } from './http.js';

export interface Turn {
  token: string;
  status: 'waiting' | 'admitted' | 'reserving' | 'used' | 'expired' | 'sold_out';
  position: number;
  admittedAt: string | null;
  pollAfterMs: number;
}

/** What one buyer lived through. */
export interface BuyerTrace {
  index: number;
  joinSentAt: number;
  joinDoneAt: number | null;
  joinMs: number | null;
  polls: number;
  admittedAtMs: number | null;
  soldOutSeenAt: number | null;
  expired: boolean;
  reserveMs: number | null;
  reserveCode: string | null;
  reservedAt: number | null;
  saleId: string | null;
  payStartedAt: number | null;
  payCode: string | null;
  /** Why the buyer stopped following the room, when an answer made it give up. */
  gaveUp?: string;
  /** 5xx answers by step ("join", "poll", "reserve", "pay"). */
  serverErrors: Record<string, number>;
}

/** A buyer of the crowd: its place in the join order and its customer session. */
export interface CrowdBuyer {
  index: number;
  sessionToken: string;
}

/** What every buyer of one crowd shares. */
export interface CrowdPlan {
  /** Per API replica: a client for the buyer's steps, one for its long polls; buyer i goes to replica i mod n. */
  replicas: ReadonlyArray<{ http: HttpClient; waitHttp: HttpClient }>;
  eventDateId: string;
  orderBody: unknown;
  /** When buyer 0 joins (epoch ms); buyer i joins i × joinSpacingMs later. */
  startedAt: number;
  joinSpacingMs: number;
  /** No buyer starts a step after it (epoch ms). */
  deadline: number;
  longPollMs: number;
  /** An approved card token for a buyer about to pay (each token charges once). */
  nextCardToken: () => Promise<string | undefined>;
  /** 5xx answers and dropped connections by step, status, code and reason ("poll 503 SERVICE_UNAVAILABLE:…"). */
  serverErrorsByCause: Record<string, number>;
}

/** Sends until the answer is not a 503/429 with Retry-After (a browser waits and asks again), before `deadline`. */
async function asBrowser(
  send: () => Promise<HttpResult>,
  deadline: number,
  onServerError: (result: HttpResult) => void,
) {
  for (;;) {
    const result = await send();
    if (result.status >= 500 || result.networkError) onServerError(result);
    // A page's script tries again after a refused or dropped connection too (a process at its connection cap closes
    // new ones at once), a second or two later.
    const retry = result.status === 503 || result.status === 429 || Boolean(result.networkError);
    const waitMs = result.networkError
      ? 1000 + Math.floor(Math.random() * 2000)
      : Number(result.retryAfter ?? 1) * 1000;
    if (!retry || Date.now() + waitMs >= deadline) return result;
    await sleep(waitMs);
  }
}

/** Follows the room as buyer `buyer.index` of the crowd; `onTrace` gets its trace at once, filled in as it goes. */
export async function followBuyer(crowd: CrowdPlan, buyer: CrowdBuyer, onTrace: (trace: BuyerTrace) => void) {
  const { index } = buyer;
  const { deadline } = crowd;
  await sleep(Math.max(0, crowd.startedAt + index * crowd.joinSpacingMs - Date.now()));
  const { http, waitHttp } = crowd.replicas[index % crowd.replicas.length]!;
  const address = `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`;
  const trace: BuyerTrace = {
    index,
    joinSentAt: Date.now(),
    joinDoneAt: null,
    joinMs: null,
    polls: 0,
    admittedAtMs: null,
    soldOutSeenAt: null,
    expired: false,
    reserveMs: null,
    reserveCode: null,
    reservedAt: null,
    saleId: null,
    payStartedAt: null,
    payCode: null,
    serverErrors: {},
  };
  onTrace(trace);
  const serverError = (step: string) => (result: HttpResult) => {
    trace.serverErrors[step] = (trace.serverErrors[step] ?? 0) + 1;
    const error = errorOf(result);
    const cause = `${step} ${result.status || ''} ${error.code}${error.reason ? `:${error.reason}` : ''}`;
    crowd.serverErrorsByCause[cause] = (crowd.serverErrorsByCause[cause] ?? 0) + 1;
  };
  const headers = { 'x-forwarded-for': address, 'x-customer-session': buyer.sessionToken };
  const joined = await asBrowser(
    () => http.request('POST', `/api/public/queue/${crowd.eventDateId}`, { headers }),
    deadline,
    serverError('join'),
  );
  if (joined.status !== 200) {
    const error = errorOf(joined);
    trace.gaveUp = `join:${error.code}${error.reason ? `:${error.reason}` : ''}`;
    return;
  }
  trace.joinDoneAt = Date.now();
  trace.joinMs = joined.ms;
  let turn = (joined.body as { data: Turn }).data;
  while (turn.status === 'waiting' || turn.status === 'reserving') {
    if (Date.now() >= deadline) return;
    const polled = await asBrowser(
      () =>
        waitHttp.request(
          'GET',
          `/api/public/queue/${crowd.eventDateId}?token=${encodeURIComponent(turn.token)}&waitMs=${crowd.longPollMs}`,
          { headers: { 'x-forwarded-for': address }, timeoutMs: crowd.longPollMs + 30_000 },
        ),
      deadline,
      serverError('poll'),
    );
    trace.polls += 1;
    if (polled.status !== 200) {
      const error = errorOf(polled);
      trace.gaveUp = `poll:${error.code}${error.reason ? `:${error.reason}` : ''}`;
      return;
    }
    turn = (polled.body as { data: Turn }).data;
    // As the room asks: a poll the API could not hold comes back at once, with a pollAfterMs of seconds.
    if (turn.status === 'waiting' && Date.now() + turn.pollAfterMs < deadline) await sleep(turn.pollAfterMs);
  }
  if (turn.status === 'sold_out') {
    trace.soldOutSeenAt = Date.now();
    return;
  }
  if (turn.status === 'expired') {
    trace.expired = true;
    return;
  }
  if (turn.status !== 'admitted') return;
  trace.admittedAtMs = turn.admittedAt ? Date.parse(turn.admittedAt) : Date.now();
  const reserved = await asBrowser(
    () =>
      http.request('POST', '/api/v1/customer/orders', {
        headers: { ...headers, 'x-queue-token': turn.token },
        body: crowd.orderBody,
        timeoutMs: 180_000,
      }),
    deadline,
    serverError('reserve'),
  );
  trace.reserveMs = reserved.ms;
  if (reserved.status !== 201) {
    const error = errorOf(reserved);
    trace.reserveCode = `${error.code}${error.reason ? `:${error.reason}` : ''}`;
    return;
  }
  trace.reserveCode = 'created';
  trace.reservedAt = Date.now();
  const saleId = (reserved.body as { data: { saleId: string } }).data.saleId;
  trace.saleId = saleId;
  const sessionHeaders = { 'x-customer-session': buyer.sessionToken, 'x-forwarded-for': address };
  trace.payStartedAt = Date.now();
  const opened = await asBrowser(
    () => http.request('POST', `/api/v1/customer/orders/${saleId}/payment`, { headers: sessionHeaders }),
    deadline,
    serverError('pay'),
  );
  if (opened.status !== 200) {
    trace.payCode = `open:${errorOf(opened).code}`;
    return;
  }
  const token = await crowd.nextCardToken();
  const charged = await asBrowser(
    () =>
      http.request('POST', `/api/v1/customer/orders/${saleId}/payment/card`, {
        headers: sessionHeaders,
        body: { token },
        timeoutMs: 180_000,
      }),
    deadline,
    serverError('pay'),
  );
  trace.payCode = charged.status === 200 ? 'charged' : `charge:${errorOf(charged).code}`;
}
