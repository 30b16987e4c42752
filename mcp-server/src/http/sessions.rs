//! MCP sessions over Streamable HTTP (revisions 2024-11-05 to 2025-11-25): `initialize`
//! creates one with its own processor and conversations, named by the `Mcp-Session-Id`
//! header of every later request; `DELETE` ends it, and so does a long idle spell.
//!
//! Each POSTed request is answered on its own stream (or as one JSON body); a `GET` opens
//! the standalone stream, or, with `Last-Event-ID`, resumes any stream where the client
//! lost it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode};
use keel_protocol::{INVALID_REQUEST, JsonRpcMessage, SERVER_OVERLOADED};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::demux::{Demux, route_all};
use super::event_log::{EventLog, parse_event_id};
use super::wire::{
    Answer, LAST_EVENT_ID, PROTOCOL_VERSION, Present, SESSION_ID, accepted, answer_for,
    error_response, header_text, json_answer, plain, sse_response,
};
use crate::context::ServerSettings;
use crate::methods::MCP_SUPPORTED_PROTOCOL_VERSIONS;
use crate::transport::Incoming;
use crate::{ProcessorMode, RunningProcessor};

/// Sessions one server holds at once; beyond it `initialize` is refused as overloaded, so a
/// client that never ends its sessions cannot exhaust memory.
const MAX_SESSIONS: usize = 256;

/// How often idle sessions are looked for.
const IDLE_SWEEP: Duration = Duration::from_secs(30);

/// Every live session.
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    settings: ServerSettings,
    shutdown: CancellationToken,
    idle_timeout: Duration,
}

