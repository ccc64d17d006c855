/**
 * Per event date: gross, costs and net payable of its CONFIRMED sales, the figures its settlement statement shows
 * (domain/settlement.ts `settlementFigures`). The statement rounds per sale; so does this SQL, with the same
 * constants (GATEWAY_COSTS, IVA_BPS) and round half up in integer arithmetic, (x · bps + 5000) / 10000 for the
 * non-negative amounts stored on a sale; box-office money the organizer already holds is deducted the same way. Adjustments carried from earlier settlements belong to the workspace's
 * next statement, not to a date, so they are not part of these rows.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { IVA_BPS } from '../../domain/pricing.js';
import { GATEWAY_COSTS } from '../../domain/settlement.js';
import { type DateReportFilters, dateConditions, type Scope } from './filters.js';
import { type KeysetPage, keysetClauses } from './paging.js';
import { type Positioned, run } from './queries.js';
import { joinSql, type Sql, sql } from './sql.js';

/** round½↑(amount × bps / 10 000) for a non-negative integer column, in SQL. */
const roundedBps = (amount: Sql, bps: number): Sql => sql`((${amount})::bigint * ${bps}::bigint + 5000) / 10000`;

/** gatewayCost(total, provider): 0 for a free sale or one without a provider, else the provider's rate. */
const GATEWAY_COST = sql`case when s.total = 0 or s.payment_provider is null then 0 ${joinSql(
  Object.entries(GATEWAY_COSTS).map(
    ([provider, bps]) => sql`when s.payment_provider = ${provider} then ${roundedBps(sql`s.total`, bps)}`,
  ),
  ' ',
)} end`;

/** collectedByOrganizerOf(total, provider): a sale no gateway took money for was paid to the organizer itself. */
const COLLECTED_BY_ORGANIZER = sql`case when s.payment_provider is null then s.total else 0 end`;

export interface FinancialsRow {
  eventId: string;
  eventName: string;
  eventDateId: string;
  startsAt: string;
  currency: string | null;
  salesCount: number;
  unitsSold: number;
  listSubtotal: number;
  discounts: number;
  gross: number;
  buyerServiceFees: number;
  buyerIva: number;
  collected: number;
  organizerServiceFee: number;
  organizerIva: number;
  gatewayCosts: number;
  costs: number;
  /** What buyers paid the organizer directly (box office): deducted instead of paid out again. */
  collectedByOrganizer: number;
  /** gross − costs − collectedByOrganizer, signed. */
  netPayable: number;
}

type Numeric = string | number | null;

export async function financials(
  em: EntityManager,
  scope: Scope,
  filters: DateReportFilters,
  page?: KeysetPage,
): Promise<Array<Positioned<FinancialsRow>>> {
  const dates = dateConditions(scope, filters);
  const keyset = keysetClauses(
    [
      { column: 'd.starts_at', type: 'timestamptz' },
      { column: 'd.id', type: 'uuid' },
    ],
    page,
  );
  const confirmed = sql`s.workspace_id = ${scope.workspaceId} and s.status = 'CONFIRMED' and ${dates}`;
  const rows = await run<{
    event_id: string;
    event_name: string;
    event_date_id: string;
    starts_at: Date;
    starts_at_key: string;
    currency: string | null;
    sales_count: Numeric;
    units: Numeric;
    list_subtotal: Numeric;
    discounts: Numeric;
    gross: Numeric;
    buyer_service_fees: Numeric;
    buyer_iva: Numeric;
    collected: Numeric;
    organizer_service_fee: Numeric;
    organizer_iva: Numeric;
    gateway_costs: Numeric;
    collected_by_organizer: Numeric;
  }>(
    em,
    sql`with agg as (
          select s.event_date_id, count(*) as sales_count, sum(s.subtotal) as list_subtotal,
                 sum(s.discount_amount) as discounts, sum(s.subtotal - s.discount_amount) as gross,
                 sum(s.service_fee) as buyer_service_fees, sum(s.iva) as buyer_iva, sum(s.total) as collected,
                 sum(s.organizer_service_fee) as organizer_service_fee,
                 sum(${roundedBps(sql`s.organizer_service_fee`, IVA_BPS)}) as organizer_iva,
                 sum(${GATEWAY_COST}) as gateway_costs, max(s.currency) as currency,
                 sum(${COLLECTED_BY_ORGANIZER}) as collected_by_organizer
            from sales s join event_dates d on d.id = s.event_date_id
           where ${confirmed} group by s.event_date_id),
        units as (
          select s.event_date_id, sum(i.quantity) as units
            from sale_items i join sales s on s.id = i.sale_id join event_dates d on d.id = s.event_date_id
           where ${confirmed} group by s.event_date_id)
        -- agg.* first: a date without sales has a null agg.event_date_id, which must not shadow d.id.
        select agg.*, units.units, d.id as event_date_id, d.starts_at, d.starts_at::text as starts_at_key,
               e.id as event_id, e.name as event_name
          from event_dates d join events e on e.id = d.event_id
          left join agg on agg.event_date_id = d.id left join units on units.event_date_id = d.id
         where ${dates} and (d.deleted_at is null or agg.event_date_id is not null)${keyset.after}
         order by d.starts_at, d.id${keyset.limit}`,
  );
  return rows.map((row) => {
    const gross = Number(row.gross ?? 0);
    const organizerServiceFee = Number(row.organizer_service_fee ?? 0);
    const organizerIva = Number(row.organizer_iva ?? 0);
    const gatewayCosts = Number(row.gateway_costs ?? 0);
    const costs = organizerServiceFee + organizerIva + gatewayCosts;
    const collectedByOrganizer = Number(row.collected_by_organizer ?? 0);
    return {
      position: [row.starts_at_key, row.event_date_id],
      row: {
        eventId: row.event_id,
        eventName: row.event_name,
        eventDateId: row.event_date_id,
        startsAt: new Date(row.starts_at).toISOString(),
        currency: row.currency,
        salesCount: Number(row.sales_count ?? 0),
        unitsSold: Number(row.units ?? 0),
        listSubtotal: Number(row.list_subtotal ?? 0),
        discounts: Number(row.discounts ?? 0),
        gross,
        buyerServiceFees: Number(row.buyer_service_fees ?? 0),
        buyerIva: Number(row.buyer_iva ?? 0),
        collected: Number(row.collected ?? 0),
        organizerServiceFee,
        organizerIva,
        gatewayCosts,
        costs,
        collectedByOrganizer,
        netPayable: gross - costs - collectedByOrganizer,
      },
    };
  });
}
