//! The JavaScript side of a code-mode cell: one QuickJS runtime on a thread of its own, with
//! nothing but the globals `exec` promises (`tools`, `text`, `image`, `store`, `load`,
//! `notify`, `exit`, `yield_control`, `setTimeout`, `clearTimeout`, `ALL_TOOLS`). The script
//! has no file system, network, process or console: everything it does beyond computing goes
//! out as a [`ScriptEvent`] to the host, which runs tool calls and answers with a
//! [`HostReply`]. Memory and stack are capped, and the host can stop the script at any time.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use rquickjs::function::Func;
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Exception, Function, Module, Object, Persistent,
    Promise, Runtime, Value, promise::PromiseState,
};
use tokio::sync::mpsc;

use super::script_protocol::{
    HostReply, NestedInput, NestedResult, ScriptEnd, ScriptEvent, ScriptStart,
};

/// The most memory one script's heap may take.
const MEMORY_LIMIT: usize = 256 * 1024 * 1024;
/// The most stack one script may take (the thread has more, for the engine's own frames).
const JS_STACK_LIMIT: usize = 4 * 1024 * 1024;
/// The thread's stack.
const THREAD_STACK: usize = 16 * 1024 * 1024;
/// The longest a script may run, waiting included; then it is stopped as failed.
const MAX_RUN_TIME: Duration = Duration::from_secs(30 * 60);

/// The host's end of a running script.
pub(super) struct ScriptHandle {
    /// What the script asks, in order; ends after [`ScriptEvent::Finished`].
    pub(super) events: mpsc::UnboundedReceiver<ScriptEvent>,
    replies: std_mpsc::Sender<HostReply>,
    stop: Arc<AtomicBool>,
}

/// Stops a script from anywhere.
#[derive(Clone)]
pub(super) struct ScriptStopper {
    replies: std_mpsc::Sender<HostReply>,
    stop: Arc<AtomicBool>,
}

impl ScriptStopper {
    /// Stops the script at its next instruction, or as soon as it waits.
    pub(super) fn terminate(&self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes a script waiting for an answer; the id is never a call's.
        let _ = self.replies.send(HostReply::ToolResult {
            id: u64::MAX,
            result: Err(String::new()),
        });
    }
}

impl ScriptHandle {
    /// Answers a tool call (ignored once the script is over).
    pub(super) fn reply(&self, reply: HostReply) {
        let _ = self.replies.send(reply);
    }

    /// A way to stop the script that outlives this handle's borrow.
    pub(super) fn stopper(&self) -> ScriptStopper {
        ScriptStopper {
            replies: self.replies.clone(),
            stop: self.stop.clone(),
        }
    }
}

impl Drop for ScriptHandle {
    fn drop(&mut self) {
        self.stopper().terminate();
    }
}

/// Starts `start` on a thread of its own.
pub(super) fn start(start: ScriptStart) -> std::io::Result<ScriptHandle> {
    let (events_tx, events) = mpsc::unbounded_channel();
    let (replies, replies_rx) = std_mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    std::thread::Builder::new()
        .name("keel-exec-cell".into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let end = run(start, &events_tx, &replies_rx, &thread_stop);
            let _ = events_tx.send(ScriptEvent::Finished(end));
        })?;
    Ok(ScriptHandle {
        events,
        replies,
        stop,
    })
}

