-- tests/env/demo.sql -- the demo's business table (make demo). The demo
-- writes an order change and its outbox event in one transaction.
CREATE TABLE IF NOT EXISTS public.orders (
    id       text PRIMARY KEY,
    customer text,
    amount   numeric(12,2),
    status   text
);
