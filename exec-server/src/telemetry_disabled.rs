//! Built without the `otel` feature: processes are never traced.

/// Tracing stays off in this build.
pub(crate) fn install_from_env() {
    if std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
        || std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
    {
        tracing::warn!("otel: built without the `otel` feature; no spans are sent");
    }
}

/// Nothing to send.
pub(crate) async fn shutdown() {}

/// A process's span: none in this build.
pub(crate) struct ProcessSpan {
    _none: (),
}

impl ProcessSpan {
    /// Never a span in this build.
    pub(crate) fn start(
        _program: &str,
        _session: &str,
        _traceparent: Option<&str>,
    ) -> Option<Self> {
        None
    }

    /// Nothing to end.
    pub(crate) fn finish(self, _exit_code: Option<i32>) {}
}
