-- examples/sql/order_view.sql -- the consumer side of the examples: what
-- an "order view" service keeps about orders, built from their events.
-- Applied in each consumer's own database, after sql/inbox.sql (the
-- processed_events table and inbox_claim()).
--
-- order_view is the side effect a real consumer has (a projection, a
-- counter, a reservation). order_effects is a log of every application
-- of an event, kept on purpose WITHOUT a unique key: when a consumer
-- applies one event twice, two rows show it. The examples' test counts
-- both tables against the events the service wrote.
--
-- Idempotent: IF NOT EXISTS.

CREATE TABLE IF NOT EXISTS public.order_view (
    order_id       text        PRIMARY KEY,
    status         text        NOT NULL,
    version        integer     NOT NULL,   -- the newest version applied
    events_applied integer     NOT NULL,   -- +1 per applied event
    total          numeric(12, 2),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS public.order_effects (
    event_id   uuid        NOT NULL,       -- the record's id header
    order_id   text        NOT NULL,       -- the record key
    event_type text        NOT NULL,
    version    integer     NOT NULL,       -- payload's version
    in_order   boolean     NOT NULL,       -- version = the view's + 1
    applied_at timestamptz NOT NULL DEFAULT now()
);
