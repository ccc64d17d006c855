# One image for the API, the worker and the sandbox; docker-compose.yml picks the entry point.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The workflow bundle every worker runs, built once with the image instead of by each worker replica at start.
RUN node --import tsx worker/build-workflow-bundle.ts /app/workflow-bundle.js
ENV WORKFLOW_BUNDLE_PATH=/app/workflow-bundle.js
USER node
CMD ["node", "--max-old-space-size=256", "--max-semi-space-size=8", "--import", "tsx", "api/main.ts"]
