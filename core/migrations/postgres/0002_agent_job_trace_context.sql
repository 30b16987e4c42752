-- The span of the tool call that started a job (a W3C traceparent), so the turns of its
-- workers, on any host, continue that trace.
ALTER TABLE agent_jobs ADD COLUMN IF NOT EXISTS trace_context TEXT;
