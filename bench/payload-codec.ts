/**
 * CPU of the payload codec (config/payload-codec.ts), which encrypts every payload the worker and the API send to
 * Temporal and decrypts every one they receive: the codec as it runs against the same AES-256-GCM round trip with the
 * key given as raw bytes to every cipher (the codec before it held KeyObjects, the baseline), alternating rounds so
 * that whatever else the machine does falls on both alike. The payloads are a checkout's: a reservation request, a
 * local step's small answer and a card charge's answer.
 *
 *   npm run bench -- payload-codec [--rounds 6] [--payloads 20000]
 *
 * Results: bench/results/payload-codec-<date>.json.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import proto from '@temporalio/proto';
import { EncryptionCodec } from '../config/payload-codec.js';
import { median, saveResults } from './lib/results.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== 'payload-codec'),
  options: {
    rounds: { type: 'string', default: '6' },
    payloads: { type: 'string', default: '20000' },
    name: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const payloadsPerRound = Number(values.payloads);

const samples: unknown[] = [
  {
    saleId: '01a21af9-153f-714d-b393-f542a98f3c38',
    request: {
      workspaceId: '01a21af9-136c-7256-b8b3-e3d23b8043e3',
      eventDateId: '01a21af9-1376-7546-af79-a8cd9c49bc1a',
      buyer: { name: 'Ana Compradora', email: 'ana@example.test', documentType: 'CC', documentNumber: '1020304050' },
      items: [{ ticketTypeId: '01a21af9-1380-7887-8b71-3c0a625800b1', quantity: 2 }],
      paymentWindowMs: 600_000,
    },
  },
  { status: 'PENDING', changed: true },
  { gateway: 'GATEWAY_A', outcome: 'approved', providerPaymentId: '1300000036', rawStatus: 'approved' },
];
const payloads: Payload[] = Array.from({ length: payloadsPerRound }, (_, i) =>
  defaultPayloadConverter.toPayload(samples[i % samples.length]),
);

const key = randomBytes(32);
const codec = new EncryptionCodec(new Map([['bench', key]]), 'bench');
const ProtoPayload = proto.temporal.api.common.v1.Payload;

/** The same round trip with the key's raw bytes handed to every cipher, as the codec did before. */
const rawKeyRoundTrip = (payload: Payload): Payload => {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  const sealed = Buffer.concat([cipher.update(ProtoPayload.encode(payload).finish()), cipher.final()]);
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
  decipher.setAuthTag(cipher.getAuthTag());
  const opened = ProtoPayload.decode(Buffer.concat([decipher.update(sealed), decipher.final()]));
  return { metadata: opened.metadata, data: opened.data };
};

const variants: { name: string; roundTrip: (all: Payload[]) => Promise<Payload[]> }[] = [
  { name: 'raw key bytes per cipher (baseline)', roundTrip: async (all) => all.map(rawKeyRoundTrip) },
  { name: 'EncryptionCodec', roundTrip: async (all) => codec.decode(await codec.encode(all)) },
];

for (const variant of variants) {
  const back = await variant.roundTrip(payloads.slice(0, 3));
  const same = back.every(
    (payload, i) => Buffer.compare(payload.data ?? Buffer.alloc(0), payloads[i]?.data ?? Buffer.alloc(0)) === 0,
  );
  if (!same) throw new Error(`${variant.name} does not give the payloads back`);
}
const microsPerPayload = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
for (let round = 0; round < rounds; round += 1) {
  for (const variant of variants) {
    const before = process.cpuUsage();
    await variant.roundTrip(payloads);
    const used = process.cpuUsage(before);
    microsPerPayload.get(variant.name)?.push((used.user + used.system) / payloadsPerRound);
  }
}

const baseline = median(microsPerPayload.get(variants[0]!.name) ?? []);
const results = variants.map(({ name }) => {
  const measured = microsPerPayload.get(name) ?? [];
  return {
    variant: name,
    cpuMicrosPerPayload: Number(median(measured).toFixed(2)),
    samples: measured.map((value) => Number(value.toFixed(2))),
    ratioToBaseline: Number((median(measured) / baseline).toFixed(3)),
  };
});
console.table(results.map(({ samples: _samples, ...row }) => row));

saveResults(values.name ?? `payload-codec-${new Date().toISOString().slice(0, 10)}`, {
  measuredAt: new Date().toISOString(),
  rounds,
  payloadsPerRound,
  results,
});
