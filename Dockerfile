# syntax=docker/dockerfile:1
# Two images from one file (docker-compose.yml picks the stage):
#   runtime (the default, last stage): the production API, worker, migrations and operator command as compiled JavaScript, production
#           dependencies only, non-root, no tests, benches, sandbox or docs.
#   sandbox: the default stack for trying it (`docker compose up`): the TypeScript sources run through tsx, with the
#           sandbox providers and the seed script.

# ---- every dependency, for compiling and for the sandbox stack ------------------------------------------------------
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund

# ---- build: typecheck and compile (npm run build), and the workflow bundle every worker replica runs --------------------
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY api api
COPY activities activities
COPY config config
COPY domain domain
COPY entities entities
COPY integrations integrations
COPY observability observability
COPY worker worker
COPY workflows workflows
COPY scripts/migrations.ts scripts/migrations.ts
COPY scripts/operator.ts scripts/operator-enterprise.ts scripts/operator-reconciler.ts scripts/
COPY scripts/support/database.ts scripts/support/database.ts
RUN npx tsc -p tsconfig.build.json
# Built once here, from the compiled workflows, instead of by each worker at start (webpack's peak memory and a minute
# of CPU per replica). The replay tests check the same workflow code built from source.
RUN node dist/worker/build-workflow-bundle.js dist/workflow-bundle.js

# ---- production dependencies only --------------------------------------------------------------------------------------
FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# ---- sandbox: the default (try-it) stack, TypeScript through tsx -----------------------------------------------------
FROM deps AS sandbox
ENV NODE_ENV=development
# The C allocator's arenas for the API and the worker, as config/node-flags.ts sets them (PROCESS_NATIVE_ENV).
ENV MALLOC_ARENA_MAX=2
COPY . .
USER node
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=8", "--import", "tsx", "api/main.ts"]

# ---- runtime: the production image -----------------------------------------------------------------------------------
FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
# The C allocator's arenas for the API and the worker, as config/node-flags.ts sets them (PROCESS_NATIVE_ENV).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
ENV WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
USER node
EXPOSE 3000
# Ready: PostgreSQL, Redis and Temporal answer and a worker polls the task queue (api/routes/health.ts). The worker's
# service overrides it with its own (docker-compose.yml).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.API_PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=8", "dist/api/main.js"]
