/**
 * One load-generator process of the crowd bench (bench/crowd.ts forks it): it follows its share of the crowd's buyers
 * (bench/lib/crowd-buyer.ts) and sends their traces back. The crowd is split over processes because each can hold only
 * so many sockets (the open-files limit, 20,000 on this machine), and a crowd whose polls are all held needs one socket
 * per buyer: in one process the excess failed with EMFILE and was retried every second or two, which is not a browser.
 *
 * Messages: the parent sends `start` (the plan, its buyers) and answers `token` requests (each card token charges once,
 * so the parent hands them out); this process sends `ready`, `token`, `progress` every few seconds and `done`.
 */
import { type BuyerTrace, type CrowdBuyer, type CrowdPlan, followBuyer } from './crowd-buyer.js';
import { HttpClient } from './http.js';

/** The plan as it crosses the process boundary: replicas by URL, no functions. */
export type GeneratorPlan = Omit<CrowdPlan, 'replicas' | 'nextCardToken' | 'serverErrorsByCause'> & {
  replicaUrls: string[];
};

export type ToGenerator =
  | { type: 'start'; plan: GeneratorPlan; buyers: CrowdBuyer[] }
  | { type: 'token'; request: number; token: string | undefined };

export type FromGenerator =
  | { type: 'ready' }
  | { type: 'token'; request: number }
  | { type: 'progress'; joined: number; admitted: number; reserved: number; soldOut: number; gaveUp: number }
  | {
      type: 'done';
      traces: BuyerTrace[];
      serverErrorsByCause: Record<string, number>;
      /** CPU seconds this process spent following its buyers (it exits before the bench's CPU snapshot). */
      cpuSeconds: number;
    };

const PROGRESS_EVERY_MS = 5_000;

function send(message: FromGenerator): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!process.send) return reject(new Error('crowd-generator runs as a forked child of bench/crowd.ts'));
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()));
  });
}

const tokenRequests = new Map<number, (token: string | undefined) => void>();
let nextRequest = 0;

async function follow(plan: GeneratorPlan, buyers: CrowdBuyer[]): Promise<void> {
  const cpuAtStart = process.cpuUsage();
  const replicas = plan.replicaUrls.map((url) => ({
    http: new HttpClient(url, 512),
    // Long polls hold a socket each while they wait: a pool as large as this process's share of the replica's buyers.
    waitHttp: new HttpClient(url, Math.ceil(buyers.length / plan.replicaUrls.length) + 64),
  }));
  const crowd: CrowdPlan = {
    ...plan,
    replicas,
    serverErrorsByCause: {},
    nextCardToken: () =>
      new Promise((resolve) => {
        const request = nextRequest++;
        tokenRequests.set(request, resolve);
        void send({ type: 'token', request });
      }),
  };
  const traces: BuyerTrace[] = [];
  const progress = setInterval(() => {
    void send({
      type: 'progress',
      joined: traces.length,
      admitted: traces.filter((t) => t.admittedAtMs !== null).length,
      reserved: traces.filter((t) => t.saleId !== null).length,
      soldOut: traces.filter((t) => t.soldOutSeenAt !== null).length,
      gaveUp: traces.filter((t) => t.gaveUp).length,
    });
  }, PROGRESS_EVERY_MS);
  await Promise.all(buyers.map((buyer) => followBuyer(crowd, buyer, (trace) => traces.push(trace))));
  clearInterval(progress);
  const cpu = process.cpuUsage(cpuAtStart);
  await send({
    type: 'done',
    traces,
    serverErrorsByCause: crowd.serverErrorsByCause,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
  });
  for (const replica of replicas) {
    replica.http.close();
    replica.waitHttp.close();
  }
}

process.on('message', (message: ToGenerator) => {
  if (message.type === 'token') {
    tokenRequests.get(message.request)?.(message.token);
    tokenRequests.delete(message.request);
    return;
  }
  follow(message.plan, message.buyers).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
});
await send({ type: 'ready' });
