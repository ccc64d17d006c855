import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type ErrorBody, type ErrorCode } from '../../domain/errors.js';
import { isDatabaseUnavailable } from '../../entities/database-errors.js';

/** Fastify's own error codes, translated to the contract's (part 7) so clients never see a framework message shape. */
const FASTIFY_CODES: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'MALFORMED_JSON', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'MALFORMED_JSON',
    message: 'The request declares a JSON body but sends none; send {} or omit the Content-Type header',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'The request body exceeds the size limit' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Unsupported Content-Type: send application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'BAD_REQUEST', message: 'Content-Length does not match the body' },
  FST_ERR_BAD_URL: { code: 'BAD_REQUEST', message: 'The request URL is malformed' },
  FST_ERR_ASYNC_CONSTRAINT: { code: 'BAD_REQUEST', message: 'The request is malformed' },
};

export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * The body of a 5xx: the message we wrote and at most the `reason` slug. Other details of a server-side failure
 * (a provider's or Temporal's error text, SQL) go to the log only: they help an attacker more than a client.
 */
function serverErrorBody(error: AppError): ErrorBody {
  const reason: unknown =
    typeof error.details === 'object' && error.details !== null ? Reflect.get(error.details, 'reason') : undefined;
  const body = error.toBody();
  return { error: { ...body.error, details: typeof reason === 'string' ? { reason } : null } };
}

/** Exactly one place turns any thrown error into the contract's error body. */
export const errorsPlugin = fp(
  async (app: FastifyInstance) => {
    app.setErrorHandler((error: FastifyError, request, reply) => {
      if (error instanceof AppError) {
        if (error.status >= 500) {
          request.log.error({ err: error, details: error.details }, 'request failed');
          return reply.status(error.status).headers(error.headers).send(serverErrorBody(error));
        }
        return reply.status(error.status).headers(error.headers).send(error.toBody());
      }
      if (hasZodFastifySchemaValidationErrors(error)) {
        const location = error.validationContext ?? 'body';
        const fields: FieldProblem[] = error.validation.map((issue) => ({
          field: [location, ...issue.instancePath.split('/').filter(Boolean)].join('.'),
          message: issue.message ?? 'is invalid',
        }));
        const first = fields[0];
        const body = new AppError(
          'VALIDATION_FAILED',
          first ? `${first.field}: ${first.message}` : 'The request is invalid',
          { details: { fields } },
        ).toBody();
        return reply.status(422).send(body);
      }
      if (isResponseSerializationError(error)) {
        request.log.error({ err: error, issues: error.cause.issues }, 'response did not match its schema');
        return reply.status(500).send(new AppError('INTERNAL', 'Internal error').toBody());
      }
      const known = error.code ? FASTIFY_CODES[error.code] : undefined;
      if (known)
        return reply
          .status(new AppError(known.code, known.message).status)
          .send(new AppError(known.code, known.message).toBody());
      if (error.statusCode === 429) {
        return reply.status(429).send(new AppError('RATE_LIMITED', 'Too many requests').toBody());
      }
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
        return reply.status(error.statusCode).send(new AppError('BAD_REQUEST', error.message).toBody());
      }
      if (isDatabaseUnavailable(error)) {
        // A dependency is down (contract 7.2): the client retries, and nothing was half-written (the server rolled back
        // a transaction that lost its connection). Logged by code only: the driver's message can quote the statement.
        request.log.warn({ code: error.code ?? null }, 'database unavailable');
        const unavailable = new AppError('SERVICE_UNAVAILABLE', 'The database is unavailable; retry shortly', {
          details: { reason: 'database_unavailable' },
          headers: { 'Retry-After': '2' },
        });
        return reply.status(unavailable.status).headers(unavailable.headers).send(unavailable.toBody());
      }
      request.log.error({ err: error }, 'unhandled error');
      return reply
        .status(500)
        .send(new AppError('INTERNAL', 'Internal error; retry later or contact support with the request id').toBody());
    });

    app.setNotFoundHandler((request, reply) => {
      const body = new AppError('ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`).toBody();
      return reply.status(404).send(body);
    });
  },
  { name: 'errors' },
);