/// The JavaScript half of the globals; the native half is installed by [`install`].
const PRELUDE: &str = r#"
(() => {
  const emit = globalThis.__keel_emit;
  const call = globalThis.__keel_call;
  const setTimer = globalThis.__keel_set_timeout;
  const clearTimer = globalThis.__keel_clear_timeout;
  const stored = JSON.parse(globalThis.__keel_stored);
  const toolList = JSON.parse(globalThis.__keel_tools);
  for (const name of ["__keel_emit", "__keel_call", "__keel_set_timeout", "__keel_clear_timeout", "__keel_stored", "__keel_tools"]) {
    delete globalThis[name];
  }
  const asText = (value) => {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    try {
      const json = JSON.stringify(value);
      return json === undefined ? String(value) : json;
    } catch (_) {
      return String(value);
    }
  };
  const imageUrl = (item) => {
    if (typeof item === "string") return item;
    if (item && typeof item.image_url === "string") return item.image_url;
    if (item && item.type === "image" && typeof item.data === "string") {
      return `data:${item.mimeType || "image/png"};base64,${item.data}`;
    }
    throw new TypeError("image() takes a data: URL, {image_url} or an MCP image content block");
  };
  const tools = {};
  for (const [name] of toolList) {
    tools[name] = (input) => call(name, input === undefined ? {} : input);
  }
  const define = (name, value) => Object.defineProperty(globalThis, name, { value, enumerable: false });
  define("tools", Object.freeze(tools));
  define("ALL_TOOLS", Object.freeze(toolList.map(([name, description]) => Object.freeze({ name, description }))));
  define("text", (value) => { emit("text", asText(value)); });
  define("image", (item) => { emit("image", imageUrl(item)); });
  define("notify", (value) => { emit("notify", asText(value)); });
  define("yield_control", () => { emit("yield", ""); });
  define("exit", () => { emit("exit", ""); throw new Error("exit() called"); });
  define("store", (key, value) => {
    if (typeof key !== "string") throw new TypeError("store() takes a string key");
    const json = JSON.stringify(value === undefined ? null : value);
    stored[key] = JSON.parse(json);
    emit("store", JSON.stringify([key, stored[key]]));
  });
  define("load", (key) => (Object.prototype.hasOwnProperty.call(stored, key) ? stored[key] : undefined));
  define("setTimeout", (callback, delay) => setTimer(callback, Number(delay) || 0));
  define("clearTimeout", (id) => { if (id !== undefined) clearTimer(Number(id)); });
})();
"#;

/// The script's state the native globals share.
struct Shared {
    events: mpsc::UnboundedSender<ScriptEvent>,
    next_call: u64,
    calls: HashMap<u64, (Persistent<Function<'static>>, Persistent<Function<'static>>)>,
    next_timer: u32,
    timers: BTreeMap<u32, (Instant, Persistent<Function<'static>>)>,
    exited: bool,
}

fn run(
    start: ScriptStart,
    events: &mpsc::UnboundedSender<ScriptEvent>,
    replies: &std_mpsc::Receiver<HostReply>,
    stop: &Arc<AtomicBool>,
) -> ScriptEnd {
    let deadline = Instant::now() + MAX_RUN_TIME;
    match run_until(start, events, replies, stop, deadline) {
        ScriptEnd::Completed => ScriptEnd::Completed,
        _ if Instant::now() >= deadline => ScriptEnd::Failed(format!(
            "the script ran for more than {} minutes and was stopped",
            MAX_RUN_TIME.as_secs() / 60
        )),
        end => end,
    }
}

fn run_until(
    start: ScriptStart,
    events: &mpsc::UnboundedSender<ScriptEvent>,
    replies: &std_mpsc::Receiver<HostReply>,
    stop: &Arc<AtomicBool>,
    deadline: Instant,
) -> ScriptEnd {
    let runtime = match Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => return ScriptEnd::Failed(format!("cannot start the script runtime: {err}")),
    };
    runtime.set_memory_limit(MEMORY_LIMIT);
    runtime.set_max_stack_size(JS_STACK_LIMIT);
    let shared = Rc::new(RefCell::new(Shared {
        events: events.clone(),
        next_call: 0,
        calls: HashMap::new(),
        next_timer: 0,
        timers: BTreeMap::new(),
        exited: false,
    }));
    let interrupt_stop = stop.clone();
    let interrupt_shared = shared.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        interrupt_stop.load(Ordering::SeqCst)
            || Instant::now() >= deadline
            || interrupt_shared
                .try_borrow()
                .is_ok_and(|shared| shared.exited)
    })));
    let context = match Context::full(&runtime) {
        Ok(context) => context,
        Err(err) => return ScriptEnd::Failed(format!("cannot start the script runtime: {err}")),
    };
    let module = context.with(|ctx| -> Result<Persistent<Promise<'static>>, String> {
        install(&ctx, &start, &shared).map_err(|err| describe(&ctx, err))?;
        let promise = Module::evaluate(ctx.clone(), "exec_main.mjs", start.source.as_str())
            .catch(&ctx)
            .map_err(|err| caught_text(err))?;
        Ok(Persistent::save(&ctx, promise))
    });
    let module = match module {
        Ok(module) => module,
        Err(error) => return ScriptEnd::Failed(error),
    };
    loop {
        // Run every ready job (continuations of settled promises).
        loop {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(_) => {
                    if stop.load(Ordering::SeqCst) {
                        return ScriptEnd::Terminated;
                    }
                    if shared.borrow().exited {
                        return ScriptEnd::Completed;
                    }
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            return ScriptEnd::Terminated;
        }
        if shared.borrow().exited {
            return ScriptEnd::Completed;
        }
        let state = context.with(|ctx| -> Result<Option<ScriptEnd>, String> {
            let promise = module
                .clone()
                .restore(&ctx)
                .map_err(|err| describe(&ctx, err))?;
            Ok(match promise.state() {
                PromiseState::Pending => None,
                PromiseState::Resolved => Some(ScriptEnd::Completed),
                PromiseState::Rejected => {
                    let error = promise
                        .result::<Value>()
                        .map(|result| result.catch(&ctx))
                        .and_then(Result::err)
                        .map_or_else(|| "the script failed".to_string(), caught_text);
                    Some(ScriptEnd::Failed(error))
                }
            })
        });
        match state {
            Ok(Some(end)) => {
                if stop.load(Ordering::SeqCst) {
                    return ScriptEnd::Terminated;
                }
                if shared.borrow().exited {
                    return ScriptEnd::Completed;
                }
                return end;
            }
            Ok(None) => {}
            Err(error) => return ScriptEnd::Failed(error),
        }
        // Pending: wait for an answer or the next timer.
        let (calls_waiting, next_timer) = {
            let shared = shared.borrow();
            (
                !shared.calls.is_empty(),
                shared.timers.values().map(|(due, _)| *due).min(),
            )
        };
        if !calls_waiting && next_timer.is_none() {
            return ScriptEnd::Failed(
                "the script awaits a promise that nothing will settle".to_string(),
            );
        }
        let wake = next_timer.map_or(deadline, |due| due.min(deadline));
        let reply = match replies.recv_timeout(wake.saturating_duration_since(Instant::now())) {
            Ok(reply) => Some(reply),
            Err(std_mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                return ScriptEnd::Terminated;
            }
            Err(std_mpsc::RecvTimeoutError::Timeout) => None,
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return ScriptEnd::Terminated,
        };
        if stop.load(Ordering::SeqCst) {
            return ScriptEnd::Terminated;
        }
        let settled = context.with(|ctx| match reply {
            Some(HostReply::ToolResult { id, result }) => settle(&ctx, &shared, id, result),
            None => fire_timers(&ctx, &shared),
        });
        if let Err(error) = settled {
            return ScriptEnd::Failed(error);
        }
    }
}

