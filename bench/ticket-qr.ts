/**
 * CPU of a ticket's QR image, which the worker draws for every ticket it emails: the image the tickets are sent with
 * (activities/ticket-qr.ts) against the qrcode package's own PNG at the same size (the baseline), alternating rounds
 * so that whatever else the machine does falls on both alike.
 *
 *   npm run bench -- ticket-qr [--rounds 4] [--images 300]
 *
 * Results: bench/results/ticket-qr-<date>.json.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import QRCode from 'qrcode';
import { ticketQrPng } from '../activities/ticket-qr.js';
import { TICKET_CODE_RANDOM_BYTES, ticketCodeFromBytes } from '../domain/codes.js';
import { median, saveResults } from './lib/results.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== 'ticket-qr'),
  options: {
    rounds: { type: 'string', default: '4' },
    images: { type: 'string', default: '300' },
    name: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const imagesPerRound = Number(values.images);
const codes = Array.from({ length: imagesPerRound }, () => ticketCodeFromBytes(randomBytes(TICKET_CODE_RANDOM_BYTES)));

const variants: { name: string; draw: (code: string) => Promise<Buffer> | Buffer }[] = [
  {
    name: 'qrcode package PNG (baseline)',
    draw: (code) => QRCode.toBuffer(code, { type: 'png', errorCorrectionLevel: 'M', margin: 2, width: 320 }),
  },
  { name: 'ticketQrPng', draw: ticketQrPng },
];

const cpuMsPerImage = new Map<string, number[]>(variants.map((variant) => [variant.name, []]));
const bytes = new Map<string, number>();
for (const variant of variants) for (const code of codes.slice(0, 20)) await variant.draw(code);
for (let round = 0; round < rounds; round += 1) {
  for (const variant of variants) {
    const before = process.cpuUsage();
    for (const code of codes) bytes.set(variant.name, (await variant.draw(code)).length);
    const used = process.cpuUsage(before);
    cpuMsPerImage.get(variant.name)?.push((used.user + used.system) / 1000 / imagesPerRound);
  }
}

const baseline = median(cpuMsPerImage.get(variants[0]!.name) ?? []);
const results = variants.map(({ name }) => {
  const samples = cpuMsPerImage.get(name) ?? [];
  return {
    variant: name,
    cpuMsPerImage: Number(median(samples).toFixed(3)),
    samples: samples.map((value) => Number(value.toFixed(3))),
    ratioToBaseline: Number((median(samples) / baseline).toFixed(3)),
    bytes: bytes.get(name) ?? 0,
  };
});
console.table(results.map(({ samples: _samples, ...row }) => row));

saveResults(values.name ?? `ticket-qr-${new Date().toISOString().slice(0, 10)}`, {
  measuredAt: new Date().toISOString(),
  rounds,
  imagesPerRound,
  results,
});
