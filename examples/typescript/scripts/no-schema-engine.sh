#!/bin/sh
# Stands in for Prisma's schema engine (see scripts/generate.mjs): only
# `prisma migrate` and `prisma db push` run it, and these examples create
# their tables with prisma/migrations/*/migration.sql instead.
echo "the Prisma schema engine is not installed here: apply prisma/migrations/*/migration.sql with psql (README.md)" >&2
exit 1
