/** Export CSV (issue 13): RFC 4180 quoting, spreadsheet formula injection neutralised, UTF-8 with a BOM. */
import fc from 'fast-check';
import { CSV_BOM, csvCell, csvLine } from '../../api/reports/csv.js';

/** A minimal RFC 4180 reader: what a spreadsheet does with our bytes. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(cell);
      cell = '';
    } else if (char === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i += 1;
    } else cell += char;
  }
  return rows;
}

describe('CSV cells', () => {
  test('a comma, a quote or a line break inside a value is quoted, and quotes are doubled', () => {
    expect(csvCell('Gómez, Ana')).toBe('"Gómez, Ana"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    expect(csvCell('cr\rhere')).toBe('"cr\rhere"');
    expect(csvCell('plain')).toBe('plain');
  });

  test('a value a spreadsheet would run as a formula (= + - @ tab CR) is prefixed with a quote and stays text', () => {
    expect(csvCell('=HYPERLINK("http://evil","x")')).toBe(`"'=HYPERLINK(""http://evil"",""x"")"`);
    expect(csvCell('+57 300')).toBe("'+57 300");
    expect(csvCell('-1+2')).toBe("'-1+2");
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvCell('\t=1')).toBe(`"'\t'=1"`);
  });

  test('a formula after a separator another reader splits on (; tab |) is neutralised too, and the cell quoted', () => {
    expect(csvCell('Ana;=1+1;x')).toBe(`"Ana;'=1+1;x"`);
    expect(csvCell('Ana;+57 300')).toBe(`"Ana;'+57 300"`);
    expect(csvCell('a|@SUM(A1)')).toBe(`"a|'@SUM(A1)"`);
    expect(csvCell('a\t-1+2')).toBe(`"a\t'-1+2"`);
    expect(csvCell('Gómez, =cmd')).toBe('"Gómez, =cmd"');
    expect(csvCell('Gómez,=cmd')).toBe(`"Gómez,'=cmd"`);
    expect(csvCell('Ana; Gómez')).toBe('"Ana; Gómez"');
  });

  test('split on ; or | as a naive reader does, no piece of any cell starts like a formula', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', '=', '+', '-', '@', ';', '|', ',', '\t', ' ', '1'), { maxLength: 12 }),
        (chars) => {
          const cell = csvCell(chars.join(''));
          const text = cell.startsWith('"') ? cell.slice(1, -1).replaceAll('""', '"') : cell;
          for (const piece of text.split(/[;|,\t]/)) expect(piece).not.toMatch(/^[=+\-@]/);
        },
      ),
    );
  });

  test('numbers we write ourselves (a negative net) stay numbers; null is an empty cell; times are ISO UTC', () => {
    expect(csvCell(-1500)).toBe('-1500');
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
    expect(csvCell(true)).toBe('true');
    expect(csvCell(new Date(Date.UTC(2026, 10, 23, 15, 0)))).toBe('2026-11-23T15:00:00.000Z');
    expect(() => csvCell(Number.NaN)).toThrow(RangeError);
  });

  test('the BOM is the UTF-8 byte-order mark, so spreadsheets read accents as written', () => {
    expect(Buffer.from(CSV_BOM, 'utf8')).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
  });

  test('property: any row of strings reads back cell for cell (formula cells with their quote prefix)', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 30 }), { minLength: 1, maxLength: 8 }), (cells) => {
        const [parsed] = parseCsv(csvLine(cells));
        const expected = cells.map((cell) => {
          // A formula start after a separator another reader splits on carries the quote prefix too.
          const pieces = cell.replace(/([,;\t|])(?=[=+\-@\r])/g, "$1'");
          return /^[=+\-@\t\r]/.test(pieces) ? `'${pieces}` : pieces;
        });
        expect(parsed).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  test('a line ends with CRLF and never lets a value start a new record', () => {
    const text = csvLine(['a\r\nb', 'c']) + csvLine(['d', 'e']);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(parseCsv(text)).toEqual([
      ['a\r\nb', 'c'],
      ['d', 'e'],
    ]);
  });
});
