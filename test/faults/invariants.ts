/**
 * The invariants of one ticket type's sale, checked with SQL (and, when given, against the gateway's own record of
 * payments): what the fault suite asserts after every fault and the benchmark reports after every phase.
 *
 * - no oversell: every stock shard ≥ 0 and confirmed units ≤ capacity;
 * - stock conservation: Σ shards = capacity − confirmed units − units of live (PENDING) reservations;
 * - allocations follow status: PENDING and CONFIRMED sales hold exactly their quantity, every other sale holds none;
 * - tickets only for CONFIRMED sales, exactly one per unit (no duplicates), none valid for any other status;
 * - every approved payment ends as the payment of a CONFIRMED sale or as a recorded refund; no sale keeps two
 *   approved, unrefunded payments (double charge);
 * - settled (optional): no reservation is left PENDING.
 */
import { GatewayAClient, type GatewayAPayment } from '../../integrations/gateway-a/client.js';

export type Query = <R>(sql: string, params: unknown[]) => Promise<R[]>;

export interface SaleRow {
  id: string;
  reference: string;
  status: string;
  payment_ref: string | null;
  quantity: number;
  held: number;
  tickets: number;
  valid_tickets: number;
  expires_at: Date | null;
}

export interface InvariantReport {
  capacity: number;
  available: number;
  shards: number[];
  sales: number;
  byStatus: Record<string, number>;
  confirmedUnits: number;
  pendingUnits: number;
  /** confirmed units − capacity when the type is sold out (0 = sold exactly the capacity); negative = unsold. */
  soldMinusCapacity: number;
  approvedPayments: number;
  approvedUnconfirmed: number;
  refundedPayments: number;
  violations: string[];
}

export interface GatewayAccess {
  sandboxUrl: string;
  accessToken?: string;
}

async function gatewayPayments(gateway: GatewayAccess, references: string[]): Promise<Map<string, GatewayAPayment[]>> {
  const client = new GatewayAClient({
    baseUrl: `${gateway.sandboxUrl.replace(/\/$/, '')}/gateway-a`,
    accessToken: gateway.accessToken ?? 'TEST-4010000000000000-000000-sandbox-access-token-dev',
  });
  const found = new Map<string, GatewayAPayment[]>();
  let next = 0;
  const lanes = Array.from({ length: Math.min(16, references.length) }, async () => {
    while (next < references.length) {
      const reference = references[next++]!;
      found.set(reference, await client.searchPaymentsByReference(reference));
    }
  });
  await Promise.all(lanes);
  return found;
}

