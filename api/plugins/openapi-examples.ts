/**
 * One realistic request example per operation with a body, shown by the interactive references (`/api/v1/docs`,
 * `/api/public/docs`) as the body "Try it out" starts from. Kept in one place, like the error examples of
 * openapi-contract.ts, and keyed by surface, method and path as the document names them.
 *
 * Every example is one a real client would send, and test/e2e/openapi-examples.test.ts sends each of them to the API:
 * a route with a body and no example fails that test, and so does an example the route no longer accepts. Ids and
 * one-time values (a sign-in code, a card token) cannot be known in advance: the examples use the placeholders of
 * EXAMPLE_PLACEHOLDERS, which the test swaps for the objects it created, as a reader swaps in their own.
 */
import type { Surface } from './openapi-contract.js';

/** What the examples name but a reader must replace with their own: ids, codes, tokens. */
export const EXAMPLE_PLACEHOLDERS = {
  workspaceId: '0193a6f2-4e8a-7f1c-8d3b-3a5c9e2f7d65',
  venueId: '0193a6f2-5d09-7b3e-9f12-1c4d7e8a2b43',
  eventId: '0193a6f2-6c1e-7d2a-9b41-2f7e3c5a8d10',
  eventDateId: '0193a6f2-7a44-7c1b-8e2d-4b9a1c6f3e21',
  ticketTypeId: '0193a6f2-8b12-7e5f-a3c4-5d8e2f1a7b32',
  /** A second date and type of the same event, where a ticket is moved to. */
  otherEventDateId: '0193a6f2-7b55-7d2c-9f3e-5c0b2d7a4f32',
  otherTicketTypeId: '0193a6f2-8c23-7f60-b4d5-6e9f3a2b8c43',
  planId: '0193a6f2-9c3d-7a6b-b5e1-6f2a8d4c1e54',
  videoId: '0193a6f2-ad4e-7b7c-86f2-7a3b9e5d2f76',
  /** The playback ids the video provider gave an asset and a live stream created for this workspace. */
  providerAssetId: 'a4nOgmxGWg6gULfcBbAa00gXyfcwPnAFldF8RdsNyk8M',
  providerStreamId: 'Tq6xQn02b3DSvWGb8nP01rZ00fy3nQbAWFmkL9sJcVz8',
  /** The 6-digit code the sign-in email carried. */
  signInCode: '482913',
  /** A card token gateway A's payment brick created in the browser. */
  cardToken: '9f2c4b7e1a8d3f6c0e5b2a9d7c4f1e8b',
  /** An organizer API key, as POST /api-keys or the device grant handed it out. */
  apiKey: 'tkt_live_Q2hhbmdlTWVCZWZvcmVVc2luZ1RoaXNLZXlJblByb2Q',
  /** The device_code that POST /auth/device/code answered. */
  deviceCode: 'Xk3uF0pZ8rT2vW6yB1nQ4sD7gH9jL5mC',
  /** A one-time token the enterprise's own system signed (HS256 JWT). */
  enterpriseToken:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiIwMTkzYTZmMi1iZTVmLTdjOGQtOTdhMy04YjRjMGY2ZTNhODciLCJhdWQiOiJodHRwczovL3RpY2tldHMuZXhhbXBsZS5jb20iLCJzdWIiOiJlbXAtMTA0MiIsImVtYWlsIjoiYW5hLmdvbWV6QGFjbWUuZXhhbXBsZSIsIm5hbWUiOiJBbmEgR8OzbWV6IiwiaWF0IjoxOTI0OTkyMDAwLCJleHAiOjE5MjQ5OTIxMjAsImp0aSI6IjVmM2IyYzFhIn0.4q0Gm7wJ2cV9yX1bN6pK3tR8sD5fH0jL2aZ7eQ4uW1o',
} as const;

const P = EXAMPLE_PLACEHOLDERS;
const BUYER_EMAIL = 'ana.gomez@example.com';

