-- What `prisma migrate dev` creates for prisma/schema.prisma (Prisma 7.10).
-- Shipped as SQL because Prisma's schema engine, which migrate runs, is a
-- binary Prisma downloads from its own host, not from the npm registry
-- (examples/typescript/README.md): psql applies this file, and where that
-- host is reachable `prisma migrate deploy` applies the same.

CREATE TABLE "Order" (
    "id" UUID NOT NULL,
    "customer" TEXT NOT NULL,
    "total" DECIMAL(12,2) NOT NULL,
    "status" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Order_pkey" PRIMARY KEY ("id")
);

CREATE TABLE "Outbox" (
    "id" UUID NOT NULL,
    "aggregateType" TEXT NOT NULL,
    "aggregateId" TEXT NOT NULL,
    "eventType" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Outbox_pkey" PRIMARY KEY ("id")
);
