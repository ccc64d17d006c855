import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiServices } from '../../services.js';
import { publicCatalogRoutes } from './catalog.js';
import { orderPaymentPageRoutes } from './order-payment-page.js';
import { publicOrderRoutes } from './orders.js';
import { publicQueueRoutes } from './queue.js';
import { publicTicketRoutes } from './tickets.js';

/** Every public storefront route group under /api/public. */
export const publicRoutes: FastifyPluginAsyncZod<{ services: ApiServices }> = async (app, { services }) => {
  await app.register(publicCatalogRoutes, { services });
  await app.register(publicOrderRoutes, { services });
  await app.register(orderPaymentPageRoutes, { services });
  await app.register(publicTicketRoutes, { services });
  await app.register(publicQueueRoutes, { services });
};
