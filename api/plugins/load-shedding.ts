/**
 * Load shedding (@fastify/under-pressure): when the event loop's last sample shows the process falling behind (mean
 * delay or utilization above LOAD_SHED_*), every new request is answered at once with 503 SERVICE_UNAVAILABLE and
 * Retry-After, before authentication or any database work, instead of joining a queue that only grows. Routes that
 * declare `config.neverShed` always answer: health checks and /metrics, so an orchestrator does not restart a busy
 * instance and operators still see it; and the gateways' payment notifications, because each turns held stock into a
 * sale or money back into a refund, costs one signal, and shedding it would only make the gateway send it again
 * later, after the buyer has waited.
 *
 * Two kinds of request continue a purchase whose size something else already bounds, and are not shed either:
 * - The payment of a reservation (`neverShed` on the payment routes): its stock is held and its clock is running, so
 *   shedding it can only let a held ticket lapse unpaid, and there are never more of them than units held.
 * - A reservation with an admitted waiting-room turn (`servedWithAdmittedTurn`): the room admits only as many buyers
 *   as the stack can serve, and slows admission on the same pressure. Whether a presented X-Queue-Token is admitted
 *   is known only once its date and turn are read, so such a request is let in with its refusal deferred
 *   (`request.deferredShed`), and the reservation (api/http/queue.ts) refuses it unless the turn was admitted. A
 *   forged token buys a bot one date read and one Redis script before the same 503.
 */
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, type ErrorBody } from '../../domain/errors.js';

export interface LoadSheddingOptions {
  /** Mean event-loop delay (ms) over a sample above which requests are shed; 0 turns it off. */
  maxEventLoopDelayMs: number;
  /** Event-loop utilization (0–1) over a sample above which requests are shed; 0 turns it off. */
  maxEventLoopUtilization: number;
  sampleIntervalMs: number;
  retryAfterSeconds: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served even under overload (see the module comment). */
    neverShed?: boolean;
    /** Under overload, served only if its X-Queue-Token turns out admitted (see the module comment). */
    servedWithAdmittedTurn?: boolean;
  }
  interface FastifyRequest {
    /**
     * Set when the process was overloaded as this request arrived and its shedding waits for its turn to be read:
     * returns the 503 to throw (and counts it as shed). Null when the request was not under that pressure.
     */
    deferredShed: (() => AppError) | null;
  }
}

type PressureHandler = NonNullable<Parameters<typeof underPressure>[1]['pressureHandler']>;

export const loadSheddingPlugin = fp(
  async (app: FastifyInstance, options: LoadSheddingOptions) => {
    const retryAfter = String(options.retryAfterSeconds);
    /**
     * Returns the contract's error body for under-pressure to send, without calling the next hook: the error handler
     * would log every shed request at error level, which is the last thing an overloaded process needs.
     */
    const overloaded = (type: string): AppError => {
      if (app.hasDecorator('apiMetrics')) app.apiMetrics.shed.inc({ reason: type });
      return new AppError('SERVICE_UNAVAILABLE', 'The service is overloaded; retry after the Retry-After delay', {
        details: { reason: 'overloaded' },
        headers: { 'retry-after': retryAfter },
      });
    };
    const shed = (request: FastifyRequest, reply: FastifyReply, type: string): ErrorBody | undefined => {
      const config = request.routeOptions.config;
      if (config?.neverShed) return undefined;
      if (config?.servedWithAdmittedTurn && request.headers['x-queue-token'] !== undefined) {
        request.deferredShed = () => overloaded(type);
        return undefined;
      }
      const error = overloaded(type);
      reply.status(error.status).headers(error.headers);
      return error.toBody();
    };
    app.decorateRequest('deferredShed', null);

    await app.register(underPressure, {
      maxEventLoopDelay: options.maxEventLoopDelayMs,
      maxEventLoopUtilization: options.maxEventLoopUtilization,
      // The last sample, not the average since start: a process idle for hours must still shed a sudden flood.
      eventLoopUtilizationMode: 'interval',
      sampleInterval: options.sampleIntervalMs,
      retryAfter: options.retryAfterSeconds,
      // under-pressure sends any non-promise value the handler returns (its README, "pressureHandler").
      pressureHandler: shed as PressureHandler,
    });

    if (app.hasDecorator('apiMetrics')) {
      app.apiMetrics.pressure = () => {
        const usage = app.memoryUsage();
        return { eventLoopDelayMs: usage.eventLoopDelay, eventLoopUtilization: usage.eventLoopUtilized };
      };
    }
  },
  { name: 'load-shedding' },
);
