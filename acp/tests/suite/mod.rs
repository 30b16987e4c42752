mod schema_drift;
