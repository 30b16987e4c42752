-- Agent jobs shared by any number of worker processes: one row per job, one per input row.
-- Rows are claimed under leases (lease_holder until lease_expires_at, on the database's clock).
CREATE TABLE agent_jobs (
    id TEXT PRIMARY KEY,
    resume_key TEXT NOT NULL,
    status TEXT NOT NULL,
    csv_path TEXT NOT NULL,
    output_csv_path TEXT NOT NULL,
    instruction TEXT NOT NULL,
    output_schema TEXT,
    headers_json TEXT NOT NULL,
    total BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX agent_jobs_by_key ON agent_jobs (resume_key, status);

CREATE TABLE agent_job_items (
    job_id TEXT NOT NULL REFERENCES agent_jobs (id) ON DELETE CASCADE,
    item_id TEXT NOT NULL,
    row_index BIGINT NOT NULL,
    source_id TEXT,
    row_json TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    result_json TEXT,
    reported_at TEXT,
    completed_at TEXT,
    lease_holder TEXT,
    lease_expires_at TIMESTAMPTZ,
    PRIMARY KEY (job_id, item_id)
);
CREATE INDEX agent_job_items_by_status ON agent_job_items (job_id, status, row_index);
CREATE INDEX agent_job_items_by_row ON agent_job_items (job_id, row_index);