/// One client's session.
pub(crate) struct Session {
    incoming: mpsc::Sender<Incoming>,
    demux: Arc<Demux>,
    last_used: Mutex<Instant>,
    /// SSE connections open now.
    attached: Arc<AtomicUsize>,
    standalone_attached: Arc<AtomicBool>,
    /// Whether the standalone stream was ever attached (a re-attach skips what was sent).
    standalone_seen: AtomicBool,
    /// Ends the processor (and its tool calls) when the session ends.
    stop: CancellationToken,
    _processor: AbortOnDropHandle<()>,
    _router: AbortOnDropHandle<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section is a single map or clock operation.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    pub(crate) fn new(
        settings: ServerSettings,
        shutdown: CancellationToken,
        idle_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            map: Mutex::new(HashMap::new()),
            settings,
            shutdown,
            idle_timeout,
        })
    }

    /// Ends sessions idle for longer than the timeout, until shutdown.
    pub(crate) async fn sweep_idle(self: Arc<Self>) {
        let mut ticks = tokio::time::interval(IDLE_SWEEP);
        loop {
            tokio::select! {
                () = self.shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            let idle: Vec<String> = lock(&self.map)
                .iter()
                .filter(|(_, session)| session.idle_for() > self.idle_timeout)
                .map(|(id, _)| id.clone())
                .collect();
            for id in idle {
                tracing::info!(session = %id, "ending an idle session");
                self.end(&id);
            }
        }
        let all: Vec<String> = lock(&self.map).keys().cloned().collect();
        for id in all {
            self.end(&id);
        }
    }

    /// Ends session `id`; `false` if there is none.
    pub(crate) fn end(&self, id: &str) -> bool {
        let Some(session) = lock(&self.map).remove(id) else {
            return false;
        };
        session.stop.cancel();
        session.demux.close_all();
        true
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.map).get(id).cloned()
    }

    /// POST carrying `Mcp-Session-Id` (or an `initialize` without one).
    pub(crate) async fn post(&self, headers: &HeaderMap, message: JsonRpcMessage) -> Response {
        if let Err(refusal) = check_version_header(headers) {
            return *refusal;
        }
        let session_id = match header_text(headers, SESSION_ID) {
            Ok(id) => id.map(str::to_string),
            Err(problem) => return plain(StatusCode::BAD_REQUEST, problem),
        };
        let (session_id, session) = match session_id {
            Some(id) => match self.get(&id) {
                Some(session) => (id, session),
                None => return unknown_session(&id),
            },
            None => match &message {
                JsonRpcMessage::Request(request) if request.method == "initialize" => {
                    match self.create() {
                        Ok(created) => created,
                        Err(refusal) => return *refusal,
                    }
                }
                _ => {
                    return plain(
                        StatusCode::BAD_REQUEST,
                        "missing Mcp-Session-Id: start a session with `initialize`, or send \
                         MCP-Protocol-Version: 2026-07-28 for stateless requests",
                    );
                }
            },
        };
        session.touch();
        let mut extra = HeaderMap::new();
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            extra.insert(SESSION_ID, value);
        }
        let JsonRpcMessage::Request(request) = &message else {
            if let JsonRpcMessage::Response(response) = &message {
                session.demux.answered(&response.id);
            }
            if let JsonRpcMessage::Error(error) = &message
                && let Some(id) = &error.id
            {
                session.demux.answered(id);
            }
            if session
                .incoming
                .send(Incoming::Message(message))
                .await
                .is_err()
            {
                return plain(StatusCode::NOT_FOUND, "the session has ended");
            }
            return accepted();
        };
        let Some(answer) = answer_for(headers, request.method == "tools/call") else {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Accept must include application/json or text/event-stream",
            );
        };
        let log = match session.demux.open(&request.id) {
            Ok(log) => log,
            Err(_) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    Some(request.id.clone()),
                    INVALID_REQUEST,
                    format!(
                        "request id {} is still in use in this session; use a new id",
                        request.id
                    ),
                    None,
                );
            }
        };
        if session
            .incoming
            .send(Incoming::Message(message))
            .await
            .is_err()
        {
            return plain(StatusCode::NOT_FOUND, "the session has ended");
        }
        match answer {
            Answer::Stream => session.stream(&log, 0, true, extra, None),
            Answer::Json => json_answer(&log, identity(), false, extra).await,
        }
    }

    /// GET: the standalone stream, or a resumed one.
    pub(crate) fn get_stream(&self, headers: &HeaderMap) -> Response {
        let session_id = match header_text(headers, SESSION_ID) {
            Ok(Some(id)) => id.to_string(),
            Ok(None) => {
                return plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "GET needs an Mcp-Session-Id (stateless requests are POSTs)",
                );
            }
            Err(problem) => return plain(StatusCode::BAD_REQUEST, problem),
        };
        let Some(session) = self.get(&session_id) else {
            return unknown_session(&session_id);
        };
        if answer_for(headers, true) != Some(Answer::Stream) {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "a GET stream needs Accept: text/event-stream",
            );
        }
        session.touch();
        let last_event = match header_text(headers, LAST_EVENT_ID) {
            Ok(last) => last.map(str::to_string),
            Err(problem) => return plain(StatusCode::BAD_REQUEST, problem),
        };
        if let Some(last) = last_event {
            let resumed = parse_event_id(&last)
                .and_then(|(number, after)| Some((session.demux.stream(number)?, after)));
            return match resumed {
                Some((log, after)) => session.stream(&log, after, false, HeaderMap::new(), None),
                None => plain(
                    StatusCode::BAD_REQUEST,
                    format!("Last-Event-ID `{last}` names no stream this session still has"),
                ),
            };
        }
        if session.standalone_attached.swap(true, Ordering::AcqRel) {
            return plain(
                StatusCode::CONFLICT,
                "this session's standalone stream is already open",
            );
        }
        let log = session.demux.standalone();
        let after = if session.standalone_seen.swap(true, Ordering::AcqRel) {
            log.last_sequence()
        } else {
            0
        };
        let slot = Arc::clone(&session.standalone_attached);
        session.stream(&log, after, true, HeaderMap::new(), Some(slot))
    }

    /// DELETE: the client ends its session.
    pub(crate) fn delete(&self, headers: &HeaderMap) -> Response {
        match header_text(headers, SESSION_ID) {
            Ok(Some(id)) if self.end(id) => {
                tracing::info!(session = %id, "session ended by the client");
                super::wire::empty(StatusCode::NO_CONTENT)
            }
            Ok(Some(id)) => unknown_session(id),
            Ok(None) => plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "DELETE needs the Mcp-Session-Id of the session to end",
            ),
            Err(problem) => plain(StatusCode::BAD_REQUEST, problem),
        }
    }

    fn create(&self) -> Result<(String, Arc<Session>), Box<Response>> {
        let mut map = lock(&self.map);
        if map.len() >= MAX_SESSIONS {
            tracing::warn!("refusing a session: {MAX_SESSIONS} are open");
            return Err(Box::new(error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                SERVER_OVERLOADED,
                format!("server overloaded: {MAX_SESSIONS} sessions are open; end one with DELETE"),
                None,
            )));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let stop = self.shutdown.child_token();
        let running = RunningProcessor::start(
            self.settings.clone(),
            ProcessorMode::Handshake,
            stop.clone(),
        );
        let demux = Demux::new();
        let router = tokio::spawn(route_all(running.outgoing, Arc::clone(&demux)));
        let session = Arc::new(Session {
            incoming: running.incoming,
            demux,
            last_used: Mutex::new(Instant::now()),
            attached: Arc::new(AtomicUsize::new(0)),
            standalone_attached: Arc::new(AtomicBool::new(false)),
            standalone_seen: AtomicBool::new(false),
            stop,
            _processor: running.task,
            _router: AbortOnDropHandle::new(router),
        });
        map.insert(id.clone(), Arc::clone(&session));
        tracing::info!(session = %id, "session started");
        Ok((id, session))
    }
}