/// Installs the native globals, then the prelude that builds the public ones on them.
fn install<'js>(
    ctx: &Ctx<'js>,
    start: &ScriptStart,
    shared: &Rc<RefCell<Shared>>,
) -> rquickjs::Result<()> {
    let globals = ctx.globals();
    let emit_shared = shared.clone();
    globals.set(
        "__keel_emit",
        Func::from(move |kind: String, payload: String| {
            let mut shared = emit_shared.borrow_mut();
            if shared.exited {
                return;
            }
            let event = match kind.as_str() {
                "text" => ScriptEvent::Text(payload),
                "image" => ScriptEvent::Image(payload),
                "notify" => ScriptEvent::Notify(payload),
                "yield" => ScriptEvent::YieldControl,
                "store" => match serde_json::from_str::<(String, serde_json::Value)>(&payload) {
                    Ok((key, value)) => ScriptEvent::Store(key, value),
                    Err(_) => return,
                },
                "exit" => {
                    shared.exited = true;
                    return;
                }
                _ => return,
            };
            let _ = shared.events.send(event);
        }),
    )?;
    let call_shared = shared.clone();
    globals.set(
        "__keel_call",
        Func::from(
            move |ctx: Ctx<'js>,
                  name: String,
                  input: Value<'js>|
                  -> rquickjs::Result<Promise<'js>> {
                let input = match input.as_string() {
                    Some(text) => NestedInput::Text(text.to_string()?),
                    None => NestedInput::Json(
                        ctx.json_stringify(input)?
                            .map(|json| json.to_string())
                            .transpose()?
                            .unwrap_or_else(|| "{}".to_string()),
                    ),
                };
                let (promise, resolve, reject) = Promise::new(&ctx)?;
                let mut shared = call_shared.borrow_mut();
                let id = shared.next_call;
                shared.next_call += 1;
                shared.calls.insert(
                    id,
                    (
                        Persistent::save(&ctx, resolve),
                        Persistent::save(&ctx, reject),
                    ),
                );
                let _ = shared
                    .events
                    .send(ScriptEvent::ToolCall { id, name, input });
                Ok(promise)
            },
        ),
    )?;
    let timer_shared = shared.clone();
    globals.set(
        "__keel_set_timeout",
        Func::from(
            move |ctx: Ctx<'js>, callback: Function<'js>, delay: f64| -> u32 {
                let mut shared = timer_shared.borrow_mut();
                shared.next_timer += 1;
                let id = shared.next_timer;
                let delay = Duration::from_secs_f64((delay.max(0.0) / 1000.0).min(86_400.0));
                shared.timers.insert(
                    id,
                    (Instant::now() + delay, Persistent::save(&ctx, callback)),
                );
                id
            },
        ),
    )?;
    let clear_shared = shared.clone();
    globals.set(
        "__keel_clear_timeout",
        Func::from(move |id: f64| {
            clear_shared.borrow_mut().timers.remove(&(id as u32));
        }),
    )?;
    let tools: Vec<(&str, &str)> = start
        .tools
        .iter()
        .map(|(name, description)| (name.as_str(), description.as_str()))
        .collect();
    globals.set(
        "__keel_tools",
        serde_json::to_string(&tools).unwrap_or_else(|_| "[]".into()),
    )?;
    globals.set(
        "__keel_stored",
        serde_json::to_string(&start.stored).unwrap_or_else(|_| "{}".into()),
    )?;
    ctx.eval::<(), _>(PRELUDE)
}

