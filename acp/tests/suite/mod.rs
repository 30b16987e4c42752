mod schema_drift;
mod schema_drift_v2;
