/**
 * Human output: aligned columns a person reads in a terminal. Scripts use `--json`, which prints what the API
 * returned untouched; this file only decides how things look.
 */
import { CURRENCIES } from '../domain/money.js';
import { terminalSafe } from './text.js';

export interface Column<Row> {
  header: string;
  value(row: Row): string;
  alignRight?: boolean;
}

const MAX_CELL_WIDTH = 40;

const fitCell = (text: string): string => {
  const safe = terminalSafe(text);
  return safe.length > MAX_CELL_WIDTH ? `${safe.slice(0, MAX_CELL_WIDTH - 1)}…` : safe;
};

export function renderTable<Row>(rows: readonly Row[], columns: ReadonlyArray<Column<Row>>): string {
  const cells = rows.map((row) => columns.map((column) => fitCell(column.value(row))));
  const widths = columns.map((column, index) =>
    Math.max(column.header.length, ...cells.map((line) => line[index]?.length ?? 0)),
  );
  const line = (values: readonly string[]) =>
    values
      .map((value, index) => {
        const width = widths[index] ?? 0;
        return columns[index]?.alignRight ? value.padStart(width) : value.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((column) => column.header)), ...cells.map(line)].join('\n')}\n`;
}

const grouped = new Intl.NumberFormat('en-US', { useGrouping: true, maximumFractionDigits: 0 });

/**
 * An amount in minor units (how the API sends money) shown in major units with its currency: 173230 COP is
 * "COP 173,230", 150050 USD is "USD 1,500.50". Integer arithmetic only, so nothing is rounded on the way.
 */
export function formatMoney(minor: number, currency: string): string {
  const info = (CURRENCIES as Record<string, { exponent: number } | undefined>)[currency];
  if (!info || !Number.isSafeInteger(minor)) return `${currency} ${minor} (minor units)`;
  const sign = minor < 0 ? '-' : '';
  const absolute = Math.abs(minor);
  const scale = 10 ** info.exponent;
  const whole = grouped.format(Math.trunc(absolute / scale));
  const fraction = info.exponent > 0 ? `.${String(absolute % scale).padStart(info.exponent, '0')}` : '';
  return `${currency} ${sign}${whole}${fraction}`;
}

/** An ISO timestamp as UTC to the minute, the way people scan a list: 2026-11-01 14:05Z. */
export function formatInstant(iso: string | null | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

export const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;
