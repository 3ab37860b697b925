// Two demo environment configurations for `seed --demo`. Their secrets are obviously fake values.
import type { EnvironmentChanges } from "../operations/environment-configs.js";

export const demoEnvironments: EnvironmentChanges[] = [
  {
    name: "storefront-web",
    description: "Next.js storefront with a local PostgreSQL and Redis for end-to-end work",
    preinstalledPackages: { node_version: "22", python_version: "3.12" },
    runtimeConfig: {
      install: "npm ci && npx prisma generate",
      start: "npm run dev -- --port 3000",
      terminals: [
        { name: "database", command: "docker compose up postgres redis", description: "PostgreSQL 16 and Redis for the dev server" },
        { name: "typecheck", command: "npx tsc --noEmit --watch", description: "continuous type checking" },
      ],
    },
    environmentVariables: { NODE_ENV: "development", LOG_LEVEL: "debug", PORT: "3000" },
    secrets: { DATABASE_PASSWORD: "demo-not-a-real-password", STRIPE_API_KEY: "demo-not-a-real-key" },
  },
  {
    name: "payments-service",
    description: "Go payment service with its Rust signing library",
    preinstalledPackages: { go_version: "1.24.3", rust_version: "1.90.0" },
    runtimeConfig: {
      install: "go mod download && cargo build --release --manifest-path signer/Cargo.toml",
      start: "go run ./cmd/payments",
      terminals: [{ name: "tests", command: "go test ./... -count=1 -run Integration", description: "integration tests in a loop" }],
    },
    environmentVariables: { GOFLAGS: "-mod=readonly", PAYMENTS_PORT: "8081" },
    secrets: { SIGNING_KEY: "demo-not-a-real-signing-key" },
  },
];