impl Session {
    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// How long nobody has used the session: zero while a stream is open or a call runs.
    fn idle_for(&self) -> Duration {
        if self.attached.load(Ordering::Acquire) > 0 || self.demux.has_open_calls() {
            return Duration::ZERO;
        }
        lock(&self.last_used).elapsed()
    }

    /// An SSE answer that counts as an open connection while the client holds it; `slot`
    /// (the standalone stream's) is freed when it closes.
    fn stream(
        &self,
        log: &Arc<EventLog>,
        after: u64,
        priming: bool,
        extra: HeaderMap,
        slot: Option<Arc<AtomicBool>>,
    ) -> Response {
        self.attached.fetch_add(1, Ordering::AcqRel);
        let attached = Arc::clone(&self.attached);
        let detach = Box::new(move || {
            attached.fetch_sub(1, Ordering::AcqRel);
            if let Some(slot) = slot {
                slot.store(false, Ordering::Release);
            }
        });
        sse_response(log, after, priming, identity(), extra, Some(detach))
    }
}

fn identity() -> Present {
    Arc::new(JsonRpcMessage::clone)
}

fn unknown_session(id: &str) -> Response {
    plain(
        StatusCode::NOT_FOUND,
        format!("no session `{id}`: it ended or never existed; start a new one with `initialize`"),
    )
}

/// A session request's `MCP-Protocol-Version`, when sent, must be a revision sessions use.
fn check_version_header(headers: &HeaderMap) -> Result<(), Box<Response>> {
    match header_text(headers, PROTOCOL_VERSION) {
        Ok(None) => Ok(()),
        Ok(Some(version)) if MCP_SUPPORTED_PROTOCOL_VERSIONS.contains(&version) => Ok(()),
        Ok(Some(version)) => Err(Box::new(plain(
            StatusCode::BAD_REQUEST,
            format!(
                "unsupported MCP-Protocol-Version `{version}`; sessions speak {}",
                MCP_SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            ),
        ))),
        Err(problem) => Err(Box::new(plain(StatusCode::BAD_REQUEST, problem))),
    }
}
