import type { EntityManager } from '@mikro-orm/postgresql';
import { mintApiKey } from '../../entities/api-key.js';
import { newId } from '../../entities/ids.js';
import { ApiKey, Event, EventDate, TicketType, User, Workspace, WorkspaceMember } from '../../entities/index.js';
import { createStock } from '../../entities/stock.js';

export interface DemoSeed {
  workspaceId: string;
  userId: string;
  apiKey: string;
  readApiKey: string;
  demoEvent: { id: string; slug: string; eventDateId: string; ticketTypeId: string };
}

const DEMO_EVENT_SLUG = 'demo-concierto-al-parque';

/** A published event a month ahead with one general-admission ticket type, so a purchase can be tried at once. */
async function ensureDemoEvent(tx: EntityManager, workspaceId: string): Promise<DemoSeed['demoEvent']> {
  const scope = { filters: { tenant: false } } as const;
  // The published one: another workspace's draft may use the same slug (slugs are claimed on publish).
  const existing = await tx.findOne(Event, { slug: DEMO_EVENT_SLUG, publishedAt: { $ne: null } }, scope);
  if (existing) {
    const date = await tx.findOneOrFail(EventDate, { event: existing.id }, { ...scope, orderBy: { startsAt: 'asc' } });
    const type = await tx.findOneOrFail(TicketType, { eventDate: date.id }, scope);
    return { id: existing.id, slug: existing.slug, eventDateId: date.id, ticketTypeId: type.id };
  }
  const event = tx.create(Event, {
    id: newId(),
    workspace: workspaceId,
    venue: null,
    name: 'Demo: Concierto al Parque',
    slug: DEMO_EVENT_SLUG,
    description: 'A demo event seeded by npm run dev.',
    imageUrl: null,
    status: 'PUBLISHED',
    salesMode: 'INTERNAL',
    externalSalesUrl: null,
    gatewayBOnly: false,
    publishedAt: new Date(),
    cancelledAt: null,
    deletedAt: null,
  });
  const date = tx.create(EventDate, {
    id: newId(),
    workspace: workspaceId,
    event: event.id,
    label: 'Opening night',
    startsAt: new Date(Date.now() + 30 * 24 * 60 * 60 * 1000),
    endsAt: null,
    timezone: 'America/Bogota',
    salesStartAt: null,
    salesEndAt: null,
    paymentWindowMinutes: 30,
    virtualQueue: false,
    queueAdmissionsPerMinute: 60,
    seatMapChartKey: null,
    seatMapEventKey: null,
    cancelledAt: null,
    deletedAt: null,
  });
  const type = tx.create(TicketType, {
    id: newId(),
    workspace: workspaceId,
    event: event.id,
    eventDate: date.id,
    name: 'General',
    description: null,
    price: 80_000,
    currency: 'COP',
    capacity: 500,
    maxPerOrder: 10,
    membersOnly: false,
    presaleStartsAt: null,
    presaleEndsAt: null,
    seatMapCategoryKey: null,
    feeAbsorbedByOrganizer: false,
    serviceFeeBps: null,
    serviceFeeFixed: null,
    seatingSurcharge: 0,
    sortOrder: 0,
    deletedAt: null,
  });
  await tx.flush();
  await createStock(tx, type.id, type.capacity);
  return { id: event.id, slug: event.slug, eventDateId: date.id, ticketTypeId: type.id };
}

const DEMO_EMAIL = 'demo-admin@ticketing.local';
const DEMO_KEY_NAMES = ['demo write key (dev stack)', 'demo read key (dev stack)'];

/**
 * The demo workspace with an ADMIN user and fresh write and read keys. Keys are stored hashed, so each run revokes
 * the previous demo keys and mints new ones to be able to print them.
 */
export async function seedDemo(em: EntityManager, options: { keyPrefix: string }): Promise<DemoSeed> {
  return em.transactional(async (tx) => {
    let user = await tx.findOne(User, { email: DEMO_EMAIL });
    let workspace = user?.defaultWorkspaceId ? await tx.findOne(Workspace, { id: user.defaultWorkspaceId }) : null;
    if (!workspace) {
      workspace = tx.create(Workspace, {
        id: newId(),
        name: 'Demo Productions',
        slug: `demo-productions`,
        currency: 'COP',
      });
    }
    if (!user) {
      user = tx.create(User, { id: newId(), name: 'Demo Admin', email: DEMO_EMAIL, defaultWorkspaceId: workspace.id });
    }
    user.defaultWorkspaceId = workspace.id;
    const member = await tx.findOne(WorkspaceMember, { workspace: workspace.id, user: user.id });
    if (!member) {
      tx.create(WorkspaceMember, {
        id: newId(),
        workspace: workspace.id,
        user: user.id,
        role: 'ADMIN',
        sections: null,
        accessExpiresAt: null,
        revokedAt: null,
      });
    }
    const previous = await tx.find(ApiKey, { user: user.id, name: { $in: DEMO_KEY_NAMES }, revokedAt: null });
    for (const key of previous) key.revokedAt = new Date();
    const write = mintApiKey(tx, {
      prefix: options.keyPrefix,
      userId: user.id,
      workspaceId: workspace.id,
      name: DEMO_KEY_NAMES[0] ?? 'demo write key',
      scope: 'write',
    });
    const read = mintApiKey(tx, {
      prefix: options.keyPrefix,
      userId: user.id,
      workspaceId: workspace.id,
      name: DEMO_KEY_NAMES[1] ?? 'demo read key',
      scope: 'read',
    });
    await tx.flush();
    const demoEvent = await ensureDemoEvent(tx, workspace.id);
    return {
      workspaceId: workspace.id,
      userId: user.id,
      apiKey: write.plaintext,
      readApiKey: read.plaintext,
      demoEvent,
    };
  });
}
