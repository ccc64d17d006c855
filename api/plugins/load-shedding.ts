/**
 * Load shedding (@fastify/under-pressure): when the event loop's last sample shows the process falling behind (mean
 * delay or utilization above LOAD_SHED_*), every new request is answered at once with 503 SERVICE_UNAVAILABLE and
 * Retry-After, before authentication or any database work, instead of joining a queue that only grows. Routes that
 * declare `config.neverShed` always answer: health checks and /metrics, so an orchestrator does not restart a busy
 * instance and operators still see it; and the gateways' payment notifications, because each turns held stock into a
 * sale or money back into a refund, costs one signal, and shedding it would only make the gateway send it again
 * later, after the buyer has waited.
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
    const shed = (request: FastifyRequest, reply: FastifyReply, type: string): ErrorBody | undefined => {
      if (request.routeOptions.config?.neverShed) return undefined;
      if (app.hasDecorator('apiMetrics')) app.apiMetrics.shed.inc({ reason: type });
      const error = new AppError(
        'SERVICE_UNAVAILABLE',
        'The service is overloaded; retry after the Retry-After delay',
        {
          details: { reason: 'overloaded' },
        },
      );
      reply.status(error.status).header('retry-after', retryAfter);
      return error.toBody();
    };

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
