# One image for the API, the worker and the sandbox; docker-compose.yml picks the entry point.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
USER node
CMD ["node", "--import", "tsx", "api/main.ts"]
