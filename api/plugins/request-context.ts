import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { withRequestId } from '../../observability/request-context.js';

/**
 * Everything a request's hooks and handler do runs as part of that request (observability/request-context.ts), so
 * the Temporal calls they make carry its id into workflows. Entered twice: the body is read from socket events,
 * which run outside the context the first hooks set, so it is entered again once the body is parsed.
 */
function enterRequest(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  withRequestId(request.id, done);
}

async function requestContext(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', enterRequest);
  app.addHook('preValidation', enterRequest);
}

export const requestContextPlugin = fp(requestContext, { name: 'request-context' });
