/** How the command-line client shows what it reads: money in major units exactly, terminal-safe text. */
import { formatInstant, formatMoney, renderTable } from '../../cli/output.js';
import { terminalSafe } from '../../cli/text.js';

describe('human output', () => {
  test('amounts arrive in minor units and are shown in major units with the currency, without rounding', () => {
    expect(formatMoney(173_230, 'COP')).toBe('COP 173,230');
    expect(formatMoney(150_050, 'USD')).toBe('USD 1,500.50');
    expect(formatMoney(5, 'USD')).toBe('USD 0.05');
    expect(formatMoney(9_007_199_254_740_991, 'EUR')).toBe('EUR 90,071,992,547,409.91');
    expect(formatMoney(1200, 'XYZ')).toBe('XYZ 1200 (minor units)');
  });

  test('times are shown in UTC', () => {
    expect(formatInstant('2026-11-01T09:05:59-05:00')).toBe('2026-11-01 14:05Z');
    expect(formatInstant(null)).toBe('');
  });

  test('a buyer name carrying terminal escape sequences cannot drive the terminal', () => {
    const name = 'Ana\u001b]0;pwned\u0007\u001b[2J';
    expect(terminalSafe(name)).toBe('Ana\uFFFD]0;pwned\uFFFD\uFFFD[2J');
    const table = renderTable([{ name }], [{ header: 'NAME', value: (row) => row.name }]);
    expect(table.includes('\u001b') || table.includes('\u0007')).toBe(false);
  });

  test('columns line up and long cells are cut with an ellipsis', () => {
    const rows = [
      { a: 'x', b: '1' },
      { a: 'y'.repeat(60), b: '22' },
    ];
    const table = renderTable(rows, [
      { header: 'A', value: (row) => row.a },
      { header: 'B', value: (row) => row.b, alignRight: true },
    ]);
    expect(table.split('\n')).toEqual([
      `A${' '.repeat(39)}   B`,
      `x${' '.repeat(39)}   1`,
      `${'y'.repeat(39)}…  22`,
      '',
    ]);
  });
});