/** `<surface> <METHOD> <path as the document names it>` → the request body. */
export const REQUEST_EXAMPLES: Record<string, unknown> = {
  // ---------------------------------------------------------------- self-service sign-up and device login
  'organizer POST /auth/signup': { email: 'lucia.restrepo@example.com', name: 'Lucía Restrepo' },
  'organizer POST /auth/device/code': { client_id: 'ticketing-cli', scope: 'read write' },
  'organizer POST /auth/device/token': {
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: P.deviceCode,
    client_id: 'ticketing-cli',
  },
  'organizer POST /auth/revoke': { token: P.apiKey, token_type_hint: 'access_token', client_id: 'ticketing-cli' },
  'organizer POST /workspaces': { name: 'Teatro Colón Bogotá', slug: 'teatro-colon-bogota', currency: 'COP' },
  'organizer POST /api-keys': { name: 'Box office tablets', scope: 'write', expiresAt: '2030-12-31T23:59:59.000Z' },
  // ---------------------------------------------------------------- buyers
  'organizer POST /customer/auth/request': { email: BUYER_EMAIL },
  'organizer POST /customer/auth/verify': { email: BUYER_EMAIL, code: P.signInCode },
  'organizer PATCH /customer/profile': { name: 'Ana María Gómez', phone: '+573001234567' },
  'organizer POST /customer/orders': {
    eventDateId: P.eventDateId,
    items: [{ ticketTypeId: P.ticketTypeId, quantity: 2 }],
    buyer: { name: 'Ana Gómez', phone: '+573001234567', idType: 'CC', idNumber: '1020304050' },
    returnUrl: 'http://localhost:5173/gracias',
  },
  'organizer POST /customer/orders/{id}/payment/card': {
    token: P.cardToken,
    paymentMethodId: 'master',
    installments: 1,
  },
  'organizer POST /customer/purchase-sessions': { eventDateId: P.eventDateId },
  'organizer POST /customer/subscriptions': { planId: P.planId },
  'organizer POST /customer/subscriptions/cancel': { workspaceId: P.workspaceId },
  'organizer POST /api/customer-auth/enterprise-exchange': { token: P.enterpriseToken },
  'organizer POST /customer-auth/enterprise-exchange': { token: P.enterpriseToken },
  // ---------------------------------------------------------------- catalog
  'organizer POST /venues': {
    name: 'Movistar Arena',
    address: 'Diagonal 61C #26-36',
    city: 'Bogotá',
    country: 'CO',
    timezone: 'America/Bogota',
    capacity: 14000,
  },
  'organizer PATCH /venues/{id}': { address: 'Diagonal 61C #26-36, Campín', capacity: 13500 },
  'organizer POST /events': {
    name: 'Festival Estéreo Picnic 2030',
    slug: 'festival-estereo-picnic-2030',
    description: 'Three days of music in Parque Simón Bolívar.',
    imageUrl: 'https://cdn.example.com/events/fep-2030.jpg',
    venueId: P.venueId,
  },
  'organizer PATCH /events/{id}': {
    description: 'Three days of music in Parque Simón Bolívar. Gates open at 12:00.',
    imageUrl: 'https://cdn.example.com/events/fep-2030-poster.jpg',
  },
  'organizer POST /events/{id}/cancel': { reason: 'The artist cancelled the tour' },
  'organizer POST /events/{id}/dates': {
    label: 'Friday',
    startsAt: '2030-03-22T20:00:00.000Z',
    endsAt: '2030-03-23T05:00:00.000Z',
    timezone: 'America/Bogota',
    paymentWindowMinutes: 30,
  },
  'organizer PATCH /events/{id}/dates/{dateId}': { label: 'Friday — night one', paymentWindowMinutes: 20 },
  'organizer POST /ticket-types': {
    eventId: P.eventId,
    eventDateId: P.eventDateId,
    name: 'General admission',
    description: 'Standing, all stages',
    price: 350000,
    capacity: 5000,
    maxPerOrder: 6,
  },
  'organizer PATCH /ticket-types/{id}': { price: 380000, capacity: 5200 },
  'organizer POST /discounts': {
    code: 'PREVENTA10',
    type: 'PERCENT',
    value: 10,
    eventId: P.eventId,
    maxUses: 500,
    startsAt: '2030-01-01T05:00:00.000Z',
    endsAt: '2030-02-01T05:00:00.000Z',
  },
  'organizer PATCH /discounts/{id}': { maxUses: 800, endsAt: '2030-02-15T05:00:00.000Z' },
  'organizer POST /membership-plans': {
    name: 'Club Amigos',
    description: 'Presales, members-only videos and 15 % off every ticket',
    price: 45000,
    period: 'MONTHLY',
    benefits: { membersOnlyAccess: true, discountPercent: 15 },
  },
  'organizer PATCH /membership-plans/{id}': { price: 49000, benefits: { discountPercent: 20 } },
  // ---------------------------------------------------------------- team, sales, tickets, webhooks
  'organizer POST /staff': {
    name: 'Carlos Pérez',
    email: 'carlos.perez@example.com',
    role: 'STAFF',
    sections: ['sales', 'tickets'],
    accessExpiresAt: '2030-12-31T23:59:59.000Z',
  },
  'organizer PATCH /staff/{id}/role': { role: 'ADMIN' },
  'organizer POST /sales': {
    eventDateId: P.eventDateId,
    ticketTypeId: P.ticketTypeId,
    quantity: 2,
    channel: 'ADMIN',
    complimentary: true,
    buyer: { name: 'Valentina Ríos', email: 'valentina.rios@example.com', phone: '+573109876543' },
  },
  'organizer POST /sales/{id}/cancel': { reason: 'Duplicate order', acknowledge_open_payment: true },
  'organizer POST /sales/{id}/refund': { reason: 'The buyer cannot attend', notifyBuyer: true },
  'organizer PATCH /tickets/{ticketCode}': { eventDateId: P.otherEventDateId, ticketTypeId: P.otherTicketTypeId },
  'organizer POST /webhooks': {
    url: 'https://hooks.example.com/ticketing',
    events: ['sale.confirmed', 'sale.refunded'],
  },
  'organizer PATCH /webhooks/{id}': { events: ['sale.confirmed', 'sale.refunded', 'membership.activated'] },
  // ---------------------------------------------------------------- member content
  'organizer POST /content/videos': {
    title: 'Backstage at the Friday show',
    description: 'Soundcheck and interviews',
    providerAssetId: P.providerAssetId,
    membersOnly: false,
  },
  'organizer PATCH /content/videos/{id}': { title: 'Backstage at the Friday show (director’s cut)', membersOnly: true },
  'organizer POST /content/posts': {
    kind: 'article',
    title: 'How we built the main stage',
    body: 'Forty trucks, six days and a crew of 120.',
  },
  'organizer POST /content/lives': {
    title: 'Live from the main stage',
    providerStreamId: P.providerStreamId,
    membersOnly: false,
    scheduledStartAt: '2030-03-22T23:00:00.000Z',
  },
  'organizer PATCH /content/lives/{id}': { status: 'live' },
  'organizer POST /content/playback-token': { assetType: 'video', assetId: P.videoId },
  // ---------------------------------------------------------------- public storefront
  'public POST /orders': {
    buyerEmail: BUYER_EMAIL,
    buyerName: 'Ana Gómez',
    buyerPhone: '+573001234567',
    items: [{ ticketTypeId: P.ticketTypeId, quantity: 2 }],
  },
};

interface MediaType {
  schema?: unknown;
  example?: unknown;
}

/** Sets the example of every media type of an operation's request body. */
export function withRequestExample(surface: Surface, method: string, path: string, operation: object): void {
  const example = REQUEST_EXAMPLES[`${surface} ${method.toUpperCase()} ${path}`];
  const content = (operation as { requestBody?: { content?: Record<string, MediaType> } }).requestBody?.content;
  if (example === undefined || !content) return;
  for (const media of Object.values(content)) media.example = structuredClone(example);
}
