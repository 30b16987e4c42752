-- Threads that app-servers on several hosts share: one row per thread (what listings show,
-- and which server may append), its items in order.
-- Substring search uses trigram indexes: the database must allow the pg_trgm extension
-- (a trusted extension since PostgreSQL 13: the database's owner may create it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE keel_threads (
    id TEXT PRIMARY KEY,
    -- `rollout-<created>-<id>.jsonl`, the name a file store gives it: listings order and
    -- page by it, so cursors read the same on both stores.
    list_key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    cwd TEXT NOT NULL,
    model TEXT,
    model_provider TEXT,
    source_json TEXT NOT NULL,
    -- The source flattened to the kind listings filter on (`vscode`, `subAgentThreadSpawn`, ...).
    source_kind TEXT NOT NULL,
    preview TEXT NOT NULL DEFAULT '',
    name TEXT,
    has_turns BOOLEAN NOT NULL DEFAULT false,
    archived BOOLEAN NOT NULL DEFAULT false,
    item_count BIGINT NOT NULL DEFAULT 0,
    -- Fencing: every append names the epoch it was opened at; opening the thread elsewhere
    -- bumps it, so the previous writer's next append fails.
    lease_epoch BIGINT NOT NULL DEFAULT 1,
    -- Set while a turn runs: the server running it, until when (renewed as it runs).
    lease_holder TEXT,
    lease_expires_at TIMESTAMPTZ
);
CREATE INDEX keel_threads_listing ON keel_threads (archived, list_key);
CREATE INDEX keel_threads_listing_by_kind ON keel_threads (archived, source_kind, list_key);
CREATE INDEX keel_threads_name_search ON keel_threads USING gin (lower(name) gin_trgm_ops);

CREATE TABLE keel_thread_items (
    thread_id TEXT NOT NULL REFERENCES keel_threads (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    -- The item as a rollout file line: JSON with its timestamp.
    line TEXT NOT NULL,
    -- A user or assistant message's text, for search.
    message TEXT,
    PRIMARY KEY (thread_id, seq)
);
CREATE INDEX keel_thread_items_message_search ON keel_thread_items
    USING gin (lower(message) gin_trgm_ops) WHERE message IS NOT NULL;
