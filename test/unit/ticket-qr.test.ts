import { crc32, inflateSync } from 'node:zlib';
import QRCode from 'qrcode';
import { ticketQrPng } from '../../activities/ticket-qr.js';

interface DecodedPng {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  /** Whether the pixel at (x, y) is black. */
  black: (x: number, y: number) => boolean;
}

/** Reads a 1-bit greyscale PNG the way a viewer would: signature, every chunk's CRC, the inflated scanlines. */
function decodePng(file: Buffer): DecodedPng {
  expect(file.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const chunks: { type: string; data: Buffer }[] = [];
  for (let at = 8; at < file.length; ) {
    const length = file.readUInt32BE(at);
    const type = file.toString('latin1', at + 4, at + 8);
    const data = file.subarray(at + 8, at + 8 + length);
    expect(file.readUInt32BE(at + 8 + length)).toBe(crc32(file.subarray(at + 4, at + 8 + length)));
    chunks.push({ type, data });
    at += 12 + length;
  }
  expect(chunks.map((each) => each.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
  const header = chunks[0]!.data;
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const pixels = inflateSync(chunks[1]!.data);
  const stride = Math.ceil(width / 8) + 1;
  expect(pixels.length).toBe(stride * height);
  for (let y = 0; y < height; y += 1) expect(pixels[y * stride]).toBe(0);
  return {
    width,
    height,
    bitDepth: header[8]!,
    colorType: header[9]!,
    black: (x, y) => ((pixels[y * stride + 1 + (x >> 3)]! >> (7 - (x & 7))) & 1) === 0,
  };
}

describe('the QR code image of a ticket', () => {
  test.each(['Xk3_9aQ-ZpL2mN8rT4vW6yB1', 'A', 'https://tickets.example.test/t/0123456789abcdef0123456789abcdef'])(
    'is a valid PNG whose every module is the QR code of %s',
    (code) => {
      const png = decodePng(ticketQrPng(code));
      const { modules } = QRCode.create(code, { errorCorrectionLevel: 'M' });
      const span = modules.size + 4;
      expect(png).toMatchObject({ bitDepth: 1, colorType: 0 });
      expect(png.width).toBe(png.height);
      expect(png.width).toBeGreaterThanOrEqual(320);
      expect(png.width % span).toBe(0);
      const scale = png.width / span;
      for (let row = 0; row < span; row += 1) {
        for (let column = 0; column < span; column += 1) {
          const inside = row >= 2 && row < modules.size + 2 && column >= 2 && column < modules.size + 2;
          const dark = inside && Boolean(modules.get(row - 2, column - 2));
          // Every pixel of the module's square, corners included, has the module's colour.
          for (const [dx, dy] of [
            [0, 0],
            [scale - 1, 0],
            [0, scale - 1],
            [scale - 1, scale - 1],
            [scale >> 1, scale >> 1],
          ]) {
            expect(png.black(column * scale + dx!, row * scale + dy!)).toBe(dark);
          }
        }
      }
    },
  );

  test('a ticket code makes a small file', () => {
    expect(ticketQrPng('Xk3_9aQ-ZpL2mN8rT4vW6yB1').length).toBeLessThan(2048);
  });
});