/// Settles the promise of call `id` with its result.
fn settle(
    ctx: &Ctx<'_>,
    shared: &Rc<RefCell<Shared>>,
    id: u64,
    result: Result<NestedResult, String>,
) -> Result<(), String> {
    let Some((resolve, reject)) = shared.borrow_mut().calls.remove(&id) else {
        return Ok(());
    };
    let outcome = (|| -> rquickjs::Result<()> {
        match result {
            Ok(NestedResult::Text(text)) => resolve.restore(ctx)?.call::<_, ()>((text,)),
            Ok(NestedResult::Json(json)) => {
                let value = ctx.json_parse(json)?;
                resolve.restore(ctx)?.call::<_, ()>((value,))
            }
            Err(message) => {
                let error = Exception::from_message(ctx.clone(), &message)?;
                reject.restore(ctx)?.call::<_, ()>((error,))
            }
        }
    })();
    outcome.map_err(|err| describe(ctx, err))
}

/// Runs the callbacks of the timers that are due.
fn fire_timers(ctx: &Ctx<'_>, shared: &Rc<RefCell<Shared>>) -> Result<(), String> {
    let now = Instant::now();
    let due: Vec<Persistent<Function<'static>>> = {
        let mut shared = shared.borrow_mut();
        let ids: Vec<u32> = shared
            .timers
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter_map(|id| shared.timers.remove(&id).map(|(_, callback)| callback))
            .collect()
    };
    for callback in due {
        let called = callback
            .restore(ctx)
            .and_then(|callback| callback.call::<_, ()>(()))
            .catch(ctx);
        if let Err(err) = called {
            return Err(caught_text(err));
        }
    }
    Ok(())
}

/// An engine error as the model reads it.
fn describe(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    match err {
        rquickjs::Error::Exception => caught_text(CaughtError::from_error(ctx, err)),
        other => other.to_string(),
    }
}

/// A thrown value as the model reads it: `Name: message` and the stack, for errors.
fn caught_text(err: CaughtError<'_>) -> String {
    match err {
        CaughtError::Exception(exception) => {
            let object: &Object = exception.as_object();
            let name: String = object
                .get::<_, Option<String>>("name")
                .ok()
                .flatten()
                .unwrap_or_else(|| "Error".to_string());
            let message = exception.message().unwrap_or_default();
            let mut text = if message.is_empty() {
                name
            } else {
                format!("{name}: {message}")
            };
            if let Some(stack) = exception.stack() {
                let stack = stack.trim_end();
                if !stack.is_empty() {
                    text.push('\n');
                    text.push_str(stack);
                }
            }
            text
        }
        CaughtError::Value(value) => value
            .ctx()
            .json_stringify(value.clone())
            .ok()
            .flatten()
            .and_then(|json| json.to_string().ok())
            .unwrap_or_else(|| "a non-error value was thrown".to_string()),
        CaughtError::Error(err) => err.to_string(),
    }
}
