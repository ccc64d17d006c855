import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHistory } from '../replay/recorder.js';

describe('the replay-history recorder never replaces a committed fixture', () => {
  let committed: string;
  let scratch: string;
  const saved = { record: process.env.RECORD_WORKFLOW_HISTORIES, suffix: process.env.RECORD_HISTORY_SUFFIX };
  beforeEach(() => {
    committed = mkdtempSync(join(tmpdir(), 'histories-'));
    scratch = mkdtempSync(join(tmpdir(), 'scratch-'));
    process.env.RECORD_WORKFLOW_HISTORIES = '1';
    delete process.env.RECORD_HISTORY_SUFFIX;
  });
  afterEach(() => {
    rmSync(committed, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
    process.env.RECORD_WORKFLOW_HISTORIES = saved.record;
    process.env.RECORD_HISTORY_SUFFIX = saved.suffix;
    if (saved.record === undefined) delete process.env.RECORD_WORKFLOW_HISTORIES;
    if (saved.suffix === undefined) delete process.env.RECORD_HISTORY_SUFFIX;
  });

  test('recording a scenario whose fixture exists fails and leaves the old file as it was', () => {
    writeFileSync(join(committed, 'checkout-expired.json'), '{"old":true}');
    expect(() => writeHistory('{"new":true}', 'checkout-expired', scratch, committed)).toThrow(/refusing to overwrite/);
    expect(readFileSync(join(committed, 'checkout-expired.json'), 'utf8')).toBe('{"old":true}');
  });

  test('a new name (or RECORD_HISTORY_SUFFIX) records a new file beside the old one', () => {
    writeFileSync(join(committed, 'checkout-expired.json'), '{"old":true}');
    process.env.RECORD_HISTORY_SUFFIX = 'some-patch';
    const file = writeHistory('{"new":true}', 'checkout-expired', scratch, committed);
    expect(file).toBe(join(committed, 'checkout-expired-some-patch.json'));
    expect(readFileSync(file, 'utf8')).toBe('{"new":true}');
    expect(readFileSync(join(committed, 'checkout-expired.json'), 'utf8')).toBe('{"old":true}');
  });

  test('outside recording, histories go to the scratch directory only', () => {
    delete process.env.RECORD_WORKFLOW_HISTORIES;
    const file = writeHistory('{"new":true}', 'checkout-expired', scratch, committed);
    expect(file).toBe(join(scratch, 'checkout-expired.json'));
  });
});
