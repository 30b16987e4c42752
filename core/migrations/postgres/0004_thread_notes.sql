-- Small records kept beside a thread that every server reads and changes (a person's read
-- position): changed only when they still read what the writer last saw.
CREATE TABLE keel_thread_notes (
    thread_id TEXT NOT NULL REFERENCES keel_threads (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (thread_id, key)
);