export async function checkInvariants(
  query: Query,
  options: { ticketTypeId: string; capacity: number; requireSettled?: boolean; gateway?: GatewayAccess },
): Promise<InvariantReport> {
  const violations: string[] = [];
  const shards = (
    await query<{ available: number }>('select available from ticket_stock where ticket_type_id = $1 order by shard', [
      options.ticketTypeId,
    ])
  ).map((row) => Number(row.available));
  const sales = (
    await query<SaleRow>(
      `select s.id, s.reference, s.status, s.payment_ref, s.expires_at, i.quantity,
              coalesce(a.held, 0)::int as held, coalesce(t.n, 0)::int as tickets, coalesce(t.valid, 0)::int as valid_tickets
         from sales s
         join sale_items i on i.sale_id = s.id and i.ticket_type_id = $1
         left join (select sale_id, sum(quantity) as held from sale_stock_allocations
                     where ticket_type_id = $1 group by sale_id) a on a.sale_id = s.id
         left join (select sale_id, count(*) as n, count(*) filter (where status = 'VALID') as valid from tickets
                     where ticket_type_id = $1 group by sale_id) t on t.sale_id = s.id`,
      [options.ticketTypeId],
    )
  ).map((row) => ({ ...row, quantity: Number(row.quantity) }));

  const available = shards.reduce((sum, n) => sum + n, 0);
  const byStatus: Record<string, number> = {};
  let confirmedUnits = 0;
  let pendingUnits = 0;
  for (const sale of sales) {
    byStatus[sale.status] = (byStatus[sale.status] ?? 0) + 1;
    if (sale.status === 'CONFIRMED') confirmedUnits += sale.quantity;
    if (sale.status === 'PENDING') pendingUnits += sale.quantity;
    const holds = sale.status === 'CONFIRMED' || sale.status === 'PENDING';
    if (sale.held !== (holds ? sale.quantity : 0)) {
      violations.push(`sale ${sale.reference} is ${sale.status} and holds ${sale.held} of ${sale.quantity} units`);
    }
    if (sale.tickets > sale.quantity) {
      violations.push(`sale ${sale.reference} has ${sale.tickets} tickets for ${sale.quantity} units (duplicates)`);
    }
    if (sale.status === 'CONFIRMED' && sale.valid_tickets !== sale.quantity) {
      violations.push(`CONFIRMED sale ${sale.reference} has ${sale.valid_tickets} valid tickets, not ${sale.quantity}`);
    }
    if (sale.status !== 'CONFIRMED' && sale.valid_tickets > 0) {
      violations.push(`${sale.status} sale ${sale.reference} has ${sale.valid_tickets} valid tickets`);
    }
    if (options.requireSettled && sale.status === 'PENDING') {
      violations.push(`sale ${sale.reference} is still PENDING (expires ${sale.expires_at?.toISOString() ?? 'never'})`);
    }
  }
  if (shards.some((n) => n < 0)) violations.push(`a stock shard is negative: ${shards.join(',')}`);
  if (confirmedUnits > options.capacity) {
    violations.push(`oversold: ${confirmedUnits} confirmed units for a capacity of ${options.capacity}`);
  }
  if (available !== options.capacity - confirmedUnits - pendingUnits) {
    violations.push(
      `stock not conserved: available ${available} ≠ capacity ${options.capacity} − confirmed ${confirmedUnits} − pending ${pendingUnits}`,
    );
  }

  // Payments: what our records say was approved or refunded, and (when reachable) what the gateway says.
  const saleIds = sales.map((s) => s.id);
  const attempts =
    saleIds.length === 0
      ? []
      : await query<{ sale_id: string; kind: string; provider_payment_id: string | null; status: string | null }>(
          `select sale_id, kind, provider_payment_id, status from payment_attempts
            where sale_id = any($1::uuid[]) and provider_payment_id is not null
              and (kind = 'REFUND' or status = 'approved')`,
          [saleIds],
        );
  const refundRecorded = new Set(attempts.filter((a) => a.kind === 'REFUND').map((a) => a.provider_payment_id));
  const approved = new Map<string, Set<string>>();
  const gatewayRefunded = new Set<string>();
  for (const attempt of attempts) {
    if (attempt.kind === 'REFUND' || !attempt.provider_payment_id) continue;
    const set = approved.get(attempt.sale_id) ?? new Set<string>();
    set.add(attempt.provider_payment_id);
    approved.set(attempt.sale_id, set);
  }
  if (options.gateway) {
    const byReference = await gatewayPayments(
      options.gateway,
      sales.map((s) => s.reference),
    );
    for (const sale of sales) {
      for (const payment of byReference.get(sale.reference) ?? []) {
        if (payment.status === 'refunded' || payment.status === 'charged_back') gatewayRefunded.add(payment.id);
        if (payment.status !== 'approved' && payment.status !== 'refunded' && payment.status !== 'charged_back') {
          continue;
        }
        const set = approved.get(sale.id) ?? new Set<string>();
        set.add(payment.id);
        approved.set(sale.id, set);
      }
    }
  }
  let approvedPayments = 0;
  let approvedUnconfirmed = 0;
  let refundedPayments = 0;
  for (const sale of sales) {
    const payments = [...(approved.get(sale.id) ?? [])];
    approvedPayments += payments.length;
    const kept: string[] = [];
    for (const paymentId of payments) {
      const refunded = refundRecorded.has(paymentId) || gatewayRefunded.has(paymentId);
      if (refunded) {
        refundedPayments += 1;
        continue;
      }
      kept.push(paymentId);
      const paysThisSale = sale.status === 'CONFIRMED' && sale.payment_ref === paymentId;
      if (!paysThisSale) {
        approvedUnconfirmed += 1;
        // A PENDING sale with an approved payment is still being confirmed; `requireSettled` flags it above.
        if (sale.status !== 'PENDING') {
          violations.push(
            `approved payment ${paymentId} of ${sale.status} sale ${sale.reference} is neither confirmed nor refunded`,
          );
        }
      }
    }
    if (kept.length > 1)
      violations.push(`sale ${sale.reference} kept ${kept.length} approved payments (double charge)`);
  }

  return {
    capacity: options.capacity,
    available,
    shards,
    sales: sales.length,
    byStatus,
    confirmedUnits,
    pendingUnits,
    soldMinusCapacity: confirmedUnits + pendingUnits - options.capacity,
    approvedPayments,
    approvedUnconfirmed,
    refundedPayments,
    violations,
  };
}
