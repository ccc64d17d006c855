/**
 * Seeds a reports benchmark database in a few set-based statements: events, dates, ticket types, stock, `sales`
 * sales of a realistic mix (confirmed paid by gateway A, B or at the box office, free, abandoned, cancelled,
 * refunded, pending) spread over the last year, their items, tickets, allocations, payment attempts, and
 * membership subscribers. Amounts follow the stored-breakdown rule the service writes (total = subtotal − discount
 * + service fee + IVA). Deterministic: `setseed` fixes the mix.
 */
import type pg from 'pg';

export interface SeededWorkspace {
  workspaceId: string;
  eventId: string;
  eventDateId: string;
}

export async function seedReportsWorkspace(
  client: pg.Client,
  options: {
    sales: number;
    events: number;
    datesPerEvent: number;
    typesPerDate: number;
    subscribers: number;
    seed: number;
  },
): Promise<SeededWorkspace> {
  const q = (text: string, params: unknown[] = []) => client.query(text, params);
  await q('select setseed($1)', [options.seed]);
  const {
    rows: [workspace],
  } = await q(
    `insert into workspaces (id, created_at, updated_at, name, slug)
     values (gen_random_uuid(), now(), now(), 'Bench workspace', 'bench-' || substr(md5(random()::text), 1, 10))
     returning id`,
  );
  const workspaceId: string = workspace.id;
  await q(
    `insert into events (id, created_at, updated_at, workspace_id, name, slug, status)
     select gen_random_uuid(), now(), now(), $1, 'Event ' || g, 'bench-' || substr(md5(random()::text), 1, 16), 'PUBLISHED'
       from generate_series(1, $2) g`,
    [workspaceId, options.events],
  );
  await q(
    `insert into event_dates (id, created_at, updated_at, workspace_id, event_id, starts_at, timezone)
     select gen_random_uuid(), now(), now(), $1, e.id, now() - interval '300 days' + (random() * 400) * interval '1 day',
            'America/Bogota'
       from events e cross join generate_series(1, $2) g where e.workspace_id = $1`,
    [workspaceId, options.datesPerEvent],
  );
  await q(
    `insert into ticket_types (id, created_at, updated_at, workspace_id, event_id, event_date_id, name, price, currency,
                               capacity, fee_absorbed_by_organizer, sort_order)
     select gen_random_uuid(), now(), now(), $1, d.event_id, d.id, 'Type ' || g, (20 + floor(random() * 30)) * 1000, 'COP',
            100000, random() < 0.2, g
       from event_dates d cross join generate_series(1, $2) g where d.workspace_id = $1`,
    [workspaceId, options.typesPerDate],
  );
  await q(
    `insert into ticket_stock (ticket_type_id, shard, available)
     select t.id, s, 10000 from ticket_types t cross join generate_series(0, 7) s where t.workspace_id = $1`,
    [workspaceId],
  );
  await q('drop table if exists bench_types');
  await q(
    `create temp table bench_types as
     select row_number() over (order by t.id) - 1 as n, t.id, t.event_id, t.event_date_id, t.name, t.price,
            t.fee_absorbed_by_organizer as absorbed
       from ticket_types t where t.workspace_id = $1`,
    [workspaceId],
  );
  await q('drop table if exists bench_sales');
  // Per ticket: fee 10 % of the price, IVA 19 % of the buyer's fee; absorbed types put the fee on the organizer.
  await q(
    `create temp table bench_sales as
     with raw as (
       select g, random() as r1, random() as r2, random() as r3, 1 + floor(random() * 4)::int as qty,
              (select count(*) from bench_types) as types
         from generate_series(1, $1) g),
     typed as (
       select raw.*, t.id as type_id, t.event_id, t.event_date_id, t.name as type_name, t.price, t.absorbed,
              case when r1 < 0.70 then 'CONFIRMED' when r1 < 0.75 then 'FREE' when r1 < 0.83 then 'ABANDONED'
                   when r1 < 0.88 then 'CANCELLED' when r1 < 0.94 then 'REFUNDED' else 'PENDING' end as kind
         from raw join bench_types t on t.n = raw.g % raw.types)
     select gen_random_uuid() as id, g, qty, type_id, event_id, event_date_id, type_name, price, kind,
            case when kind = 'FREE' then 'CONFIRMED' else kind end as status,
            now() - (r3 * 365) * interval '1 day' as created_at,
            qty * price as subtotal,
            case when kind = 'FREE' then qty * price else 0 end as discount,
            case when kind = 'FREE' or absorbed then 0 else qty * round(price * 0.1)::int end as fee,
            case when kind = 'FREE' or absorbed then 0 else qty * round(round(price * 0.1) * 0.19)::int end as iva,
            case when kind = 'FREE' or not absorbed then 0 else qty * round(price * 0.1)::int end as organizer_fee,
            case when kind in ('FREE') then null when r2 < 0.5 then 'GATEWAY_A' when r2 < 0.9 then 'GATEWAY_B' else null end
              as provider,
            price as unit_price
       from typed`,
    [options.sales],
  );
  await q(
    `insert into sales (id, created_at, updated_at, workspace_id, reference, status, channel, origin, event_id, event_date_id,
                        buyer_name, buyer_email, buyer_phone, subtotal, discount_amount, service_fee, iva, total,
                        organizer_service_fee, currency, payment_provider, payment_ref, payment_status, confirmed_at)
     select id, created_at, created_at, $1, 'FT-' || upper(substr(md5(id::text), 1, 12)), status,
            case when provider is null then 'POS' else 'WEB' end, case when provider is null then 'ORGANIZER' else 'CUSTOMER' end,
            event_id, event_date_id, 'Buyer ' || (g % 20000), 'buyer' || (g % 20000) || '@bench.test', '+57300' || (g % 20000),
            subtotal, discount, fee, iva, subtotal - discount + fee + iva, organizer_fee, 'COP', provider,
            case when provider is not null and status in ('CONFIRMED', 'REFUNDED') then 'pay-' || g end,
            case when provider is null and status = 'CONFIRMED' then 'FT_OFFLINE' end,
            case when status in ('CONFIRMED', 'REFUNDED') then created_at + interval '2 minutes' end
       from bench_sales`,
    [workspaceId],
  );
  await q(
    `insert into sale_items (id, sale_id, ticket_type_id, ticket_type_name, quantity, unit_price, unit_service_fee, unit_iva)
     select gen_random_uuid(), id, type_id, type_name, qty, unit_price, fee / qty, iva / qty from bench_sales`,
  );
  await q(
    `insert into tickets (id, created_at, updated_at, workspace_id, sale_id, ticket_type_id, event_id, event_date_id, code,
                          ordinal, status, checked_in_at)
     select gen_random_uuid(), s.created_at, s.created_at, $1, s.id, s.type_id, s.event_id, s.event_date_id,
            md5(s.id::text || o), o,
            case when s.status = 'REFUNDED' then 'INVALID' when s.g % 10 = 0 then 'USED' else 'VALID' end,
            case when s.status <> 'REFUNDED' and s.g % 10 = 0 then s.created_at + interval '1 day' end
       from bench_sales s cross join lateral generate_series(1, s.qty) o where s.status in ('CONFIRMED', 'REFUNDED')`,
    [workspaceId],
  );
  await q(
    `insert into sale_stock_allocations (sale_id, ticket_type_id, shard, quantity)
     select id, type_id, g % 8, qty from bench_sales where status in ('CONFIRMED', 'PENDING')`,
  );
  await q(
    `insert into payment_attempts (id, sale_id, gateway, kind, provider_payment_id, status, amount, created_at)
     select gen_random_uuid(), id, provider, 'CARD', 'pay-' || g,
            case when provider = 'GATEWAY_A' then 'approved' else 'APPROVED' end,
            subtotal - discount + fee + iva, created_at + interval '1 minute'
       from bench_sales where provider is not null and status in ('CONFIRMED', 'REFUNDED')
     union all
     select gen_random_uuid(), id, provider, 'REFUND', 'pay-' || g, 'refunded', subtotal - discount + fee + iva,
            created_at + interval '3 days'
       from bench_sales where provider is not null and status = 'REFUNDED'
     union all
     select gen_random_uuid(), id, provider, 'OPEN', null, null, null, created_at
       from bench_sales where provider is not null and status in ('ABANDONED', 'PENDING', 'CANCELLED')`,
  );
  await q(
    `with plan as (
       insert into membership_plans (id, created_at, updated_at, workspace_id, name, price, currency, period, benefits)
       values (gen_random_uuid(), now(), now(), $1, 'Club', 30000, 'COP', 'MONTHLY',
               '{"membersOnlyAccess": true, "discountPercent": 10}') returning id),
     people as (
       insert into buyers (id, created_at, updated_at, email, name)
       select gen_random_uuid(), now(), now(), 'member' || g || '-' || substr(md5(random()::text), 1, 8) || '@bench.test',
              'Member ' || g from generate_series(1, $2) g returning id)
     insert into membership_subscriptions (id, created_at, updated_at, workspace_id, plan_id, buyer_id, status, currency,
                                           activated_at, current_period_end)
     select gen_random_uuid(), now() - interval '90 days', now(), $1, plan.id, people.id,
            case when random() < 0.8 then 'ACTIVE' else 'CANCELLED' end, 'COP',
            now() - interval '90 days', now() + interval '20 days'
       from people cross join plan`,
    [workspaceId, options.subscribers],
  );
  const {
    rows: [sample],
  } = await q(
    `select d.event_id, d.id from event_dates d where d.workspace_id = $1 order by d.starts_at desc limit 1`,
    [workspaceId],
  );
  return { workspaceId, eventId: sample.event_id, eventDateId: sample.id };
}
