/**
 * The settlement statement as a PDF (pdfkit): header, totals, one line per ticket type, refunds carried in as
 * adjustments, costs and the net payable. Amounts are formatted by `statementMoney`, which tests use to find the
 * same figures in the extracted text.
 */
import PDFDocument from 'pdfkit';
import { type CurrencyCode, formatMoney, isCurrencyCode } from '../domain/money.js';
import type { SettlementFigures } from '../domain/settlement.js';

export interface StatementInput {
  reference: string;
  label: string;
  eventName: string | null;
  /** ISO instant the date started. */
  startsAt: string | null;
  currency: string;
  figures: SettlementFigures;
  generatedAt: Date;
}

/**
 * "$ 150.000" (es-CO) with plain spaces: Intl puts a no-break space after the symbol, which PDF text extraction
 * returns inconsistently, and a statement must be searchable for its figures.
 */
export function statementMoney(minor: number, currency: string): string {
  const code: CurrencyCode = isCurrencyCode(currency) ? currency : 'COP';
  const text = formatMoney(Math.abs(minor), code).replace(/\s/g, ' ');
  return minor < 0 ? `- ${text}` : text;
}

/** The statement's name, safe in a Content-Disposition header and a file system. */
export const statementFileName = (reference: string): string => `statement-${reference}.pdf`;

export async function renderStatementPdf(input: StatementInput): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: 50,
    info: { Title: `Settlement ${input.reference}`, Author: 'Ticketing service', CreationDate: input.generatedAt },
  });
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  const money = (minor: number) => statementMoney(minor, input.currency);
  const f = input.figures;
  const row = (label: string, value: string) => {
    const y = doc.y;
    doc.text(label, 50, y, { width: 330 });
    doc.text(value, 380, y, { width: 165, align: 'right' });
    doc.moveDown(0.2);
  };
  const heading = (text: string) => {
    doc.moveDown(0.8).font('Helvetica-Bold').fontSize(12).text(text, 50).font('Helvetica').fontSize(10);
    doc.moveDown(0.3);
  };

  doc.font('Helvetica-Bold').fontSize(16).text(`Settlement statement ${input.reference}`);
  doc.font('Helvetica').fontSize(10).moveDown(0.3);
  doc.text(input.label);
  if (input.eventName) doc.text(`Event: ${input.eventName}`);
  if (input.startsAt) doc.text(`Date: ${input.startsAt.slice(0, 16).replace('T', ' ')} UTC`);
  doc.text(`Currency: ${input.currency}`);
  doc.text(`Generated: ${input.generatedAt.toISOString().slice(0, 19).replace('T', ' ')} UTC`);

  heading('Totals');
  row('Confirmed sales', String(f.salesCount));
  row('Units sold', String(f.unitsSold));
  row('Tickets at list price', money(f.listSubtotal));
  row('Discounts', money(-f.discounts));
  row('Gross', money(f.gross));

  heading('Ticket types');
  if (f.lines.length === 0) doc.text('No confirmed sales.', 50);
  for (const line of f.lines) {
    row(`${line.ticketTypeName} x ${line.quantity} at ${money(line.unitPrice)}`, money(line.subtotal));
  }

  heading('Costs');
  row('Service fee absorbed by the organizer', money(f.organizerServiceFee));
  row('IVA on the absorbed service fee (19%)', money(f.organizerIva));
  row('Payment gateway costs', money(f.gatewayCosts));
  row('Total costs', money(f.costs));

  heading('Collected by the organizer');
  row('Box-office sales paid to the organizer directly', money(-f.collectedByOrganizer));

  heading('Refunds and adjustments');
  if (f.adjustments.length === 0) doc.text('None.', 50);
  for (const adjustment of f.adjustments) row(adjustment.reason, money(adjustment.amount));
  row('Total adjustments', money(f.adjustmentsTotal));

  heading('Net payable');
  row('Gross - costs - collected + adjustments', money(f.netPayable));

  heading('For information (platform revenue, not paid out)');
  row('Service fees paid by buyers', money(f.buyerServiceFees));
  row('IVA paid by buyers', money(f.buyerIva));
  row('Collected from buyers', money(f.collected));

  doc.end();
  return done;
}
